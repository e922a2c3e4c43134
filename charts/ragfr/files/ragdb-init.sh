#!/bin/sh
# First-boot initialisation of ragdb (run once by the PostgreSQL image entrypoint from
# /docker-entrypoint-initdb.d): the two roles, their databases, and the extensions the ragfr
# migrations need, created here as superuser so the migrations can run as the unprivileged owner.
set -eu
: "${RAGFR_PASSWORD:?}" "${OPENWEBUI_PASSWORD:?}"  # \getenv would leave an unset one unset, and psql fail on its name
# Passwords come from the env through psql 15's \getenv, never on a command line.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v ragfr_db="$RAGFR_DB" -v ragfr_user="$RAGFR_USER" \
  -v owui_db="$OPENWEBUI_DB" -v owui_user="$OPENWEBUI_USER" <<'SQL'
\getenv ragfr_pw RAGFR_PASSWORD
\getenv owui_pw OPENWEBUI_PASSWORD
CREATE ROLE :"ragfr_user" LOGIN PASSWORD :'ragfr_pw';
CREATE ROLE :"owui_user" LOGIN PASSWORD :'owui_pw';
CREATE DATABASE :"ragfr_db" OWNER :"ragfr_user";
CREATE DATABASE :"owui_db" OWNER :"owui_user";
\connect :"ragfr_db"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS unaccent;
SQL
