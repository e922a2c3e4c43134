{{/*
Open WebUI's extra volumes, mounts and init containers (openwebui.extraVolumes, .extraVolumeMounts,
.extraInitContainers), added after the chart's own: a CA bundle, branding files, a sidecar's socket...
The chart's volume names, init container names and mount paths stay the chart's, and a mount names one of
the extra volumes: each refusal names the value to change.
*/}}
{{- define "ragfr.extraVolumes.check" -}}
{{- $w := .Values.openwebui -}}
{{- $chartVolumes := list "data" "hf-cache" "owui-patched" "ragfr-site" "db-credentials" "tmp" "ragfr-scripts" "db-ca" -}}
{{- $extra := list -}}
{{- range $i, $v := $w.extraVolumes -}}
{{- if has $v.name $chartVolumes -}}
{{- fail (printf "openwebui.extraVolumes[%d].name=%s is a volume of the chart (%s): choose another name" $i $v.name (join ", " $chartVolumes)) -}}
{{- end -}}
{{- if has $v.name $extra -}}
{{- fail (printf "openwebui.extraVolumes[%d].name=%s is listed twice" $i $v.name) -}}
{{- end -}}
{{- $extra = append $extra $v.name -}}
{{- end -}}
{{- $chartPaths := list "/app/backend/data" "/opt/hf-cache" "/tmp" "/run/ragfr-db" "/opt/ragfr/site" -}}
{{- range $i, $m := $w.extraVolumeMounts -}}
{{- if not (has $m.name $extra) -}}
{{- fail (printf "openwebui.extraVolumeMounts[%d].name=%s is not in openwebui.extraVolumes: add the volume there" $i $m.name) -}}
{{- end -}}
{{- if or (has (trimSuffix "/" $m.mountPath) $chartPaths) (hasPrefix (printf "%s/" $w.patch.backendDir) $m.mountPath) -}}
{{- fail (printf "openwebui.extraVolumeMounts[%d].mountPath=%s is where the chart mounts its own volumes (%s, and the patched files under %s): choose another path" $i $m.mountPath (join ", " $chartPaths) $w.patch.backendDir) -}}
{{- end -}}
{{- end -}}
{{- $chartInits := list -}}
{{- range (include "ragfr.openwebui.initContainers" . | fromYamlArray) -}}
{{- $chartInits = append $chartInits .name -}}
{{- end -}}
{{- range $i, $c := $w.extraInitContainers -}}
{{- if has $c.name $chartInits -}}
{{- fail (printf "openwebui.extraInitContainers[%d].name=%s is an init container of the chart: choose another name" $i $c.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
