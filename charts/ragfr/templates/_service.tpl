{{/*
Open WebUI's Service as other charts shape it: openwebui.service.annotations (a LoadBalancer's address
pool, external-dns...) and openwebui.service.nodePort, the node port of the http port when the type is
NodePort or LoadBalancer (0: Kubernetes picks one).
*/}}
{{- define "ragfr.service.check" -}}
{{- $s := .Values.openwebui.service -}}
{{- if and $s.nodePort (eq $s.type "ClusterIP") -}}
{{- fail (printf "openwebui.service.nodePort=%v needs openwebui.service.type=NodePort or LoadBalancer (a ClusterIP Service has no node port)" $s.nodePort) -}}
{{- end -}}
{{- end -}}
