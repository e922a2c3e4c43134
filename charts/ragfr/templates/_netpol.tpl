{{/* Helpers of networkpolicies.yaml: one NetworkPolicy object, and ports of external services. */}}

{{/* A NetworkPolicy: .name, .component (labels), .selector (matchLabels dict), .ingress / .egress (lists). */}}
{{- define "ragfr.netpol" }}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "ragfr.componentName" (dict "root" .root "component" .name) }}
  labels:
    {{- include "ragfr.labels" (dict "root" .root "component" .component) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- toYaml .selector | nindent 6 }}
  policyTypes:
    {{- if hasKey . "ingress" }}
    - Ingress
    {{- end }}
    {{- if hasKey . "egress" }}
    - Egress
    {{- end }}
  {{- if hasKey . "ingress" }}
  ingress: {{- toYaml .ingress | nindent 4 }}
  {{- end }}
  {{- if hasKey . "egress" }}
  egress: {{- toYaml .egress | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Port of a URL: explicit, else 443 for https, 80 for http, else .default. */}}
{{- define "ragfr.netpol.urlPort" -}}
{{- $u := urlParse .url -}}
{{- $hp := splitList ":" $u.host -}}
{{- if eq (len $hp) 2 -}}{{ last $hp }}{{- else if eq $u.scheme "https" -}}443{{- else if eq $u.scheme "http" -}}80{{- else -}}{{ .default }}{{- end -}}
{{- end -}}

{{/* Egress rule to something outside the cluster on one port: networkPolicy.externalTo, or anywhere. */}}
{{- define "ragfr.netpol.externalRule" -}}
{{- $rule := dict "ports" (list (dict "port" (int .port) "protocol" "TCP")) -}}
{{- with .root.Values.networkPolicy.externalTo }}{{ $_ := set $rule "to" . }}{{ end -}}
{{- toYaml (list $rule) -}}
{{- end -}}
