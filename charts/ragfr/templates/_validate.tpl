{{/*
Every refusal of the chart's values, run by validate.yaml in this order: cross-field rules the JSON schema
cannot express. Each failure is one sentence naming the values to change, so `helm install` stops before
anything reaches the cluster. A few refusals live where their value is computed: an image's tag and source
(ragfr.image, _helpers.tpl), ragdb.settings.maintenance_work_mem (ragdb-statefulset.yaml) and the `required`
values (database.external.*, openwebui.ingress.host).
*/}}

{{- define "ragfr.validate" -}}
{{- $v := .Values -}}
{{- if gt (int $v.embedding.dims) 2000 -}}
{{- fail (printf "embedding.dims=%v: pgvector's HNSW index supports at most 2000 dimensions for the vector type" $v.embedding.dims) -}}
{{- end -}}
{{- /* The ConfigMap names the chart computes (ragfr.openwebui.computedEnv) would silently win over openwebui.env;
     the container ones are checked where they are set (ragfr.auth.check: WEBUI_AUTH, ENABLE_SIGNUP). */ -}}
{{- range $key, $c := include "ragfr.openwebui.computedEnv" . | fromYaml -}}
{{- if and (eq $c.in "configmap") (hasKey $v.openwebui.env $key) -}}
{{- fail (printf "openwebui.env.%s is computed by the chart (from %s), which would override it: remove it" $key $c.from) -}}
{{- end -}}
{{- end -}}
{{- /* The roles the chart makes or alters (ragdb-roles.sh, CNPG managed.roles) must be roles of their own:
     ALTER ROLE ... NOSUPERUSER PASSWORD on postgres, the owner or Open WebUI's role would break them. */ -}}
{{- $taken := dict "postgres" "the superuser" $v.database.ragfr.user "database.ragfr.user (the owner)" $v.database.openwebui.user "database.openwebui.user" -}}
{{- range $path, $role := dict "database.ragfr.appUser" $v.database.ragfr.appUser "ragdb.metrics.user" $v.ragdb.metrics.user -}}
{{- if hasKey $taken $role -}}
{{- fail (printf "%s=%s is also %s: it must be a role of its own (the chart sets its password and privileges)" $path $role (get $taken $role)) -}}
{{- end -}}
{{- end -}}
{{- if eq $v.database.ragfr.appUser $v.ragdb.metrics.user -}}
{{- fail (printf "database.ragfr.appUser and ragdb.metrics.user are both %s: Open WebUI's role and the exporter's must differ" $v.ragdb.metrics.user) -}}
{{- end -}}
{{- $tls := $v.database.tls -}}
{{- if and $tls.certManager.enabled (not $tls.enabled) -}}
{{- fail "database.tls.certManager.enabled=true needs database.tls.enabled=true (the clients' verify-full goes with the certificate)" -}}
{{- end -}}
{{- if $tls.enabled -}}
{{- if and $tls.certManager.enabled (ne $v.database.mode "internal") -}}
{{- fail (printf "database.tls.certManager is for the chart's ragdb (database.mode=internal), not mode=%s: name the Secret holding the server's CA in database.tls.existingSecret" $v.database.mode) -}}
{{- end -}}
{{- if and $tls.certManager.enabled $tls.existingSecret -}}
{{- fail "database.tls: existingSecret and certManager.enabled are exclusive: ragdb's certificate comes from one of them" -}}
{{- end -}}
{{- if and $tls.certManager.enabled (not $tls.certManager.issuerRef.name) -}}
{{- fail "database.tls.certManager.enabled=true needs database.tls.certManager.issuerRef.name (an Issuer or ClusterIssuer of cert-manager)" -}}
{{- end -}}
{{- if and (eq $v.database.mode "internal") (not $tls.certManager.enabled) (not $tls.existingSecret) -}}
{{- fail "database.tls.enabled=true needs database.tls.existingSecret (a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt for the Service <release>-ragdb) or database.tls.certManager.enabled=true (docs/runbooks/database-tls.md)" -}}
{{- end -}}
{{- if and (eq $v.database.mode "external") (not $tls.existingSecret) -}}
{{- fail "database.tls.enabled=true with database.mode=external needs database.tls.existingSecret: a Secret whose ca.crt signed the server's certificate" -}}
{{- end -}}
{{- range $key := list "ssl" "ssl_cert_file" "ssl_key_file" "ssl_ca_file" "hba_file" -}}
{{- if hasKey $v.ragdb.settings $key -}}
{{- fail (printf "ragdb.settings.%s is set by database.tls (the certificate from its Secret, TLS required from other pods): remove it" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.redis.enabled $v.redis.externalUrl -}}
{{- fail "redis.enabled=true and redis.externalUrl are exclusive: use the chart's Redis or an external one" -}}
{{- end -}}
{{- if gt (int $v.openwebui.replicas) 1 -}}
{{- if not (or $v.redis.enabled $v.redis.externalUrl $v.redis.existingSecret) -}}
{{- fail (printf "openwebui.replicas=%v needs Redis for websockets shared between replicas: set redis.enabled=true, redis.externalUrl or redis.existingSecret" $v.openwebui.replicas) -}}
{{- end -}}
{{- if not (or $v.openwebui.persistence.existingClaim (has "ReadWriteMany" $v.openwebui.persistence.accessModes)) -}}
{{- fail (printf "openwebui.replicas=%v share one data volume (uploads): set openwebui.persistence.accessModes to [ReadWriteMany] or give an existingClaim that is" $v.openwebui.replicas) -}}
{{- end -}}
{{- end -}}
{{- if and (not $v.ollama.enabled) (not $v.ollama.externalUrl) -}}
{{- fail "ollama.enabled=false needs ollama.externalUrl (the Ollama serving embeddings and chat)" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "download") (not $v.openwebui.reranker.revision) (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL -}}
{{- fail "openwebui.reranker.source=download needs openwebui.reranker.revision: the Hugging Face commit sha of RAG_RERANKING_MODEL to fetch (docs/reference/reranker.md, \"The reranker\")" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "pvc") (not $v.openwebui.reranker.existingClaim) -}}
{{- fail "openwebui.reranker.source=pvc needs openwebui.reranker.existingClaim (a volume holding the Hugging Face cache)" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "image") (not $v.openwebui.reranker.image.repository) -}}
{{- fail "openwebui.reranker.source=image needs openwebui.reranker.image.repository (the image holding the Hugging Face cache)" -}}
{{- end -}}
{{- /* A reranker source or cache without a model would do nothing: the operator meant to run one. */}}
{{- if and (or (ne $v.openwebui.reranker.source "download") $v.openwebui.reranker.cache.enabled) (not (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL) -}}
{{- fail (printf "openwebui.reranker.source=%s%s configures a cross-encoder, but none is named: the chart runs none by default (docs/retrieval-quality.md, \"Cross-encoder\"); set openwebui.env.RAG_RERANKING_MODEL to the model to run, or remove these settings" $v.openwebui.reranker.source (ternary " with openwebui.reranker.cache.enabled" "" $v.openwebui.reranker.cache.enabled)) -}}
{{- end -}}
{{- if $v.openwebui.patch.enabled -}}
{{- $manifest := .Files.Get "files/open-webui-patch-manifest.json" | fromJson -}}
{{- $want := toString (get $manifest "open_webui_version") -}}
{{- if not $want -}}
{{- fail "files/open-webui-patch-manifest.json (a link to patches/open-webui/manifest.json) is missing from the chart: package it from a checkout" -}}
{{- end -}}
{{- /* The tag part is checked; a digest after it (v0.12.4@sha256:...) pins that version's image. A bare digest
     does not say which version it is: refused while the patch is on. */ -}}
{{- $full := toString $v.openwebui.image.tag -}}
{{- $tag := include "ragfr.imageTag" $full -}}
{{- /* "latest" has its own message (ragfr.image). */ -}}
{{- if and (ne $tag "latest") (not (regexMatch (printf "^v?%s(-[A-Za-z0-9._]+)?$" (replace "." "\\." $want)) $tag)) -}}
{{- fail (printf "openwebui.image.tag=%s is not Open WebUI %s, the only version the French patch applies to (patches/open-webui/manifest.json): use tag v%s (or v%s@sha256:<digest>) or set openwebui.patch.enabled=false" $full $want $want $want) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.database.mode "cnpg") (ne $v.database.ragfr.user $v.database.openwebui.user) -}}
{{- fail "database.mode=cnpg: the CloudNativePG owner role owns both databases, so database.openwebui.user must equal database.ragfr.user" -}}
{{- end -}}
{{- end -}}

