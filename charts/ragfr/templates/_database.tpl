{{/*
Database connection, one definition for the three modes (internal ragdb, external, CloudNativePG).
No URL ever holds a password. Kubernetes' $(VAR) expansion cannot percent-encode, so a password pasted
into a URL breaks it as soon as it holds `@ / ? # %`, a quote or a space. The password reaches libpq on
its own instead: PGPASSWORD from the Secret for the ragfr containers (one database each), a libpq password
file written by an init container for Open WebUI (two databases, two passwords; db-passfile in openwebui-deployment.yaml).
*/}}

{{- define "ragfr.db.cnpgCluster" -}}
{{- include "ragfr.componentName" (dict "root" . "component" "db") -}}
{{- end -}}

{{- define "ragfr.db.internalSecret" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "ragdb")) .Values.ragdb.auth.existingSecret -}}
{{- end -}}

{{/* Secret of Open WebUI's managed role in cnpg mode (kubernetes.io/basic-auth). */}}
{{- define "ragfr.db.cnpgAppSecret" -}}
{{- default (include "ragfr.componentName" (dict "root" . "component" "db-approle")) .Values.database.cnpg.appRoleSecret -}}
{{- end -}}

{{/* Connection facts, as YAML (read back with fromYaml), for .db = "ragfr" (the owner of ragfr's database:
     migrations, backups, tools), "openwebui" (Open WebUI's own database) or "app" (Open WebUI's
     least-privilege role database.ragfr.appUser in ragfr's database: DML on document_chunk, no DDL). */}}
{{- define "ragfr.db.conn" -}}
{{- $v := .root.Values.database -}}
{{- $app := eq .db "app" -}}
{{- $which := index $v (ternary "ragfr" .db $app) -}}
{{- $user := ternary $v.ragfr.appUser $which.user $app -}}
{{- if eq $v.mode "internal" -}}
host: {{ include "ragfr.componentName" (dict "root" .root "component" "ragdb") }}
port: {{ .root.Values.ragdb.service.port }}
user: {{ $user }}
database: {{ $which.name }}
secret: {{ include "ragfr.db.internalSecret" .root }}
key: {{ ternary "ragfr-app-password" (printf "%s-password" .db) $app }}
{{ include "ragfr.db.sslFacts" (dict "root" .root "sslmode" "disable") }}
{{- else if eq $v.mode "external" -}}
host: {{ required "database.external.host is required when database.mode=external" $v.external.host }}
port: {{ $v.external.port }}
user: {{ $user }}
database: {{ $which.name }}
secret: {{ required "database.external.existingSecret (a Secret holding the ragfr, openwebui and application-role passwords) is required when database.mode=external" $v.external.existingSecret }}
key: {{ $app | ternary $v.external.appPasswordKey (ternary $v.external.ragfrPasswordKey $v.external.openwebuiPasswordKey (eq .db "ragfr")) }}
{{ include "ragfr.db.sslFacts" (dict "root" .root "sslmode" $v.external.sslmode) }}
{{- else -}}
{{- /* CNPG: one owner role (the bootstrap owner) owns both databases; its Secret is <cluster>-app. Open
       WebUI's role is a managed role of the Cluster with its own basic-auth Secret. */ -}}
host: {{ printf "%s-rw" (include "ragfr.db.cnpgCluster" .root) }}
port: 5432
user: {{ ternary $v.ragfr.appUser $v.ragfr.user $app }}
database: {{ $which.name }}
secret: {{ ternary (include "ragfr.db.cnpgAppSecret" .root) (printf "%s-app" (include "ragfr.db.cnpgCluster" .root)) $app }}
key: password
{{ include "ragfr.db.sslFacts" (dict "root" .root "sslmode" "require") }}
{{- end -}}
{{- end -}}

{{/* sslmode (and sslrootcert) of every client: the mode's own, or with database.tls.enabled verify-full
     against the CA mounted by ragfr.db.caVolume / ragfr.db.caMount. */}}
{{- define "ragfr.db.sslFacts" -}}
{{- if .root.Values.database.tls.enabled -}}
sslmode: verify-full
sslrootcert: {{ include "ragfr.db.caDir" .root }}/ca.crt
{{- else -}}
sslmode: {{ .sslmode }}
{{- end -}}
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

{{- define "ragfr.db.caDir" -}}/etc/ragfr/db-ca{{- end -}}

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
  mountPath: {{ include "ragfr.db.caDir" . }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* A URL component (user, database name) percent-encoded for a URL's path or userinfo. */}}
{{- define "ragfr.db.pct" -}}
{{- toString . | urlquery | replace "+" "%20" -}}
{{- end -}}

{{/* The password-less URL of database "ragfr" or "openwebui"; optional "query": more URL parameters,
     already percent-encoded. */}}
{{- define "ragfr.db.url" -}}
{{- $c := include "ragfr.db.conn" (dict "root" .root "db" .db) | fromYaml -}}
{{- $root := "" -}}
{{- with $c.sslrootcert }}{{ $root = printf "&sslrootcert=%s" . }}{{ end -}}
{{- printf "postgresql://%s@%s:%v/%s?sslmode=%s%s%s" (include "ragfr.db.pct" $c.user) $c.host $c.port (include "ragfr.db.pct" $c.database) $c.sslmode $root (ternary (printf "&%s" .query) "" (hasKey . "query")) -}}
{{- end -}}

{{/* env entry <var>: the password of database "ragfr" or "openwebui", from its Secret. */}}
{{- define "ragfr.db.passwordEnv" -}}
{{- $c := include "ragfr.db.conn" (dict "root" .root "db" .db) | fromYaml -}}
- name: {{ .var }}
  valueFrom:
    secretKeyRef:
      name: {{ $c.secret }}
      key: {{ $c.key }}
{{- end -}}

{{/* env entries for a container that talks to ONE database: PGPASSWORD from the Secret (libpq reads it
     when the URL names no password) and <urlVar>, the password-less URL; optional "query" as above. */}}
{{- define "ragfr.db.urlEnv" -}}
{{- include "ragfr.db.passwordEnv" (dict "root" .root "db" .db "var" "PGPASSWORD") }}
- name: {{ .urlVar }}
  value: {{ include "ragfr.db.url" . | quote }}
{{- end -}}

{{/* libpq variables for psql-based waits (the ragdb image is the client everywhere). */}}
{{- define "ragfr.db.pgEnv" -}}
{{- $c := include "ragfr.db.conn" (dict "root" .root "db" "ragfr") | fromYaml -}}
- name: PGHOST
  value: {{ $c.host | quote }}
- name: PGPORT
  value: {{ $c.port | quote }}
- name: PGUSER
  value: {{ $c.user | quote }}
- name: PGDATABASE
  value: {{ $c.database | quote }}
- name: PGSSLMODE
  value: {{ $c.sslmode | quote }}
{{- with $c.sslrootcert }}
- name: PGSSLROOTCERT
  value: {{ . | quote }}
{{- end }}
- name: PGCONNECT_TIMEOUT
  value: "5"
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $c.secret }}
      key: {{ $c.key }}
{{- end -}}

