{{/*
openwebui.reranker.cache: the cross-encoder's download on a PVC instead of an emptyDir (open-webui/helm-charts
#250: every restart downloaded it again). reranker-cache.py skips the download when the pinned commit is there
and loads offline.
*/}}

{{/* "true" when the download goes to a PVC. */}}
{{- define "ragfr.rerankerCache.enabled" -}}
{{- $r := .Values.openwebui.reranker -}}
{{- if and $r.cache.enabled (eq $r.source "download") -}}true{{- end -}}
{{- end -}}

{{- define "ragfr.rerankerCache.claim" -}}
{{- .Values.openwebui.reranker.cache.existingClaim | default (include "ragfr.componentName" (dict "root" . "component" "reranker-cache")) -}}
{{- end -}}

{{- define "ragfr.rerankerCache.check" -}}
{{- $w := .Values.openwebui -}}
{{- $c := $w.reranker.cache -}}
{{- if and $c.enabled (ne $w.reranker.source "download") -}}
{{- fail (printf "openwebui.reranker.cache.enabled=true needs openwebui.reranker.source=download (source=%s downloads nothing: pvc reads existingClaim, image copies from the image)" $w.reranker.source) -}}
{{- end -}}
{{- if and (include "ragfr.rerankerCache.enabled" .) (gt (int $w.replicas) 1) (not $c.existingClaim) (not (has "ReadWriteMany" $c.accessModes)) -}}
{{- fail (printf "openwebui.replicas=%v share the reranker cache, which a ReadWriteOnce volume cannot be on several nodes: set openwebui.reranker.cache.accessModes to [ReadWriteMany] (Longhorn, NFS) or give an existingClaim every node can mount" $w.replicas) -}}
{{- end -}}
{{- end -}}
