#!/usr/bin/perl
# scram-verifier.pl VAR: the SCRAM-SHA-256 verifier (RFC 5802/7677, PostgreSQL's pg_authid format
# SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>) of the password in environment variable VAR, computed
# here, like psql's \password: the server is sent the verifier, so the cleartext is never in SQL text that
# pg_monitor members see in pg_stat_activity, nor in a server log line. Used by ragdb-init.sh (first boot)
# and ragdb-roles.sh (every migrations Job). Perl + Digest::SHA are in every ragdb image (postgresql-common
# depends on perl); the password is read from the environment, never from argv. Non-ASCII is refused: the
# server would SASLprep it at login, which this does not reimplement.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256 sha256);
use MIME::Base64;
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
