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

{{/*
Init containers, in order: wait for the ragfr schema (as the owner), then for Open WebUI's role's grants; write the database password file; copy the stock package out of the stock image;
patch it (owui-init); make the reranker loadable offline.
*/}}
{{- define "ragfr.openwebui.initContainers" -}}
{{- $w := .Values.openwebui -}}
- name: wait-for-schema
  # Open WebUI must not start before the ragfr schema exists: it would create document_chunk itself,
  # without the French columns and triggers. `ragfr migrate --wait` polls until every migration the
  # image knows is recorded; it applies nothing. Then it refuses to let Open WebUI start on another
  # embedding space than the database's (stale values after an embedding migration): the model and
  # width come from the same ConfigMap Open WebUI reads. The URL comes from the environment, never argv.
  # It connects as the owner: `ragfr embeddings k8s` borrows this container (image, env) for its Job.
  image: {{ include "ragfr.image" (dict "root" . "image" .Values.migrations.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" .Values.migrations.image) }}
  command: ["ragfr", "migrate"]
  args: ["--wait", "--timeout", {{ .Values.migrations.waitTimeoutSeconds | quote }}, "--embedding-model", "ollama:$(RAG_EMBEDDING_MODEL)", "--dims", "$(PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH)"]
  env:
    {{- include "ragfr.db.urlEnv" (dict "root" . "db" "ragfr" "urlVar" "DATABASE_URL") | nindent 4 }}
    {{- range $key := list "RAG_EMBEDDING_MODEL" "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH" }}
    - name: {{ $key }}
      valueFrom:
        configMapKeyRef:
          name: {{ include "ragfr.componentName" (dict "root" $ "component" "openwebui-env") }}
          key: {{ $key }}
    {{- end }}
    - name: HOME
      value: /tmp
  {{- include "ragfr.smallContainer" . | nindent 2 }}
{{- if $w.patch.enabled }}
- name: wait-for-grants
  # Then as Open WebUI's own role (database.ragfr.appUser): it may read the schema only once the migrations
  # Job has granted it (its last step, one transaction), so Open WebUI never starts into "permission denied".
  # Without the patch Open WebUI connects as the owner (ragfr.db.openwebuiVectorDb): nothing to wait for.
  image: {{ include "ragfr.image" (dict "root" . "image" .Values.migrations.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" .Values.migrations.image) }}
  command: ["ragfr", "migrate"]
  args: ["--wait", "--timeout", {{ .Values.migrations.waitTimeoutSeconds | quote }}]
  env:
    {{- include "ragfr.db.urlEnv" (dict "root" . "db" "app" "urlVar" "DATABASE_URL") | nindent 4 }}
    - name: HOME
      value: /tmp
  {{- include "ragfr.smallContainer" . | nindent 2 }}
{{- end }}
{{ include "ragfr.db.passfileContainer" . }}
{{- if $w.patch.enabled }}
- name: copy-stock-openwebui
  # The stock image is the only source of the pristine files; an init container cannot reach another
  # image's filesystem, so this one (same image) copies the package into a shared emptyDir.
  image: {{ include "ragfr.image" (dict "root" . "image" $w.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" $w.image) }}
  command: ["cp", "-R", "{{ $w.patch.backendDir }}/open_webui", "/patched/"]
  resources:
    requests: {cpu: 10m, memory: 32Mi}
    limits: {memory: 128Mi}
  securityContext:
    {{- toYaml .Values.jobSecurity.securityContext | nindent 4 }}
    runAsNonRoot: true
    runAsUser: {{ .Values.jobSecurity.podSecurityContext.runAsUser }}
  volumeMounts:
    - name: owui-patched
      mountPath: /patched
- name: apply-french-patch
  image: {{ include "ragfr.image" (dict "root" . "image" $w.patch.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" $w.patch.image) }}
  command: ["python", "/ragfr-scripts/apply-patch.py"]
  env:
    - name: PATCH_TARGET
      value: /patched
    - name: PATCH_FILES
      value: {{ join " " $w.patch.files | quote }}
    - name: PATCH_APPLY
      value: {{ $w.patch.applyCommand | quote }}
    - name: OPENWEBUI_VERSION
      value: {{ include "ragfr.imageTag" $w.image.tag | quote }}
    - name: SITE_SOURCE
      value: {{ $w.patch.siteDir | quote }}
    - name: SITE_TARGET
      value: /site
    - name: HOME
      value: /tmp
  resources:
    requests: {cpu: 50m, memory: 64Mi}
    limits: {memory: 256Mi}
  securityContext:
    {{- toYaml .Values.jobSecurity.securityContext | nindent 4 }}
    runAsNonRoot: true
    runAsUser: {{ .Values.jobSecurity.podSecurityContext.runAsUser }}
  volumeMounts:
    - name: owui-patched
      mountPath: /patched
    - name: ragfr-site
      mountPath: /site
    - name: ragfr-scripts
      mountPath: /ragfr-scripts
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}
{{- /* No cross-encoder configured (openwebui.env.RAG_RERANKING_MODEL: ""): nothing to cache or check. */}}
{{- if (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL }}
{{- if eq $w.reranker.source "image" }}
- name: copy-reranker-cache
  image: {{ include "ragfr.image" (dict "root" . "image" $w.reranker.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" $w.reranker.image) }}
  command: ["cp", "-R", "{{ $w.reranker.image.path }}/.", "/opt/hf-cache/"]
  resources:
    requests: {cpu: 10m, memory: 32Mi}
    limits: {memory: 128Mi}
  securityContext:
    {{- toYaml .Values.jobSecurity.securityContext | nindent 4 }}
    runAsNonRoot: true
    runAsUser: {{ .Values.jobSecurity.podSecurityContext.runAsUser }}
  volumeMounts:
    - name: hf-cache
      mountPath: /opt/hf-cache
{{- end }}
- name: cache-reranker
  image: {{ include "ragfr.image" (dict "root" . "image" $w.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" . "image" $w.image) }}
  command: ["python", "/ragfr-scripts/reranker-cache.py"]
  env:
    - name: RERANKER_SOURCE
      value: {{ $w.reranker.source | quote }}
    - name: RERANKER_REVISION
      value: {{ $w.reranker.revision | default "" | quote }}
    - name: RAG_RERANKING_MODEL
      value: {{ (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL | quote }}
    - name: HF_HOME
      value: /opt/hf-cache
    - name: SENTENCE_TRANSFORMERS_HOME
      value: /opt/hf-cache
    - name: HOME
      value: /tmp
  resources:
    {{- toYaml $w.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.jobSecurity.securityContext | nindent 4 }}
    runAsNonRoot: true
    runAsUser: {{ .Values.jobSecurity.podSecurityContext.runAsUser }}
  volumeMounts:
    - name: hf-cache
      mountPath: /opt/hf-cache
      readOnly: {{ eq $w.reranker.source "pvc" }}
    - name: ragfr-scripts
      mountPath: /ragfr-scripts
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}
{{- end -}}
