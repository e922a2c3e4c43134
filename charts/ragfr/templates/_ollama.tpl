{{/* Ollama's base URL as Open WebUI and the ragfr jobs see it. */}}
{{- define "ragfr.ollama.url" -}}
{{- if .Values.ollama.enabled -}}
{{- printf "http://%s:11434" (include "ragfr.componentName" (dict "root" . "component" "ollama")) -}}
{{- else -}}
{{- .Values.ollama.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* Models to provision: the embedding model always, then the chat model and any extras. */}}
{{- define "ragfr.ollama.models" -}}
{{- $models := list .Values.embedding.model -}}
{{- with .Values.ollama.models.chat }}{{ $models = append $models . }}{{ end -}}
{{- range .Values.ollama.models.extra }}{{ $models = append $models . }}{{ end -}}
{{- join " " (uniq $models) -}}
{{- end -}}
