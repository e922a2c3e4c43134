{{/*
Open WebUI's non-secret environment: files/openwebui-env.yaml (shared with `make up`), the user's
openwebui.env on top, then the values the chart computes, which nothing may override.
*/}}
{{- define "ragfr.openwebui.envMap" -}}
{{- $file := .Files.Get "files/openwebui-env.yaml" | fromYaml -}}
{{- /* A loop, not sprig's merge: merge treats "" as unset, so openwebui.env could not blank a file value. */}}
{{- $env := deepCopy $file -}}
{{- range $k, $val := .Values.openwebui.env }}
{{- $_ := set $env $k $val -}}
{{- end }}
{{- $_ := set $env "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH" (toString .Values.embedding.dims) -}}
{{- $_ := set $env "RAG_EMBEDDING_MODEL" .Values.embedding.model -}}
{{- $_ := set $env "OLLAMA_BASE_URL" (include "ragfr.ollama.url" .) -}}
{{- $_ := set $env "HF_HOME" "/opt/hf-cache" -}}
{{- $_ := set $env "SENTENCE_TRANSFORMERS_HOME" "/opt/hf-cache" -}}
{{- $_ := set $env "DATA_DIR" "/app/backend/data" -}}
{{- if .Values.openwebui.patch.enabled -}}
{{- $_ := set $env "PYTHONPATH" "/opt/ragfr/site" -}}
{{- end -}}
{{- if .Values.openwebui.metrics.enabled -}}
{{- $_ := set $env "RAGFR_METRICS_PORT" (toString .Values.openwebui.metrics.port) -}}
{{- end -}}
{{- with (include "ragfr.redis.url" .) -}}
{{- $_ := set $env "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $env "WEBSOCKET_MANAGER" "redis" -}}
{{- $_ := set $env "WEBSOCKET_REDIS_URL" . -}}
{{- $_ := set $env "REDIS_URL" . -}}
{{- end -}}
{{- if include "ragfr.redis.fromSecret" . -}}
{{- /* The URLs themselves come from redis.existingSecret (_redis.tpl), not this ConfigMap. */ -}}
{{- $_ := set $env "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $env "WEBSOCKET_MANAGER" "redis" -}}
{{- end -}}
{{- range $k, $val := $env }}
{{ $k }}: {{ toString $val | quote }}
{{- end }}
{{- end -}}

{{- define "ragfr.openwebui.secretName" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "openwebui")) .Values.openwebui.existingSecret -}}
{{- end -}}

{{/* Redis URL for websockets, empty when Redis is off. */}}
{{- define "ragfr.redis.url" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s:6379/0" (include "ragfr.componentName" (dict "root" . "component" "redis")) -}}
{{- else -}}
{{- .Values.redis.externalUrl -}}
{{- end -}}
{{- end -}}
