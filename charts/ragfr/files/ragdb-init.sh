#!/bin/sh
# First-boot initialisation of ragdb (run once by the PostgreSQL image entrypoint from
# /docker-entrypoint-initdb.d): the two roles, their databases, and the extensions the ragfr
# migrations need, created here as superuser so the migrations can run as the unprivileged owner.
set -eu
: "${RAGFR_PASSWORD:?}" "${OPENWEBUI_PASSWORD:?}"  # \getenv would leave an unset one unset, and psql fail on its name
# The password's SCRAM verifier (scram-verifier.pl, beside this script in the chart's scripts).
scram_verifier() { perl "$(dirname "$0")/scram-verifier.pl" "$1"; }
RAGFR_VERIFIER=$(scram_verifier RAGFR_PASSWORD)
OPENWEBUI_VERIFIER=$(scram_verifier OPENWEBUI_PASSWORD)
export RAGFR_VERIFIER OPENWEBUI_VERIFIER
# Passwords come from the env (never a command line), their verifiers reach psql through its \getenv.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v ragfr_db="$RAGFR_DB" -v ragfr_user="$RAGFR_USER" \
  -v owui_db="$OPENWEBUI_DB" -v owui_user="$OPENWEBUI_USER" <<'SQL'
\getenv ragfr_pw RAGFR_VERIFIER
\getenv owui_pw OPENWEBUI_VERIFIER
CREATE ROLE :"ragfr_user" LOGIN PASSWORD :'ragfr_pw';
CREATE ROLE :"owui_user" LOGIN PASSWORD :'owui_pw';
CREATE DATABASE :"ragfr_db" OWNER :"ragfr_user";
CREATE DATABASE :"owui_db" OWNER :"owui_user";
\connect :"ragfr_db"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS unaccent;
SQL
unset RAGFR_VERIFIER OPENWEBUI_VERIFIER  # sourced by the entrypoint: not handed on to the server
