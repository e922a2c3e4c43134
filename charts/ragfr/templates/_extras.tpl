{{/*
Escape hatches shared by the Open WebUI, Ollama and ragdb pods: extra env, pod metadata, probe timing,
runtimeClassName. They extend what the chart renders and never replace what it computes: computed env
names and the chart's label prefixes are refused, and probe overrides change timing, not handlers.
*/}}

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

{{/* A probe: the chart's default (YAML text) with the user's timing fields merged over it. */}}
{{- define "ragfr.extras.probe" -}}
{{- toYaml (mergeOverwrite (.default | fromYaml) (deepCopy (.override | default dict))) -}}
{{- end -}}

