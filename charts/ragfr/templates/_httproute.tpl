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

{{/*
Peers admitted to Open WebUI's port: networkPolicy.openwebuiFrom plus the Gateway's pods. A Gateway proxies
from its own pods, so with openwebuiFrom restricted to an ingress controller the route would be dropped;
empty both: no `from`, anyone (as without a route).
*/}}
{{- define "ragfr.openwebui.ingressFrom" -}}
{{- $from := .Values.networkPolicy.openwebuiFrom -}}
{{- if .Values.openwebui.httpRoute.enabled -}}
{{- $from = concat $from .Values.openwebui.httpRoute.networkPolicyFrom -}}
{{- end -}}
{{- toYaml $from -}}
{{- end -}}
