{{/* Names (the release's, its components', and the objects several templates refer to), labels, image
     references. */}}

{{- define "ragfr.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ragfr.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of one component's objects: <fullname>-<component>, kept within DNS label length. */}}
{{- define "ragfr.componentName" -}}
{{- printf "%s-%s" (include "ragfr.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ragfr.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragfr.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ragfr.labels" -}}
{{ include "ragfr.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: ragfr
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Names of the database's objects, which several templates refer to: the CloudNativePG Cluster, the
     internal ragdb's Secret, Open WebUI's managed role's Secret in cnpg mode (kubernetes.io/basic-auth). */}}
{{- define "ragfr.db.cnpgCluster" -}}
{{- include "ragfr.componentName" (dict "root" . "component" "db") -}}
{{- end -}}

{{- define "ragfr.db.internalSecret" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "ragdb")) .Values.ragdb.auth.existingSecret -}}
{{- end -}}

{{- define "ragfr.db.cnpgAppSecret" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "db-approle")) .Values.database.cnpg.appRoleSecret -}}
{{- end -}}

{{/* TLS (database.tls). The Secret holding ca.crt for the clients, and, in internal mode, ragdb's
     tls.crt / tls.key: the operator's, or the one cert-manager issues (ragdb-certificate.yaml). */}}
{{- define "ragfr.db.tlsSecret" -}}
{{- $t := .Values.database.tls -}}
{{- if $t.existingSecret -}}{{ $t.existingSecret }}
{{- else if eq .Values.database.mode "cnpg" -}}{{ printf "%s-ca" (include "ragfr.db.cnpgCluster" .) }}
{{- else -}}{{ include "ragfr.componentName" (dict "root" . "component" "ragdb-tls") }}
{{- end -}}
{{- end -}}

{{/*
The pods' ServiceAccount: serviceAccount.create makes one (<fullname>, or serviceAccount.name) carrying
serviceAccount.annotations (e.g. a cloud workload identity); serviceAccount.name alone names an
existing one; neither keeps the namespace's default account. The token is never mounted: no pod of the
chart talks to the Kubernetes API.
*/}}
{{- define "ragfr.serviceAccountName" -}}
{{- $sa := .Values.serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "ragfr.fullname" .) $sa.name -}}
{{- else -}}
{{- $sa.name -}}
{{- end -}}
{{- end -}}

{{/* Open WebUI's Secret (webui-secret-key): openwebui.existingSecret, or the one the chart generates. */}}
{{- define "ragfr.openwebui.secretName" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "openwebui")) .Values.openwebui.existingSecret -}}
{{- end -}}

{{/* The Secret holding the key that signs each set's SHA256SUMS (SHA256SUMS.hmac). */}}
{{- define "ragfr.backup.integritySecret" -}}
{{- .Values.backup.integrity.existingSecret | default (include "ragfr.componentName" (dict "root" . "component" "backup-integrity")) -}}
{{- end -}}

{{/* The reranker cache's PVC (openwebui.reranker.cache): its existingClaim, or the one the chart makes. */}}
{{- define "ragfr.rerankerCache.claim" -}}
{{- .Values.openwebui.reranker.cache.existingClaim | default (include "ragfr.componentName" (dict "root" . "component" "reranker-cache")) -}}
{{- end -}}

