{{/* Resources + securityContext of the chart's short-lived helper containers (waits, copies). */}}
{{- define "ragfr.smallContainer" -}}
resources:
  requests: {cpu: 10m, memory: 32Mi}
  limits: {memory: 128Mi}
securityContext:
  {{- toYaml .Values.jobSecurity.securityContext | nindent 2 }}
  runAsNonRoot: true
  runAsUser: {{ .Values.jobSecurity.podSecurityContext.runAsUser }}
volumeMounts:
  - name: ragfr-scripts
    mountPath: /ragfr-scripts
    readOnly: true
  - name: tmp
    mountPath: /tmp
  {{- with include "ragfr.db.caMount" . }}{{ . | nindent 2 }}{{ end }}
{{- end -}}

{{/* The scripts ConfigMap as a volume (mounted by every pod that waits or checks). */}}
{{- define "ragfr.scriptsVolume" -}}
- name: ragfr-scripts
  configMap:
    name: {{ include "ragfr.componentName" (dict "root" . "component" "scripts") }}
    defaultMode: 0555
{{- end -}}
