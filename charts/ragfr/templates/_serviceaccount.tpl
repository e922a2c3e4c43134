{{/*
The pods' ServiceAccount: serviceAccount.create makes one (<fullname>, or serviceAccount.name) carrying
serviceAccount.annotations (e.g. a cloud workload identity); serviceAccount.name alone names an
existing one; neither keeps the namespace's default account. The token is never mounted: no pod of the
chart talks to the Kubernetes API.
*/}}
{{- define "ragfr.serviceAccountName" -}}
{{- $sa := .Values.serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "ragfr.fullname" .) $sa.name -}}
{{- else -}}
{{- $sa.name -}}
{{- end -}}
{{- end -}}

{{- define "ragfr.serviceAccount.check" -}}
{{- $sa := .Values.serviceAccount -}}
{{- if and $sa.annotations (not $sa.create) -}}
{{- fail "serviceAccount.annotations need serviceAccount.create=true (the chart annotates only an account it makes; annotate an existing one named in serviceAccount.name yourself)" -}}
{{- end -}}
{{- end -}}
