#!/usr/bin/env bash
# deploy_systemd: deploy/systemd/revkv.service passes `systemd-analyze verify` with no warning at all and
# `systemd-analyze security --offline` at an exposure of 2.0 or better, and the sysusers file is valid.
# verify needs the ExecStart binary to exist, so a copy of the unit points at the built revkv-server;
# neither command needs a running systemd.
#
#   systemd_test.sh <source dir> <revkv-server>
source "$(dirname "$0")/lib.sh"
src=$1
server=$2
unit="$src/deploy/systemd/revkv.service"
[[ -x $server ]] || fail "$server is missing: build revkv-server first"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (Debian package systemd; scripts/setup installs it)"

grep -q '^ExecStart=/usr/bin/revkv-server --config /etc/revkv/revkv.toml$' "$unit" ||
  fail "ExecStart must run /usr/bin/revkv-server --config /etc/revkv/revkv.toml (the package's layout)"
sed "s#^ExecStart=/usr/bin/revkv-server#ExecStart=$server#" "$unit" >"$SCRATCH/revkv.service"

note "systemd-analyze verify"
out=$(cd "$SCRATCH" && systemd-analyze verify "$SCRATCH/revkv.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify warns: $out"

note "systemd-analyze security --offline (exposure at most 2.0)"
# --threshold counts tenths: 20 is the "2.0" systemd prints.
report=$(cd "$SCRATCH" && systemd-analyze security --offline=true --threshold=20 "$SCRATCH/revkv.service" 2>&1) ||
  fail "exposure over 2.0: $(grep 'Overall exposure' <<<"$report")"
grep 'Overall exposure' <<<"$report"

note "the directives the unit promises"
for directive in 'Type=notify' 'NotifyAccess=main' 'User=revkv' 'StateDirectory=revkv' 'ProtectSystem=strict' 'NoNewPrivileges=yes' 'PrivateTmp=yes' \
  'ProtectHome=yes' 'CapabilityBoundingSet=' 'Restart=on-failure' 'KillSignal=SIGTERM'; do
  grep -qx "$directive" "$unit" || fail "the unit lacks $directive"
done
grep -qE '^LimitNOFILE=[0-9]+$' "$unit" || fail "the unit lacks LimitNOFILE"
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$unit")
[[ -n $stop && $stop -gt 5 ]] || fail "TimeoutStopSec must leave the server its 5 s drain (found '${stop}')"

note "sysusers"
mkdir -p "$SCRATCH/root/etc"
systemd-sysusers --root="$SCRATCH/root" --dry-run "$src/deploy/systemd/revkv.sysusers" 2>&1 | tee "$SCRATCH/sysusers.log"
grep -q "Creating user 'revkv'" "$SCRATCH/sysusers.log" || fail "the sysusers file does not create the user revkv"
grep -q '/var/lib/revkv' "$src/deploy/systemd/revkv.sysusers" || fail "the revkv user's home should be /var/lib/revkv"
echo "PASS"