{{/*
Image reference: [global.imageRegistry/]repository:tag, the tag defaulting to the chart appVersion; the
registry, when set, replaces the repository's own registry part.
A "latest" tag is refused: every image in a release must be reproducible.
*/}}
{{- /* An image's tag value: TAG, TAG@sha256:<64 hex> (the tag for people, the digest for the runtime, which
     pulls exactly that manifest) or a bare sha256:<64 hex>. Empty means the chart appVersion. */ -}}
{{- define "ragfr.image" -}}
{{- $tag := toString (default .root.Chart.AppVersion .image.tag) -}}
{{- $digest := "" -}}
{{- if hasPrefix "sha256:" $tag -}}
{{- $digest = $tag -}}{{- $tag = "" -}}
{{- else if contains "@" $tag -}}
{{- $parts := splitn "@" 2 $tag -}}
{{- $tag = $parts._0 -}}{{- $digest = $parts._1 -}}
{{- end -}}
{{- if eq $tag "latest" -}}
{{- fail (printf "image %s: the tag \"latest\" is not allowed; pin a version" .image.repository) -}}
{{- end -}}
{{- if or (and $digest (not (regexMatch "^sha256:[0-9a-f]{64}$" $digest))) (and (not $digest) (not $tag)) (contains "@" $digest) (contains ":" $tag) -}}
{{- fail (printf "image %s: tag %q is neither TAG, TAG@sha256:<64 hex digits> nor sha256:<64 hex digits>" .image.repository (toString .image.tag)) -}}
{{- end -}}
{{- $repo := .image.repository -}}
{{- $registry := .root.Values.global.imageRegistry -}}
{{- if include "ragfr.isProjectImage" .image.repository -}}
{{- /* The project's own images are published on no registry: an unqualified ragfr/<name> would resolve to
     docker.io/ragfr/<name>, a namespace this project does not own. Never rendered so. */ -}}
{{- if eq (include "ragfr.imageSource" .root) "imported" -}}
{{- /* podman's and `make images-save`'s name for them, which `k3s ctr images import` records as is. */ -}}
{{- $repo = printf "localhost/%s" $repo -}}{{- $registry = "" -}}
{{- else if not $registry -}}
{{- fail (include "ragfr.imageSource.refusal" .root) -}}
{{- end -}}
{{- end -}}
{{- with $registry -}}
{{- /* Bitnami's way: the mirror replaces the registry part (docker.io/ollama/ollama -> REG/ollama/ollama,
     ghcr.io/open-webui/open-webui -> REG/open-webui/open-webui); a repository without one gets it prepended
     (ragfr/ragdb -> REG/ragfr/ragdb). A registry part is a first path component with a "." or ":", or
     "localhost" (the rule docker and containerd apply). */ -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = join "/" (rest $parts) -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo -}}
{{- end -}}
{{- $repo -}}{{- with $tag -}}:{{ . }}{{- end -}}{{- with $digest -}}@{{ . }}{{- end -}}
{{- end -}}

{{/* Where the project's images come from (global.imageSource): "registry" (explicit, or implied by
     global.imageRegistry), "imported", or "" when the values name neither. */}}
{{- define "ragfr.imageSource" -}}
{{- $g := .Values.global -}}
{{- if $g.imageSource -}}{{- $g.imageSource -}}
{{- else if $g.imageRegistry -}}registry
{{- end -}}
{{- end -}}

{{/* "true" when a repository is one of the project's own images: ragfr/<name> with no registry part. */}}
{{- define "ragfr.isProjectImage" -}}
{{- $parts := splitList "/" . -}}
{{- if and (gt (len $parts) 1) (eq (first $parts) "ragfr") -}}true{{- end -}}
{{- end -}}

{{/* The one refusal when the values say neither where the project's images are nor that they were imported. */}}
{{- define "ragfr.imageSource.refusal" -}}
{{- if and (eq (toString .Values.global.imageSource) "registry") (not .Values.global.imageRegistry) -}}
global.imageSource=registry needs global.imageRegistry (host:port of the registry `make images-push REGISTRY=...` pushed to)
{{- else -}}
the ragfr images (ragfr/ragdb, ragfr/ragfr, ragfr/owui-init) are published on no public registry: say where the nodes get them in my-values.yaml, either global.imageRegistry: <host:port> (`make run VALUES=my-values.yaml` builds, pushes there and deploys) or global.imageSource: imported (images imported into every node's containerd: `make images-save` + `k3s ctr images import`, docs/install.md step 2)
{{- end -}}
{{- end -}}

{{/* An image's pull policy: Never for the project's imported images, so a node that missed the import fails
     with ErrImageNeverPull instead of trying a pull; otherwise the image's own. */}}
{{- define "ragfr.imagePullPolicy" -}}
{{- if and (include "ragfr.isProjectImage" .image.repository) (eq (include "ragfr.imageSource" .root) "imported") -}}
Never
{{- else -}}
{{- .image.pullPolicy | default "IfNotPresent" -}}
{{- end -}}
{{- end -}}

{{/* The tag part of an image's tag value (TAG of TAG@sha256:..., empty for a bare digest). */}}
{{- define "ragfr.imageTag" -}}
{{- $tag := toString . -}}
{{- if hasPrefix "sha256:" $tag -}}{{- else -}}{{- (splitn "@" 2 $tag)._0 -}}{{- end -}}
{{- end -}}

{{/* global.imagePullSecrets as a list of {name:} objects: each item is a Secret name or, as in other charts,
     {name: ...}. */}}
{{- define "ragfr.imagePullSecrets" -}}
{{- range $i, $s := . }}
{{- if $i }}{{ "\n" }}{{ end -}}
- name: {{ if kindIs "map" $s }}{{ $s.name | quote }}{{ else }}{{ $s | quote }}{{ end }}
{{- end }}
{{- end -}}

