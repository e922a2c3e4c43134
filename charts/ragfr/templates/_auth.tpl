{{/*
Open WebUI authentication, secure by default: sign-up closed after the first admin, authentication
never switched off, and an optional first admin from a Secret.
*/}}

{{/* Env names about authentication the chart decides; openwebui.env/extraEnv may not set them. */}}
{{- define "ragfr.auth.check" -}}
{{- $w := .Values.openwebui -}}
{{- $auth := "" -}}
{{- if hasKey $w.env "WEBUI_AUTH" -}}{{- $auth = toString (index $w.env "WEBUI_AUTH") -}}{{- end -}}
{{- range $w.extraEnv -}}{{- if eq .name "WEBUI_AUTH" -}}{{- $auth = toString (.value | default "") -}}{{- end -}}{{- end -}}
{{- if and $auth (ne (lower $auth) "true") -}}
{{- fail (printf "openwebui WEBUI_AUTH=%s is refused: Open WebUI without authentication gives every visitor admin rights over the knowledge bases; remove it" $auth) -}}
{{- end -}}
{{- end -}}

{{/* env entries of the first admin (Open WebUI creates it at start when no user exists yet). */}}
{{- define "ragfr.auth.adminEnv" -}}
{{- with .Values.openwebui.admin.existingSecret }}
- name: WEBUI_ADMIN_EMAIL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: admin-email
- name: WEBUI_ADMIN_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: admin-password
- name: WEBUI_ADMIN_NAME
  value: {{ $.Values.openwebui.admin.name | quote }}
{{- end }}
{{- end -}}
