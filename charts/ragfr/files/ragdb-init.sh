#!/bin/sh
# First-boot initialisation of ragdb (run once by the PostgreSQL image entrypoint from
# /docker-entrypoint-initdb.d): the two roles, their databases, and the extensions the ragfr
# migrations need, created here as superuser so the migrations can run as the unprivileged owner.
set -eu
: "${RAGFR_PASSWORD:?}" "${OPENWEBUI_PASSWORD:?}"  # \getenv would leave an unset one unset, and psql fail on its name
# scram_verifier VAR: the SCRAM-SHA-256 verifier (RFC 5802/7677, PostgreSQL's pg_authid format
# SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>) of the password in env var VAR, computed HERE, like
# psql's \password: the server is sent the verifier, so the cleartext is never in SQL text that pg_monitor
# members see in pg_stat_activity, nor in a server log line. Perl + Digest::SHA are in every ragdb image
# (postgresql-common depends on perl); the password is read from the env, never from argv. Non-ASCII is
# refused: the server would SASLprep it at login, which this does not reimplement.
scram_verifier() {
  perl -MDigest::SHA=hmac_sha256,sha256 -MMIME::Base64 -e '
    my $pw = $ENV{$ARGV[0]};
    die "ragdb: $ARGV[0] is empty\n" unless defined $pw && length $pw;
    die "ragdb: $ARGV[0] holds non-ASCII characters; use an ASCII password\n" if $pw =~ /[^\x00-\x7f]/;
    open(my $r, "<:raw", "/dev/urandom") or die "ragdb: /dev/urandom: $!\n";
    read($r, my $salt, 16) == 16 or die "ragdb: short read from /dev/urandom\n";
    my $u = hmac_sha256($salt . pack("N", 1), $pw); my $salted = $u;
    for (2 .. 4096) { $u = hmac_sha256($u, $pw); $salted ^= $u; }
    my $b64 = sub { encode_base64($_[0], "") };
    print "SCRAM-SHA-256\$4096:", $b64->($salt), "\$", $b64->(sha256(hmac_sha256("Client Key", $salted))),
          ":", $b64->(hmac_sha256("Server Key", $salted)), "\n";
  ' "$1"
}
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
