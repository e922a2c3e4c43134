{{/* The Gateway API route (openwebui-httproute.yaml): what a route needs, and who may reach Open WebUI. */}}

{{- define "ragfr.httpRoute.check" -}}
{{- $r := .Values.openwebui.httpRoute -}}
{{- if and $r.enabled (not $r.parentRefs) -}}
{{- fail "openwebui.httpRoute.enabled=true needs openwebui.httpRoute.parentRefs: the Gateway (and listener) the route attaches to, e.g. [{name: shared, namespace: gateway-system, sectionName: https}]" -}}
{{- end -}}
{{- if and $r.networkPolicyFrom (not $r.enabled) -}}
{{- fail "openwebui.httpRoute.networkPolicyFrom is set but openwebui.httpRoute.enabled=false: add the peers to networkPolicy.openwebuiFrom, or enable the route" -}}
{{- end -}}
{{- end -}}
