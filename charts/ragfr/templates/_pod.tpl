{{/* Blocks several pods of the chart share: pod-level defaults, scheduling, probe overrides, the short-lived
     helper containers' settings, the /tmp and scripts volumes. (The database's env, CA volume and mount are in
     _db-connection.tpl and _db-tls.tpl.) */}}

{{/* Pod-level settings every pod of the chart shares. */}}
{{- define "ragfr.podDefaults" -}}
automountServiceAccountToken: false
{{- with include "ragfr.serviceAccountName" . }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
  {{- include "ragfr.imagePullSecrets" . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A writable /tmp for containers with a read-only root filesystem. */}}
{{- define "ragfr.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end -}}

{{/* The scripts ConfigMap as a volume (mounted by every pod that waits or checks). */}}
{{- define "ragfr.scriptsVolume" -}}
- name: ragfr-scripts
  configMap:
    name: {{ include "ragfr.componentName" (dict "root" . "component" "scripts") }}
    defaultMode: 0555
{{- end -}}

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

{{/*
Scheduling a workload's pods beyond nodeSelector/tolerations/affinity: <workload>.priorityClassName and
<workload>.topologySpreadConstraints (ragdb, ollama, openwebui, redis, migrations, backup). A constraint
without a labelSelector gets the workload's own selector labels, so
`- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}` spreads that
workload's pods and nothing else.
Arguments: root, values (the workload's values), component (its app.kubernetes.io/component).
*/}}
{{- define "ragfr.scheduling" -}}
{{- $out := dict -}}
{{- with .values.priorityClassName -}}
{{- $_ := set $out "priorityClassName" . -}}
{{- end -}}
{{- $selector := include "ragfr.selectorLabels" (dict "root" .root "component" .component) | fromYaml -}}
{{- $constraints := list -}}
{{- range .values.topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) -}}
{{- end -}}
{{- $constraints = append $constraints $c -}}
{{- end -}}
{{- with $constraints -}}
{{- $_ := set $out "topologySpreadConstraints" . -}}
{{- end -}}
{{- with $out -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/* A probe (escape hatch <workload>.probes of Open WebUI and Ollama): the chart's default (YAML text) with
     the user's timing fields merged over it. */}}
{{- define "ragfr.extras.probe" -}}
{{- toYaml (mergeOverwrite (.default | fromYaml) (deepCopy (.override | default dict))) -}}
{{- end -}}