{{/* Init container of the migrations Job (database.mode=internal): makes Open WebUI's role and the
     exporter's pg_monitor role, or brings them in line with the Secret, as the superuser (files/ragdb-roles.sh).
     In external mode the operator makes them (docs/install.md); in cnpg mode the Cluster's managed.roles. */}}
{{- define "ragfr.db.rolesContainer" -}}
{{- $secret := include "ragfr.db.internalSecret" .root -}}
- name: db-roles
  image: {{ include "ragfr.image" (dict "root" .root "image" .root.Values.ragdb.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" .root "image" .root.Values.ragdb.image) }}
  command: ["/bin/sh", "/ragfr-scripts/ragdb-roles.sh"]
  env:
    - name: PGHOST
      value: {{ include "ragfr.componentName" (dict "root" .root "component" "ragdb") | quote }}
    - name: PGPORT
      value: {{ .root.Values.ragdb.service.port | quote }}
    - name: PGUSER
      value: postgres
    {{- $c := include "ragfr.db.conn" (dict "root" .root "db" "ragfr") | fromYaml }}
    - name: PGSSLMODE
      value: {{ $c.sslmode | quote }}
    {{- with $c.sslrootcert }}
    - name: PGSSLROOTCERT
      value: {{ . | quote }}
    {{- end }}
    - name: PGCONNECT_TIMEOUT
      value: "5"
    - name: PGPASSWORD
      valueFrom:
        secretKeyRef: {name: {{ $secret }}, key: postgres-password}
    - name: APP_USER
      value: {{ .root.Values.database.ragfr.appUser | quote }}
    - name: APP_PASSWORD
      valueFrom:
        secretKeyRef: {name: {{ $secret }}, key: ragfr-app-password}
    - name: MONITOR_USER
      value: {{ .root.Values.ragdb.metrics.user | quote }}
    - name: MONITOR_PASSWORD
      valueFrom:
        secretKeyRef: {name: {{ $secret }}, key: monitor-password}
  {{- include "ragfr.smallContainer" .root | nindent 2 }}
{{- end -}}

{{/* Init container that blocks until PostgreSQL accepts connections as the ragfr role. */}}
{{- define "ragfr.db.waitContainer" -}}
- name: wait-for-postgres
  image: {{ include "ragfr.image" (dict "root" .root "image" .root.Values.ragdb.image) }}
  imagePullPolicy: {{ include "ragfr.imagePullPolicy" (dict "root" .root "image" .root.Values.ragdb.image) }}
  command: ["/bin/sh", "/ragfr-scripts/wait-for-postgres.sh"]
  env:
    {{- include "ragfr.db.pgEnv" (dict "root" .root) | nindent 4 }}
    - name: WAIT_TIMEOUT_SECONDS
      value: {{ .root.Values.migrations.waitTimeoutSeconds | quote }}
  {{- include "ragfr.smallContainer" .root | nindent 2 }}
{{- end -}}

{{/*
/dev/shm for ragdb: maintenance_work_mem (PostgreSQL units: kB, MB, GB, TB; a bare number is kB) plus 128Mi
for parallel queries' shared hash tables, in Mi. Anything else fails with one sentence.
*/}}
{{- define "ragfr.shmSizeLimit" -}}
{{- $s := toString . | trim -}}
{{- $num := regexFind "^[0-9]+" $s -}}
{{- $unit := trimPrefix $num $s | trim -}}
{{- $n := int64 (default "0" $num) -}}
{{- $mib := 0 -}}
{{- if not $num -}}
{{- fail (printf "ragdb.settings.maintenance_work_mem=%q: give a PostgreSQL memory size such as 512MB or 1GB" $s) -}}
{{- else if eq $unit "TB" -}}{{- $mib = mul $n 1048576 -}}
{{- else if eq $unit "GB" -}}{{- $mib = mul $n 1024 -}}
{{- else if eq $unit "MB" -}}{{- $mib = $n -}}
{{- else if or (eq $unit "kB") (eq $unit "") -}}{{- $mib = div (add $n 1023) 1024 -}}
{{- else -}}
{{- fail (printf "ragdb.settings.maintenance_work_mem=%q: give a PostgreSQL memory size such as 512MB or 1GB" $s) -}}
{{- end -}}
{{- printf "%dMi" (add $mib 128) -}}
{{- end -}}
