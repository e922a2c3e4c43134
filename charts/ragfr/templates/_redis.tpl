{{/*
An external Redis for Open WebUI's websockets: redis.externalUrl (in the Open WebUI ConfigMap), or, when
the URL carries a password, redis.existingSecret (key redis.urlKey): WEBSOCKET_REDIS_URL and
REDIS_URL then come from that Secret by secretKeyRef and never reach a ConfigMap. The chart cannot read
the Secret's URL, so its NetworkPolicy opens redis.externalPort.
*/}}
{{- define "ragfr.redis.fromSecret" -}}
{{- if and (not .Values.redis.enabled) .Values.redis.existingSecret -}}true{{- end -}}
{{- end -}}

{{- define "ragfr.redis.check" -}}
{{- $r := .Values.redis -}}
{{- if and $r.existingSecret $r.externalUrl -}}
{{- fail "redis.externalUrl and redis.existingSecret are exclusive: the external Redis URL is in the values or in the Secret" -}}
{{- end -}}
{{- if and $r.enabled $r.existingSecret -}}
{{- fail "redis.enabled=true and redis.existingSecret are exclusive: use the chart's Redis or an external one" -}}
{{- end -}}
{{- end -}}
