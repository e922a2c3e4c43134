{{/* Facts about Open WebUI that several templates share. */}}

{{/*
The ONE list of the Open WebUI environment variables the chart computes, name -> {in, from}: `in: configmap`
for those ragfr.openwebui.envMap sets over files/openwebui-env.yaml and openwebui.env, `in: container` for those
the Deployment's env: sets (secrets, and the switches no extraEnvFrom may override). Every place reads it:
envMap sets no name it lacks, validate.yaml refuses each name in openwebui.extraEnv (and the configmap ones in
openwebui.env), files/openwebui-env.yaml's header points here, and tests/chart/test_openwebui_env.py renders
the chart and fails on a computed name missing here. A new computed variable: one line here, then set it.
*/}}
{{- define "ragfr.openwebui.computedEnv" -}}
PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH: {in: configmap, from: embedding.dims}
RAG_EMBEDDING_MODEL: {in: configmap, from: embedding.model}
OLLAMA_BASE_URL: {in: configmap, from: "ollama.enabled, ollama.externalUrl"}
HF_HOME: {in: configmap, from: "the reranker cache's mount"}
SENTENCE_TRANSFORMERS_HOME: {in: configmap, from: "the reranker cache's mount"}
DATA_DIR: {in: configmap, from: "the data volume's mount"}
PYTHONPATH: {in: configmap, from: openwebui.patch.enabled}
RAGFR_METRICS_PORT: {in: configmap, from: openwebui.metrics}
RAGFR_GATE_CALIBRATION: {in: configmap, from: openwebui.gate.calibration}
BYPASS_MODEL_ACCESS_CONTROL: {in: configmap, from: openwebui.analysts.useChatModels}
USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS: {in: configmap, from: openwebui.analysts.createKnowledgeBases}
USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_SHARING: {in: configmap, from: openwebui.analysts.shareKnowledgeWithGroups}
OLLAMA_API_CONFIGS: {in: configmap, from: "ollama.models.chat and extra, minus embedding.model (never extraEmbedding)"}
ENABLE_WEBSOCKET_SUPPORT: {in: configmap, from: "redis.*"}
WEBSOCKET_MANAGER: {in: configmap, from: "redis.*"}
WEBSOCKET_REDIS_URL: {in: configmap, from: "redis.*, or redis.existingSecret"}
REDIS_URL: {in: configmap, from: "redis.*, or redis.existingSecret"}
PGVECTOR_DB_URL: {in: container, from: "database.*"}
DATABASE_URL: {in: container, from: "database.*"}
PGPASSFILE: {in: container, from: "database.*, via the db-passfile init container"}
RAGFR_DB_PASSWORD: {in: container, from: "database.*, for db-passfile only"}
OPENWEBUI_DB_PASSWORD: {in: container, from: "database.*, for db-passfile only"}
PGPASSWORD: {in: container, from: "database.*, via the password file"}
WEBUI_SECRET_KEY: {in: container, from: openwebui.existingSecret}
WEBUI_AUTH: {in: container, from: "always true"}
ENABLE_SIGNUP: {in: container, from: openwebui.env.ENABLE_SIGNUP}
WEBUI_ADMIN_EMAIL: {in: container, from: openwebui.admin.existingSecret}
WEBUI_ADMIN_PASSWORD: {in: container, from: openwebui.admin.existingSecret}
WEBUI_ADMIN_NAME: {in: container, from: openwebui.admin.name}
{{- end -}}

