{{/* Facts about Open WebUI that several templates share. */}}

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
{{- /* The evidence gate fitted by `ragfr gate calibrate` (ragfr.retrieval.evidence_gate reads it as JSON). */ -}}
{{- with .Values.openwebui.gate.calibration -}}
{{- $_ := set $env "RAGFR_GATE_CALIBRATION" (toJson .) -}}
{{- end -}}
{{- /* Redis for websockets: the chart's, or redis.externalUrl; none when Redis is off. */ -}}
{{- $redisUrl := .Values.redis.externalUrl -}}
{{- if .Values.redis.enabled -}}
{{- $redisUrl = printf "redis://%s:6379/0" (include "ragfr.componentName" (dict "root" . "component" "redis")) -}}
{{- end -}}
{{- with $redisUrl -}}
{{- $_ := set $env "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $env "WEBSOCKET_MANAGER" "redis" -}}
{{- $_ := set $env "WEBSOCKET_REDIS_URL" . -}}
{{- $_ := set $env "REDIS_URL" . -}}
{{- end -}}
{{- if include "ragfr.redis.fromSecret" . -}}
{{- /* The URLs themselves come from redis.existingSecret (openwebui-deployment.yaml's env), not this ConfigMap. */ -}}
{{- $_ := set $env "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $env "WEBSOCKET_MANAGER" "redis" -}}
{{- end -}}
{{- range $k, $val := $env }}
{{ $k }}: {{ toString $val | quote }}
{{- end }}
{{- end -}}

{{/*
An external Redis for Open WebUI's websockets: redis.externalUrl (in the Open WebUI ConfigMap), or, when
the URL carries a password, redis.existingSecret (key redis.urlKey): WEBSOCKET_REDIS_URL and
REDIS_URL then come from that Secret by secretKeyRef and never reach a ConfigMap. The chart cannot read
the Secret's URL, so its NetworkPolicy opens redis.externalPort.
*/}}
{{- define "ragfr.redis.fromSecret" -}}
{{- if and (not .Values.redis.enabled) .Values.redis.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
openwebui.reranker.cache: the cross-encoder's download on a PVC instead of an emptyDir (open-webui/helm-charts
#250: every restart downloaded it again). reranker-cache.py skips the download when the pinned commit is there
and loads offline. "true" when the download goes to a PVC.
*/}}
{{- define "ragfr.rerankerCache.enabled" -}}
{{- $r := .Values.openwebui.reranker -}}
{{- if and $r.cache.enabled (eq $r.source "download") -}}true{{- end -}}
{{- end -}}
