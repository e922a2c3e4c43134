{{/*
Open WebUI authentication, secure by default: sign-up closed after the first admin, authentication
never switched off, and an optional first admin from a Secret.
*/}}

{{/* Env names about authentication the chart decides; openwebui.env/extraEnv may not set them. */}}
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

