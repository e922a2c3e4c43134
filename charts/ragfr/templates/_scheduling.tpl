{{/*
Scheduling a workload's pods beyond nodeSelector/tolerations/affinity: <workload>.priorityClassName and
<workload>.topologySpreadConstraints (ragdb, ollama, openwebui, redis, migrations, backup). A constraint
without a labelSelector gets the workload's own selector labels, so
`- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}` spreads that
workload's pods and nothing else.
Arguments: root, values (the workload's values), component (its app.kubernetes.io/component).
*/}}
{{- define "ragfr.scheduling" -}}
{{- $out := dict -}}
{{- with .values.priorityClassName -}}
{{- $_ := set $out "priorityClassName" . -}}
{{- end -}}
{{- $selector := include "ragfr.selectorLabels" (dict "root" .root "component" .component) | fromYaml -}}
{{- $constraints := list -}}
{{- range .values.topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) -}}
{{- end -}}
{{- $constraints = append $constraints $c -}}
{{- end -}}
{{- with $constraints -}}
{{- $_ := set $out "topologySpreadConstraints" . -}}
{{- end -}}
{{- with $out -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}
