{{/*
Database connection, one definition for the three modes (internal ragdb, external, CloudNativePG); the
objects' names are in _helpers.tpl, TLS in _db-tls.tpl. No URL ever holds a password. Kubernetes' $(VAR) expansion cannot percent-encode, so a password pasted
into a URL breaks it as soon as it holds `@ / ? # %`, a quote or a space. The password reaches libpq on
its own instead: PGPASSWORD from the Secret for the ragfr containers (one database each), a libpq password
file written by an init container for Open WebUI (two databases, two passwords: db-passfile in
openwebui-deployment.yaml).
*/}}

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

{{/* The password-less URL of database "ragfr" or "openwebui"; optional "query": more URL parameters,
     already percent-encoded. User and database name are percent-encoded for the URL's userinfo and path. */}}
{{- define "ragfr.db.url" -}}
{{- $c := include "ragfr.db.conn" (dict "root" .root "db" .db) | fromYaml -}}
{{- $root := "" -}}
{{- with $c.sslrootcert }}{{ $root = printf "&sslrootcert=%s" . }}{{ end -}}
{{- printf "postgresql://%s@%s:%v/%s?sslmode=%s%s%s" (toString $c.user | urlquery | replace "+" "%20") $c.host $c.port (toString $c.database | urlquery | replace "+" "%20") $c.sslmode $root (ternary (printf "&%s" .query) "" (hasKey . "query")) -}}
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
