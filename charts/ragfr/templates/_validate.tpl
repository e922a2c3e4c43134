{{/*
Cross-field rules the JSON schema cannot express. Each failure is one sentence naming the values to
change, so `helm install` stops before anything reaches the cluster.
*/}}
{{- define "ragfr.validate" -}}
{{- $v := .Values -}}
{{- if gt (int $v.embedding.dims) 2000 -}}
{{- fail (printf "embedding.dims=%v: pgvector's HNSW index supports at most 2000 dimensions for the vector type" $v.embedding.dims) -}}
{{- end -}}
{{- range $key := list "PGVECTOR_DB_URL" "DATABASE_URL" "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH" "RAG_EMBEDDING_MODEL" "OLLAMA_BASE_URL" "WEBUI_SECRET_KEY" "WEBSOCKET_REDIS_URL" "REDIS_URL" "HF_HOME" "PYTHONPATH" "RAGFR_METRICS_PORT" -}}
{{- if hasKey $v.openwebui.env $key -}}
{{- fail (printf "openwebui.env.%s is computed by the chart (from embedding.*, database.*, redis.*, openwebui.existingSecret, openwebui.metrics); set those values instead" $key) -}}
{{- end -}}
{{- end -}}
{{- /* The roles the chart makes or alters (ragdb-roles.sh, CNPG managed.roles) must be roles of their own:
     ALTER ROLE ... NOSUPERUSER PASSWORD on postgres, the owner or Open WebUI's role would break them. */ -}}
{{- $taken := dict "postgres" "the superuser" $v.database.ragfr.user "database.ragfr.user (the owner)" $v.database.openwebui.user "database.openwebui.user" -}}
{{- range $path, $role := dict "database.ragfr.appUser" $v.database.ragfr.appUser "ragdb.metrics.user" $v.ragdb.metrics.user -}}
{{- if hasKey $taken $role -}}
{{- fail (printf "%s=%s is also %s: it must be a role of its own (the chart sets its password and privileges)" $path $role (get $taken $role)) -}}
{{- end -}}
{{- end -}}
{{- if eq $v.database.ragfr.appUser $v.ragdb.metrics.user -}}
{{- fail (printf "database.ragfr.appUser and ragdb.metrics.user are both %s: Open WebUI's role and the exporter's must differ" $v.ragdb.metrics.user) -}}
{{- end -}}
{{- $tls := $v.database.tls -}}
{{- if and $tls.certManager.enabled (not $tls.enabled) -}}
{{- fail "database.tls.certManager.enabled=true needs database.tls.enabled=true (the clients' verify-full goes with the certificate)" -}}
{{- end -}}
{{- if $tls.enabled -}}
{{- if and $tls.certManager.enabled (ne $v.database.mode "internal") -}}
{{- fail (printf "database.tls.certManager is for the chart's ragdb (database.mode=internal), not mode=%s: name the Secret holding the server's CA in database.tls.existingSecret" $v.database.mode) -}}
{{- end -}}
{{- if and $tls.certManager.enabled $tls.existingSecret -}}
{{- fail "database.tls: existingSecret and certManager.enabled are exclusive: ragdb's certificate comes from one of them" -}}
{{- end -}}
{{- if and $tls.certManager.enabled (not $tls.certManager.issuerRef.name) -}}
{{- fail "database.tls.certManager.enabled=true needs database.tls.certManager.issuerRef.name (an Issuer or ClusterIssuer of cert-manager)" -}}
{{- end -}}
{{- if and (eq $v.database.mode "internal") (not $tls.certManager.enabled) (not $tls.existingSecret) -}}
{{- fail "database.tls.enabled=true needs database.tls.existingSecret (a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt for the Service <release>-ragdb) or database.tls.certManager.enabled=true (docs/runbooks/database-tls.md)" -}}
{{- end -}}
{{- if and (eq $v.database.mode "external") (not $tls.existingSecret) -}}
{{- fail "database.tls.enabled=true with database.mode=external needs database.tls.existingSecret: a Secret whose ca.crt signed the server's certificate" -}}
{{- end -}}
{{- range $key := list "ssl" "ssl_cert_file" "ssl_key_file" "ssl_ca_file" "hba_file" -}}
{{- if hasKey $v.ragdb.settings $key -}}
{{- fail (printf "ragdb.settings.%s is set by database.tls (the certificate from its Secret, TLS required from other pods): remove it" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.redis.enabled $v.redis.externalUrl -}}
{{- fail "redis.enabled=true and redis.externalUrl are exclusive: use the chart's Redis or an external one" -}}
{{- end -}}
{{- if gt (int $v.openwebui.replicas) 1 -}}
{{- if not (or $v.redis.enabled $v.redis.externalUrl $v.redis.existingSecret) -}}
{{- fail (printf "openwebui.replicas=%v needs Redis for websockets shared between replicas: set redis.enabled=true, redis.externalUrl or redis.existingSecret" $v.openwebui.replicas) -}}
{{- end -}}
{{- if not (or $v.openwebui.persistence.existingClaim (has "ReadWriteMany" $v.openwebui.persistence.accessModes)) -}}
{{- fail (printf "openwebui.replicas=%v share one data volume (uploads): set openwebui.persistence.accessModes to [ReadWriteMany] or give an existingClaim that is" $v.openwebui.replicas) -}}
{{- end -}}
{{- end -}}
{{- if and (not $v.ollama.enabled) (not $v.ollama.externalUrl) -}}
{{- fail "ollama.enabled=false needs ollama.externalUrl (the Ollama serving embeddings and chat)" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "download") (not $v.openwebui.reranker.revision) (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL -}}
{{- fail "openwebui.reranker.source=download needs openwebui.reranker.revision: the Hugging Face commit sha of RAG_RERANKING_MODEL to fetch (docs/install.md, \"The reranker\")" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "pvc") (not $v.openwebui.reranker.existingClaim) -}}
{{- fail "openwebui.reranker.source=pvc needs openwebui.reranker.existingClaim (a volume holding the Hugging Face cache)" -}}
{{- end -}}
{{- if and (eq $v.openwebui.reranker.source "image") (not $v.openwebui.reranker.image.repository) -}}
{{- fail "openwebui.reranker.source=image needs openwebui.reranker.image.repository (the image holding the Hugging Face cache)" -}}
{{- end -}}
{{- /* A reranker source or cache without a model would do nothing: the operator meant to run one. */}}
{{- if and (or (ne $v.openwebui.reranker.source "download") $v.openwebui.reranker.cache.enabled) (not (include "ragfr.openwebui.envMap" . | fromYaml).RAG_RERANKING_MODEL) -}}
{{- fail (printf "openwebui.reranker.source=%s%s configures a cross-encoder, but none is named: the chart runs none by default (docs/retrieval-quality.md, \"Cross-encoder\"); set openwebui.env.RAG_RERANKING_MODEL to the model to run, or remove these settings" $v.openwebui.reranker.source (ternary " with openwebui.reranker.cache.enabled" "" $v.openwebui.reranker.cache.enabled)) -}}
{{- end -}}
{{- if $v.openwebui.patch.enabled -}}
{{- $manifest := .Files.Get "files/open-webui-patch-manifest.json" | fromJson -}}
{{- $want := toString (get $manifest "open_webui_version") -}}
{{- if not $want -}}
{{- fail "files/open-webui-patch-manifest.json (a link to patches/open-webui/manifest.json) is missing from the chart: package it from a checkout" -}}
{{- end -}}
{{- /* The tag part is checked; a digest after it (v0.12.4@sha256:...) pins that version's image. A bare digest
     does not say which version it is: refused while the patch is on. */ -}}
{{- $full := toString $v.openwebui.image.tag -}}
{{- $tag := include "ragfr.imageTag" $full -}}
{{- /* "latest" has its own message (ragfr.image). */ -}}
{{- if and (ne $tag "latest") (not (regexMatch (printf "^v?%s(-[A-Za-z0-9._]+)?$" (replace "." "\\." $want)) $tag)) -}}
{{- fail (printf "openwebui.image.tag=%s is not Open WebUI %s, the only version the French patch applies to (patches/open-webui/manifest.json): use tag v%s (or v%s@sha256:<digest>) or set openwebui.patch.enabled=false" $full $want $want $want) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.database.mode "cnpg") (ne $v.database.ragfr.user $v.database.openwebui.user) -}}
{{- fail "database.mode=cnpg: the CloudNativePG owner role owns both databases, so database.openwebui.user must equal database.ragfr.user" -}}
{{- end -}}
{{- end -}}
