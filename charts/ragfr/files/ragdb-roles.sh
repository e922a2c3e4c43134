#!/bin/sh
# The login roles of the chart's internal ragdb besides the owners (docs/install.md, "Database roles"), made or
# brought in line on EVERY run of the migrations Job by the superuser, so an upgrade from a release without
# them gets them and a changed password in the Secret takes effect:
#   APP_USER      Open WebUI's role in ragfr's database: LOGIN and nothing else here; its table privileges
#                 are granted by `ragfr migrate --app-role` (the Job's next container) as the schema owner.
#   MONITOR_USER  postgres_exporter's role: LOGIN, member of pg_monitor (statistics), no table access.
# libpq reads PGHOST/PGPORT/PGUSER/PGPASSWORD (the superuser's) from the env; psql 15's \getenv reads the
# passwords from the env too (never on a command line, where any process of the pod could read them), and
# psql quotes them (:'var'), never spliced into SQL text.
set -eu
: "${APP_PASSWORD:?}" "${MONITOR_PASSWORD:?}"  # \getenv would leave an unset one unset, and psql fail on its name
psql -X -v ON_ERROR_STOP=1 --dbname postgres \
  -v app_user="$APP_USER" -v monitor_user="$MONITOR_USER" <<'SQL'
\getenv app_pw APP_PASSWORD
\getenv monitor_pw MONITOR_PASSWORD
SELECT format('CREATE ROLE %I', :'app_user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'app_user')
\gexec
ALTER ROLE :"app_user" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'app_pw';
SELECT format('CREATE ROLE %I', :'monitor_user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'monitor_user')
\gexec
ALTER ROLE :"monitor_user" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'monitor_pw';
GRANT pg_monitor TO :"monitor_user";
SQL
echo "ragdb-roles: $APP_USER (application) and $MONITOR_USER (pg_monitor) are in place"
