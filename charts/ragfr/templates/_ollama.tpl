{{/* Ollama's base URL as Open WebUI and the ragfr jobs see it. */}}
{{- define "ragfr.ollama.url" -}}
{{- if .Values.ollama.enabled -}}
{{- printf "http://%s:11434" (include "ragfr.componentName" (dict "root" . "component" "ollama")) -}}
{{- else -}}
{{- .Values.ollama.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* Models to provision: the embedding model always, then the chat model, any extras and extra embedding models. */}}
{{- define "ragfr.ollama.models" -}}
{{- $models := list .Values.embedding.model -}}
{{- with .Values.ollama.models.chat }}{{ $models = append $models . }}{{ end -}}
{{- range .Values.ollama.models.extra }}{{ $models = append $models . }}{{ end -}}
{{- range .Values.ollama.models.extraEmbedding }}{{ $models = append $models . }}{{ end -}}
{{- join " " (uniq $models) -}}
{{- end -}}

{{/*
The models Open WebUI's readiness and `helm test` require besides the embedding model, which they read from
Open WebUI's RAG_EMBEDDING_MODEL instead (an embedding migration's switch repoints that ConfigMap key and
restarts Open WebUI without a helm upgrade): the chat model, the extras and the extra embedding models, space
separated.
*/}}
{{- define "ragfr.ollama.otherModels" -}}
{{- $models := list -}}
{{- with .Values.ollama.models.chat }}{{ $models = append $models . }}{{ end -}}
{{- range .Values.ollama.models.extra }}{{ $models = append $models . }}{{ end -}}
{{- range .Values.ollama.models.extraEmbedding }}{{ $models = append $models . }}{{ end -}}
{{- join " " (uniq $models) -}}
{{- end -}}

