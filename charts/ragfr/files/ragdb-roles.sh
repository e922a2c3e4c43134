#!/bin/sh
# The login roles of the chart's internal ragdb besides the owners (docs/install.md, "Database roles"), made or
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
