#!/bin/sh
# The login roles of the chart's internal ragdb besides the owners (docs/reference/configuration.md, "Database roles"), made or
# brought in line on EVERY run of the migrations Job by the superuser, so an upgrade from a release without
# them gets them and a changed password in the Secret takes effect:
#   APP_USER      Open WebUI's role in ragfr's database: LOGIN and nothing else here; its table privileges
#                 are granted by `ragfr migrate --app-role` (the Job's next container) as the schema owner.
#   MONITOR_USER  postgres_exporter's role: LOGIN, member of pg_monitor (statistics), no table access.
# libpq reads PGHOST/PGPORT/PGUSER/PGPASSWORD (the superuser's) from the env; the roles' passwords are read
# from the env too (never on a command line, where any process of the pod could read them) and only their
# SCRAM verifiers reach the server, through psql 15's \getenv, quoted by psql (:'var'), never spliced.
set -eu
: "${APP_PASSWORD:?}" "${MONITOR_PASSWORD:?}"  # \getenv would leave an unset one unset, and psql fail on its name
# The password's SCRAM verifier (scram-verifier.pl, beside this script in the chart's scripts).
scram_verifier() { perl "$(dirname "$0")/scram-verifier.pl" "$1"; }
APP_VERIFIER=$(scram_verifier APP_PASSWORD)
MONITOR_VERIFIER=$(scram_verifier MONITOR_PASSWORD)
export APP_VERIFIER MONITOR_VERIFIER
psql -X -v ON_ERROR_STOP=1 --dbname postgres \
  -v app_user="$APP_USER" -v monitor_user="$MONITOR_USER" <<'SQL'
\getenv app_pw APP_VERIFIER
\getenv monitor_pw MONITOR_VERIFIER
SELECT format('CREATE ROLE %I', :'app_user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'app_user')
\gexec
ALTER ROLE :"app_user" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'app_pw';
SELECT format('CREATE ROLE %I', :'monitor_user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'monitor_user')
\gexec
ALTER ROLE :"monitor_user" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'monitor_pw';
GRANT pg_monitor TO :"monitor_user";
SQL
echo "ragdb-roles: $APP_USER (application) and $MONITOR_USER (pg_monitor) are in place"
