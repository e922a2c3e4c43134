{{/* Backups (backup-*.yaml): checks, and the name of the Secret that signs the sets. */}}

{{- define "ragfr.backup.check" -}}
{{- $b := .Values.backup -}}
{{- if and $b.enabled (eq $b.target "s3") -}}
{{- if not (and $b.s3.endpoint $b.s3.bucket $b.s3.existingSecret) -}}
{{- fail "backup.target=s3 needs backup.s3.endpoint, backup.s3.bucket and backup.s3.existingSecret (keys access-key-id, secret-access-key)" -}}
{{- end -}}
{{- if and (eq (urlParse $b.s3.endpoint).scheme "http") (not $b.s3.insecureEndpoint) -}}
{{- fail (printf "backup.s3.endpoint=%s is plain http: every dump would cross the network in clear text, to an endpoint nothing authenticates; use https:// (or, for an endpoint on a network you trust, set backup.s3.insecureEndpoint=true)" $b.s3.endpoint) -}}
{{- end -}}
{{- /* A key generated in the cluster dies with it, and the bucket outlives the cluster: the key must come
     from the operator, who keeps a copy outside the cluster (docs/runbooks/restore.md). */ -}}
{{- if not $b.integrity.existingSecret -}}
{{- fail (printf "backup.target=s3 needs backup.integrity.existingSecret: a Secret whose key %s (at least 32 characters, e.g. `openssl rand -hex 32`) signs each set's SHA256SUMS; keep a copy of it outside the cluster, a restore needs it" $b.integrity.keyName) -}}
{{- end -}}
{{- if and $b.s3.encryption.enabled (not $b.s3.encryption.existingSecret) -}}
{{- fail (printf "backup.target=s3 encrypts the sets (backup.s3.encryption.enabled, the default) with a passphrase: set backup.s3.encryption.existingSecret to a Secret whose key %s holds at least 32 characters (e.g. `openssl rand -hex 32`) and keep a copy of it outside the cluster, a restore needs it (or, to upload in clear, backup.s3.encryption.enabled=false)" $b.s3.encryption.keyName) -}}
{{- end -}}
{{- end -}}
{{- $c := .Values.database.cnpg.backup -}}
{{- if and $c.enabled (eq (urlParse $c.endpointURL).scheme "http") (not $c.insecureEndpoint) -}}
{{- fail (printf "database.cnpg.backup.endpointURL=%s is plain http: base backups and WAL would cross the network unencrypted; use https:// (or, for an endpoint on a network you trust, set database.cnpg.backup.insecureEndpoint=true)" $c.endpointURL) -}}
{{- end -}}
{{- if $c.enabled -}}
{{- if ne .Values.database.mode "cnpg" -}}
{{- fail (printf "database.cnpg.backup.enabled is the CloudNativePG operator's backup: it needs database.mode=cnpg (mode is %s; the pg_dump CronJob is backup.enabled)" .Values.database.mode) -}}
{{- end -}}
{{- if not (and $c.destinationPath $c.existingSecret) -}}
{{- fail "database.cnpg.backup.enabled needs database.cnpg.backup.destinationPath (s3://bucket/path) and database.cnpg.backup.existingSecret (keys access-key-id, secret-access-key)" -}}
{{- end -}}
{{- end -}}
{{- $r := .Values.database.cnpg.recovery -}}
{{- if $r.enabled -}}
{{- if not (and (eq .Values.database.mode "cnpg") $r.objectStore $r.serverName) -}}
{{- fail "database.cnpg.recovery.enabled needs database.mode=cnpg, database.cnpg.recovery.objectStore and database.cnpg.recovery.serverName (the dead cluster's ObjectStore and server name)" -}}
{{- end -}}
{{- if not $c.enabled -}}
{{- fail "database.cnpg.recovery.enabled needs database.cnpg.backup.enabled=true: the recovered cluster reads the ObjectStore and S3 egress that backup renders, and needs an archive of its own (set database.cnpg.backup.serverName to a new name)" -}}
{{- end -}}
{{- $archiveAs := default (include "ragfr.db.cnpgCluster" .) $c.serverName -}}
{{- if and $c.enabled (eq $r.objectStore (printf "%s-backup" (include "ragfr.db.cnpgCluster" .))) (eq $r.serverName $archiveAs) -}}
{{- fail (printf "database.cnpg.recovery reads the backup under server name %s that database.cnpg.backup would archive the new cluster into: set database.cnpg.backup.serverName to a new name (e.g. %s-2)" $archiveAs (include "ragfr.db.cnpgCluster" .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the key that signs each set's SHA256SUMS (SHA256SUMS.hmac). */}}
{{- define "ragfr.backup.integritySecret" -}}
{{- .Values.backup.integrity.existingSecret | default (include "ragfr.componentName" (dict "root" . "component" "backup-integrity")) -}}
{{- end -}}