{{/*
Open WebUI's non-secret environment: files/openwebui-env.yaml (shared with `make up`), the user's
openwebui.env on top, then the values the chart computes (ragfr.openwebui.computedEnv), which nothing may override.
*/}}
{{- define "ragfr.openwebui.envMap" -}}
{{- $file := .Files.Get "files/openwebui-env.yaml" | fromYaml -}}
{{- /* A loop, not sprig's merge: merge treats "" as unset, so openwebui.env could not blank a file value. */}}
{{- $env := deepCopy $file -}}
{{- range $k, $val := .Values.openwebui.env }}
{{- $_ := set $env $k $val -}}
{{- end }}
{{- $computed := dict -}}
{{- $_ := set $computed "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH" (toString .Values.embedding.dims) -}}
{{- $_ := set $computed "RAG_EMBEDDING_MODEL" .Values.embedding.model -}}
{{- $_ := set $computed "OLLAMA_BASE_URL" (include "ragfr.ollama.url" .) -}}
{{- $_ := set $computed "HF_HOME" "/opt/hf-cache" -}}
{{- $_ := set $computed "SENTENCE_TRANSFORMERS_HOME" "/opt/hf-cache" -}}
{{- $_ := set $computed "DATA_DIR" "/app/backend/data" -}}
{{- if .Values.openwebui.patch.enabled -}}
{{- $_ := set $computed "PYTHONPATH" "/opt/ragfr/site" -}}
{{- end -}}
{{- if .Values.openwebui.metrics.enabled -}}
{{- $_ := set $computed "RAGFR_METRICS_PORT" (toString .Values.openwebui.metrics.port) -}}
{{- end -}}
{{- /* The evidence gate fitted by `ragfr gate calibrate` (ragfr.gate.fitted reads it as JSON). */ -}}
{{- with .Values.openwebui.gate.calibration -}}
{{- $_ := set $computed "RAGFR_GATE_CALIBRATION" (toJson .) -}}
{{- end -}}
{{- range $k, $val := include "ragfr.openwebui.analystEnv" . | fromYaml -}}
{{- $_ := set $computed $k $val -}}
{{- end -}}
{{- /* Redis for websockets: the chart's, or redis.externalUrl; none when Redis is off. */ -}}
{{- $redisUrl := .Values.redis.externalUrl -}}
{{- if .Values.redis.enabled -}}
{{- $redisUrl = printf "redis://%s:6379/0" (include "ragfr.componentName" (dict "root" . "component" "redis")) -}}
{{- end -}}
{{- with $redisUrl -}}
{{- $_ := set $computed "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $computed "WEBSOCKET_MANAGER" "redis" -}}
{{- $_ := set $computed "WEBSOCKET_REDIS_URL" . -}}
{{- $_ := set $computed "REDIS_URL" . -}}
{{- end -}}
{{- if include "ragfr.redis.fromSecret" . -}}
{{- /* The URLs themselves come from redis.existingSecret (openwebui-deployment.yaml's env), not this ConfigMap. */ -}}
{{- $_ := set $computed "ENABLE_WEBSOCKET_SUPPORT" "true" -}}
{{- $_ := set $computed "WEBSOCKET_MANAGER" "redis" -}}
{{- end -}}
{{- $listed := include "ragfr.openwebui.computedEnv" . | fromYaml -}}
{{- range $k, $val := $computed -}}
{{- if ne (dig $k "in" "" $listed) "configmap" -}}
{{- fail (printf "chart bug: envMap computes %s, which ragfr.openwebui.computedEnv (_openwebui.tpl) does not list as in: configmap, so openwebui.extraEnv could override it" $k) -}}
{{- end -}}
{{- $_ := set $env $k $val -}}
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

{{/*
What the analysts (accounts the admin adds, role "user") may do from their first login (openwebui.analysts), and
the chat models Open WebUI lists: the Ollama connection's model_ids (OLLAMA_API_CONFIGS, index "0": the one
OLLAMA_BASE_URL), the release's chat models as Ollama's /api/tags names them, never the embedding model nor
ollama.models.extraEmbedding (an embedding migration's target, pulled before the switch). The same
computation for `make up` and the owui tests: tools/ragfr_tools/owui_settings.py (tests/chart/test_analysts.py
compares the two).
*/}}
{{- define "ragfr.openwebui.analystEnv" -}}
{{- $a := .Values.openwebui.analysts -}}
{{- $embedding := include "ragfr.ollamaName" .Values.embedding.model -}}
{{- $ids := list -}}
{{- range (prepend .Values.ollama.models.extra .Values.ollama.models.chat) -}}
{{- $name := include "ragfr.ollamaName" . -}}
{{- if and . (ne $name $embedding) -}}
{{- $ids = append $ids $name -}}
{{- end -}}
{{- end }}
BYPASS_MODEL_ACCESS_CONTROL: {{ toString $a.useChatModels | quote }}
USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS: {{ toString $a.createKnowledgeBases | quote }}
USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_SHARING: {{ toString $a.shareKnowledgeWithGroups | quote }}
{{- with $ids }}
OLLAMA_API_CONFIGS: {{ dict "0" (dict "enable" true "model_ids" .) | toJson | quote }}
{{- end }}
{{- end -}}

{{/* A model as Ollama's /api/tags names it: the tag always shown, ":latest" when none was given. */}}
{{- define "ragfr.ollamaName" -}}
{{- if contains ":" (last (splitList "/" .)) -}}{{ . }}{{- else -}}{{ printf "%s:latest" . }}{{- end -}}
{{- end -}}
