{{/*
TLS to the database (database.tls): every client's sslmode (verify-full with TLS on), and the CA (ca.crt of
the Secret named by ragfr.db.tlsSecret) as a pod volume and a mount, /etc/ragfr/db-ca, for every container that
connects. Without TLS the volume and the mount are empty.
*/}}

{{/* sslmode (and sslrootcert) of every client: the mode's own, or with database.tls.enabled verify-full
     against the CA that ragfr.db.caVolume / ragfr.db.caMount mount at /etc/ragfr/db-ca. */}}
{{- define "ragfr.db.sslFacts" -}}
{{- if .root.Values.database.tls.enabled -}}
sslmode: verify-full
sslrootcert: /etc/ragfr/db-ca/ca.crt
{{- else -}}
sslmode: {{ .sslmode }}
{{- end -}}
{{- end -}}

{{/* Pod volume of the CA (ca.crt only: never the server's key, nor a CNPG CA's ca.key); empty without TLS. */}}
{{- define "ragfr.db.caVolume" -}}
{{- if .Values.database.tls.enabled -}}
- name: db-ca
  secret:
    secretName: {{ include "ragfr.db.tlsSecret" . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end -}}
{{- end -}}

{{/* volumeMount of that CA, for every container that connects to the database; empty without TLS. */}}
{{- define "ragfr.db.caMount" -}}
{{- if .Values.database.tls.enabled -}}
- name: db-ca
  mountPath: /etc/ragfr/db-ca
  readOnly: true
{{- end -}}
{{- end -}}
