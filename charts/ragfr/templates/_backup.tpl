{{/* Backups (backup-*.yaml): checks, the S3 port for the NetworkPolicy, the set directory. */}}

{{- define "ragfr.backup.check" -}}
{{- $b := .Values.backup -}}
{{- if and $b.enabled (eq $b.target "s3") -}}
{{- if not (and $b.s3.endpoint $b.s3.bucket $b.s3.existingSecret) -}}
{{- fail "backup.target=s3 needs backup.s3.endpoint, backup.s3.bucket and backup.s3.existingSecret (keys access-key-id, secret-access-key)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* TCP port of the S3 endpoint: explicit in the URL, else 443 for https and 80 for http. */}}
{{- define "ragfr.backup.s3Port" -}}
{{- $u := urlParse .Values.backup.s3.endpoint -}}
{{- $hostport := splitList ":" $u.host -}}
{{- if eq (len $hostport) 2 -}}{{ last $hostport }}{{- else if eq $u.scheme "http" -}}80{{- else -}}443{{- end -}}
{{- end -}}
