{{/* Helpers of the metrics endpoints, their monitor and the PrometheusRule (docs/runbooks/monitoring.md). */}}

{{/* Cross-field rules of the metrics values: one sentence each. */}}
{{- define "ragfr.metrics.check" -}}
{{- $v := .Values -}}
{{- if $v.openwebui.metrics.enabled -}}
{{- if not $v.openwebui.patch.enabled -}}
{{- fail "openwebui.metrics.enabled=true needs openwebui.patch.enabled=true: ragfr's patch is what starts the metrics endpoint inside Open WebUI" -}}
{{- end -}}
{{- if eq (int $v.openwebui.metrics.port) 8080 -}}
{{- fail "openwebui.metrics.port=8080 is Open WebUI's own port: choose another (default 9464)" -}}
{{- end -}}
{{- end -}}
{{- if and $v.ragdb.metrics.enabled (ne $v.database.mode "internal") -}}
{{- fail (printf "ragdb.metrics.enabled=true needs database.mode=internal (the exporter is a sidecar of the chart's ragdb); with database.mode=%s monitor the database where it runs (docs/runbooks/monitoring.md)" $v.database.mode) -}}
{{- end -}}
{{- if and $v.ragdb.metrics.enabled (eq (int $v.ragdb.metrics.port) 5432) -}}
{{- fail "ragdb.metrics.port=5432 is PostgreSQL's own port: choose another (default 9187)" -}}
{{- end -}}
{{- if and (or $v.metrics.serviceMonitor.enabled $v.metrics.prometheusRule.enabled) (not (or $v.openwebui.metrics.enabled $v.ragdb.metrics.enabled)) -}}
{{- fail "metrics.serviceMonitor/prometheusRule need an endpoint to scrape: set openwebui.metrics.enabled=true and/or ragdb.metrics.enabled=true" -}}
{{- end -}}
{{- end -}}
