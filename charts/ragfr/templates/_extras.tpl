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

{{/* Pod template metadata: chart labels + podLabels, then annotations (chart's, then podAnnotations). */}}
{{- define "ragfr.extras.podLabels" -}}
{{- with .podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ragfr.extras.podAnnotations" -}}
{{- with .podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* env entries appended after the chart's (Kubernetes lets a later entry win, hence checkEnv). */}}
{{- define "ragfr.extras.env" -}}
{{- with .extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ragfr.extras.envFrom" -}}
{{- with .extraEnvFrom }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A probe: the chart's default (YAML text) with the user's timing fields merged over it. */}}
{{- define "ragfr.extras.probe" -}}
{{- toYaml (mergeOverwrite (.default | fromYaml) (deepCopy (.override | default dict))) -}}
{{- end -}}

{{- define "ragfr.extras.runtimeClass" -}}
{{- with .runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- end -}}
