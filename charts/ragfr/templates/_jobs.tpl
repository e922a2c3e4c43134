{{/*
The chart's plain Jobs (migrations, model pull) are named after a hash of their spec, not after
.Release.Revision: Argo CD, Flux's Kustomizations and `helm template | kubectl apply` render every
revision as 1. With a hash, the same inputs give the same name, so a completed Job is neither run again
nor patched, and any change to the spec (image, models, arguments, labels) gives a new name, so the Job
runs again and no immutable pod template changes under an existing name. The previous Job leaves the
manifest and Helm deletes it (Argo CD prunes it). docs/runbooks/gitops.md.
*/}}

{{/* <fullname>-<component>-<10 hex of sha256(spec)>: the prefix is cut, never the hash, to fit 63. */}}
{{- define "ragfr.jobName" -}}
{{- printf "%s-%s" (include "ragfr.jobPrefix" .) (.spec | sha256sum | trunc 10) -}}
{{- end -}}

{{- define "ragfr.jobPrefix" -}}
{{- include "ragfr.componentName" (dict "root" .root "component" .component) | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{/*
Job-level fields shared by the two Jobs. No TTL unless migrations.ttlSecondsAfterFinished is set: under
GitOps a Job deleted by its TTL is missing from the cluster, so Argo CD (self-heal) or Flux re-creates it
and it runs again; a kept Job is the record that these inputs were applied.
*/}}
{{- define "ragfr.jobTTL" -}}
{{- if not (kindIs "invalid" .Values.migrations.ttlSecondsAfterFinished) }}
ttlSecondsAfterFinished: {{ .Values.migrations.ttlSecondsAfterFinished }}
{{- end }}
{{- end -}}

{{/*
gitops.argocdHooks: Argo CD runs the Jobs as Sync hooks, on every sync, deleting the previous run just
before (BeforeHookCreation). Not PreSync: in database.mode=internal the database is applied in the Sync
phase, so a PreSync migration would wait for it forever. Helm ignores these annotations.
*/}}
{{- define "ragfr.jobAnnotations" -}}
{{- if .Values.gitops.argocdHooks }}
annotations:
  argocd.argoproj.io/hook: Sync
  argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
{{- end }}
{{- end -}}