{{/*
Every Ollama model reference must be pinned by tag, like images: "name" alone or "name:latest" is
whatever the registry serves on the day of the pull, so two pods (or a restore) could embed differently.
*/}}
{{- define "ragfr.ollama.checkPinned" -}}
{{- $refs := list (dict "key" "embedding.model" "ref" .Values.embedding.model) -}}
{{- with .Values.ollama.models.chat }}{{ $refs = append $refs (dict "key" "ollama.models.chat" "ref" .) }}{{ end -}}
{{- range .Values.ollama.models.extra }}{{ $refs = append $refs (dict "key" "ollama.models.extra" "ref" .) }}{{ end -}}
{{- range .Values.ollama.models.extraEmbedding }}{{ $refs = append $refs (dict "key" "ollama.models.extraEmbedding" "ref" .) }}{{ end -}}
{{- range $refs -}}
{{- $parts := splitList ":" .ref -}}
{{- if or (ne (len $parts) 2) (eq (last $parts) "latest") -}}
{{- fail (printf `%s=%s: Ollama models must be pinned by tag (name:tag, e.g. bge-m3:567m); an untagged name or "latest" is not allowed` .key .ref) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Open WebUI authentication, secure by default: sign-up closed after the first admin, authentication
never switched off, and an optional first admin from a Secret.
Env names about authentication the chart decides; openwebui.env/extraEnv may not set them.
*/}}
{{- define "ragfr.auth.check" -}}
{{- $w := .Values.openwebui -}}
{{- $auth := "" -}}
{{- if hasKey $w.env "WEBUI_AUTH" -}}{{- $auth = toString (index $w.env "WEBUI_AUTH") -}}{{- end -}}
{{- if and (hasKey $w.env "WEBUI_AUTH") (ne (lower $auth) "true") -}}
{{- fail (printf "openwebui WEBUI_AUTH=%s is refused: Open WebUI without authentication gives every visitor admin rights over the knowledge bases; remove it" $auth) -}}
{{- end -}}
{{- /* extraEnv goes into the container's env, where it would override the chart's WEBUI_AUTH=true: refused in
     every form, an empty value (Open WebUI reads "" as false) and a valueFrom the chart cannot read included. */ -}}
{{- range $w.extraEnv -}}
{{- if eq .name "WEBUI_AUTH" -}}
{{- if .valueFrom -}}
{{- fail "openwebui.extraEnv: WEBUI_AUTH from valueFrom is refused: the chart cannot check a value it does not see, and Open WebUI without authentication gives every visitor admin rights; remove it (the chart sets WEBUI_AUTH=true)" -}}
{{- end -}}
{{- $v := toString (.value | default "") -}}
{{- if ne (lower $v) "true" -}}
{{- fail (printf "openwebui WEBUI_AUTH=%s is refused: Open WebUI without authentication gives every visitor admin rights over the knowledge bases; remove it" $v) -}}
{{- end -}}
{{- fail "openwebui.extraEnv: WEBUI_AUTH is set to true by the chart; remove it" -}}
{{- end -}}
{{- end -}}
{{- /* ENABLE_SIGNUP is in the container's env too (openwebui-deployment.yaml): an extraEnv entry would duplicate it there. */ -}}
{{- range $w.extraEnv -}}
{{- if eq .name "ENABLE_SIGNUP" -}}
{{- fail "openwebui.extraEnv: ENABLE_SIGNUP is set by the chart (false, from files/openwebui-env.yaml); to open sign-up knowingly, set openwebui.env.ENABLE_SIGNUP instead" -}}
{{- end -}}
{{- end -}}
{{- /* Behind an ingress or a Gateway, whoever reaches Open WebUI first while no user exists becomes its admin. */ -}}
{{- $a := $w.admin -}}
{{- if and $w.ingress.enabled (not $a.existingSecret) (not $a.allowFirstSignup) -}}
{{- fail "openwebui.ingress.enabled=true without openwebui.admin.existingSecret: the first visitor to reach Open WebUI through the ingress would become its admin; create a Secret with keys admin-email and admin-password and set openwebui.admin.existingSecret (or, knowingly, openwebui.admin.allowFirstSignup=true and sign up before anyone else)" -}}
{{- end -}}
{{- if and $w.httpRoute.enabled (not $a.existingSecret) (not $a.allowFirstSignup) -}}
{{- fail "openwebui.httpRoute.enabled=true without openwebui.admin.existingSecret: the first visitor to reach Open WebUI through the Gateway would become its admin; create a Secret with keys admin-email and admin-password and set openwebui.admin.existingSecret (or, knowingly, openwebui.admin.allowFirstSignup=true and sign up before anyone else)" -}}
{{- end -}}
{{- /* A LoadBalancer or NodePort Service opens the port on the nodes (k3s's ServiceLB: on every node): the same
     first-visitor risk, from the whole LAN. */ -}}
{{- if and (has $w.service.type (list "LoadBalancer" "NodePort")) (not $a.existingSecret) (not $a.allowFirstSignup) -}}
{{- fail (printf "openwebui.service.type=%s without openwebui.admin.existingSecret: the Service is reachable from outside the cluster and the first visitor to reach Open WebUI would become its admin; create a Secret with keys admin-email and admin-password and set openwebui.admin.existingSecret (or, knowingly, openwebui.admin.allowFirstSignup=true and sign up before anyone else)" $w.service.type) -}}
{{- end -}}
{{- end -}}

{{/* The escape hatches (podLabels, extraEnv of the Open WebUI, Ollama and ragdb pods) extend what the chart
     renders and never replace what it computes: the chart's label prefixes and computed env names are refused. */}}
{{/* Label prefixes the chart's selectors and NetworkPolicies rely on. */}}
{{- define "ragfr.extras.reservedLabel" -}}
{{- if or (hasPrefix "app.kubernetes.io/" .) (hasPrefix "helm.sh/" .) (hasPrefix "ragfr.io/" .) -}}true{{- end -}}
{{- end -}}

{{/* Fails on podLabels that would take over a chart label (selectors, NetworkPolicy peers). */}}
{{- define "ragfr.extras.checkLabels" -}}
{{- range $k, $_ := .labels -}}
{{- if include "ragfr.extras.reservedLabel" $k -}}
{{- fail (printf "%s.podLabels.%s: labels under app.kubernetes.io/, helm.sh/ and ragfr.io/ are the chart's (selectors, NetworkPolicies); use another key" $.where $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Fails on extraEnv entries naming a variable the chart computes (reserved: a list of names). */}}
{{- define "ragfr.extras.checkEnv" -}}
{{- range .env -}}
{{- if has .name $.reserved -}}
{{- fail (printf "%s.extraEnv: %s is computed by the chart; set the value it is computed from instead" $.where .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Backups: the pg_dump CronJob's (backup.*) and CloudNativePG's own (database.cnpg.backup, .recovery). */}}
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

{{/* The metrics endpoints, their monitor and the PrometheusRule (docs/runbooks/monitoring.md). */}}
{{- define "ragfr.metrics.check" -}}
{{- $v := .Values -}}
{{- if $v.openwebui.metrics.enabled -}}
{{- if not $v.openwebui.patch.enabled -}}
{{- fail "openwebui.metrics.enabled=true needs openwebui.patch.enabled=true: ragfr's patch is what starts the metrics endpoint inside Open WebUI" -}}
{{- end -}}
{{- if eq (int $v.openwebui.metrics.port) 8080 -}}
{{- fail "openwebui.metrics.port=8080 is Open WebUI's own port: choose another (default 9464)" -}}
{{- end -}}
{{- end -}}
{{- if and $v.ragdb.metrics.enabled (ne $v.database.mode "internal") -}}
{{- fail (printf "ragdb.metrics.enabled=true needs database.mode=internal (the exporter is a sidecar of the chart's ragdb); with database.mode=%s monitor the database where it runs (docs/runbooks/monitoring.md)" $v.database.mode) -}}
{{- end -}}
{{- if and $v.ragdb.metrics.enabled (eq (int $v.ragdb.metrics.port) 5432) -}}
{{- fail "ragdb.metrics.port=5432 is PostgreSQL's own port: choose another (default 9187)" -}}
{{- end -}}
{{- if and (or $v.metrics.serviceMonitor.enabled $v.metrics.prometheusRule.enabled) (not (or $v.openwebui.metrics.enabled $v.ragdb.metrics.enabled)) -}}
{{- fail "metrics.serviceMonitor/prometheusRule need an endpoint to scrape: set openwebui.metrics.enabled=true and/or ragdb.metrics.enabled=true" -}}
{{- end -}}
{{- end -}}

{{/*
Open WebUI's Service as other charts shape it: openwebui.service.annotations (a LoadBalancer's address
pool, external-dns...) and openwebui.service.nodePort, the node port of the http port when the type is
NodePort or LoadBalancer (0: Kubernetes picks one).
*/}}
{{- define "ragfr.service.check" -}}
{{- $s := .Values.openwebui.service -}}
{{- if and $s.nodePort (eq $s.type "ClusterIP") -}}
{{- fail (printf "openwebui.service.nodePort=%v needs openwebui.service.type=NodePort or LoadBalancer (a ClusterIP Service has no node port)" $s.nodePort) -}}
{{- end -}}
{{- end -}}

{{/* The chart annotates only a ServiceAccount it makes (ragfr.serviceAccountName, _helpers.tpl). */}}
{{- define "ragfr.serviceAccount.check" -}}
{{- $sa := .Values.serviceAccount -}}
{{- if and $sa.annotations (not $sa.create) -}}
{{- fail "serviceAccount.annotations need serviceAccount.create=true (the chart annotates only an account it makes; annotate an existing one named in serviceAccount.name yourself)" -}}
{{- end -}}
{{- end -}}

{{/*
Open WebUI's extra volumes, mounts and init containers (openwebui.extraVolumes, .extraVolumeMounts,
.extraInitContainers), added after the chart's own: a CA bundle, branding files, a sidecar's socket...
The chart's volume names, init container names and mount paths stay the chart's, and a mount names one of
the extra volumes: each refusal names the value to change.
*/}}
{{- define "ragfr.extraVolumes.check" -}}
{{- $w := .Values.openwebui -}}
{{- $chartVolumes := list "data" "hf-cache" "owui-patched" "ragfr-site" "db-credentials" "tmp" "ragfr-scripts" "db-ca" -}}
{{- $extra := list -}}
{{- range $i, $v := $w.extraVolumes -}}
{{- if has $v.name $chartVolumes -}}
{{- fail (printf "openwebui.extraVolumes[%d].name=%s is a volume of the chart (%s): choose another name" $i $v.name (join ", " $chartVolumes)) -}}
{{- end -}}
{{- if has $v.name $extra -}}
{{- fail (printf "openwebui.extraVolumes[%d].name=%s is listed twice" $i $v.name) -}}
{{- end -}}
{{- $extra = append $extra $v.name -}}
{{- end -}}
{{- $chartPaths := list "/app/backend/data" "/opt/hf-cache" "/tmp" "/run/ragfr-db" "/opt/ragfr/site" -}}
{{- range $i, $m := $w.extraVolumeMounts -}}
{{- if not (has $m.name $extra) -}}
{{- fail (printf "openwebui.extraVolumeMounts[%d].name=%s is not in openwebui.extraVolumes: add the volume there" $i $m.name) -}}
{{- end -}}
{{- if or (has (trimSuffix "/" $m.mountPath) $chartPaths) (hasPrefix (printf "%s/" $w.patch.backendDir) $m.mountPath) -}}
{{- fail (printf "openwebui.extraVolumeMounts[%d].mountPath=%s is where the chart mounts its own volumes (%s, and the patched files under %s): choose another path" $i $m.mountPath (join ", " $chartPaths) $w.patch.backendDir) -}}
{{- end -}}
{{- end -}}
{{- $chartInits := list -}}
{{- range (include "ragfr.openwebui.initContainers" . | fromYamlArray) -}}
{{- $chartInits = append $chartInits .name -}}
{{- end -}}
{{- range $i, $c := $w.extraInitContainers -}}
{{- if has $c.name $chartInits -}}
{{- fail (printf "openwebui.extraInitContainers[%d].name=%s is an init container of the chart: choose another name" $i $c.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* An external Redis's URL is in the values or in a Secret; the chart's Redis excludes both. */}}
{{- define "ragfr.redis.check" -}}
{{- $r := .Values.redis -}}
{{- if and $r.existingSecret $r.externalUrl -}}
{{- fail "redis.externalUrl and redis.existingSecret are exclusive: the external Redis URL is in the values or in the Secret" -}}
{{- end -}}
{{- if and $r.enabled $r.existingSecret -}}
{{- fail "redis.enabled=true and redis.existingSecret are exclusive: use the chart's Redis or an external one" -}}
{{- end -}}
{{- end -}}

{{/* The Gateway API route (openwebui-httproute.yaml): what a route needs. */}}
{{- define "ragfr.httpRoute.check" -}}
{{- $r := .Values.openwebui.httpRoute -}}
{{- if and $r.enabled (not $r.parentRefs) -}}
{{- fail "openwebui.httpRoute.enabled=true needs openwebui.httpRoute.parentRefs: the Gateway (and listener) the route attaches to, e.g. [{name: shared, namespace: gateway-system, sectionName: https}]" -}}
{{- end -}}
{{- if and $r.networkPolicyFrom (not $r.enabled) -}}
{{- fail "openwebui.httpRoute.networkPolicyFrom is set but openwebui.httpRoute.enabled=false: add the peers to networkPolicy.openwebuiFrom, or enable the route" -}}
{{- end -}}
{{- end -}}

{{/* openwebui.reranker.cache: a PVC only for a download, shared only by a volume every replica can mount. */}}
{{- define "ragfr.rerankerCache.check" -}}
{{- $w := .Values.openwebui -}}
{{- $c := $w.reranker.cache -}}
{{- if and $c.enabled (ne $w.reranker.source "download") -}}
{{- fail (printf "openwebui.reranker.cache.enabled=true needs openwebui.reranker.source=download (source=%s downloads nothing: pvc reads existingClaim, image copies from the image)" $w.reranker.source) -}}
{{- end -}}
{{- if and (include "ragfr.rerankerCache.enabled" .) (gt (int $w.replicas) 1) (not $c.existingClaim) (not (has "ReadWriteMany" $c.accessModes)) -}}
{{- fail (printf "openwebui.replicas=%v share the reranker cache, which a ReadWriteOnce volume cannot be on several nodes: set openwebui.reranker.cache.accessModes to [ReadWriteMany] (Longhorn, NFS) or give an existingClaim every node can mount" $w.replicas) -}}
{{- end -}}
{{- end -}}

{{/* openwebui.gate.calibration: fitted on the features this version computes (files/gate-features.json, which
     tests/chart/test_gate_calibration.py keeps equal to ragfr.gate.features.FEATURES). Another list's
     coefficients mean nothing here: a pod given one anyway falls back to the shipped gate and says so. */}}
{{- define "ragfr.gate.check" -}}
{{- with .Values.openwebui.gate.calibration -}}
{{- $want := $.Files.Get "files/gate-features.json" | fromJsonArray -}}
{{- if not $want -}}
{{- fail "files/gate-features.json is missing from the chart: package it from a checkout" -}}
{{- end -}}
{{- if ne (toJson .features) (toJson $want) -}}
{{- fail "openwebui.gate.calibration was fitted on another feature list than this version of ragfr computes: refit with `ragfr gate calibrate` (docs/runbooks/gate-calibration.md) and copy the openwebui.gate.calibration it writes into my-values.yaml" -}}
{{- end -}}
{{- end -}}
{{- end -}}
