#!/usr/bin/env bash
# deploy_deb: builds the .deb with CPack from the build tree, unpacks it into a scratch root with
# dpkg -x, checks its metadata and layout, then starts the installed revkv-server with the installed
# default config (data directory and ports overridden by flags) and asks it for its health over gRPC
# (the installed revkv-healthcheck), over HTTP (/healthz), with the installed clients (revkv,
# revkv-bench) and with etcdctl.
#
#   deb_test.sh <source dir> <build dir>
source "$(dirname "$0")/lib.sh"
src=$1
build=$2

note "cpack -G DEB"
[[ -f $build/CPackConfig.cmake ]] || fail "$build/CPackConfig.cmake is missing: cmake/Packaging.cmake was not included"
(cd "$build" && cpack --config CPackConfig.cmake -G DEB -B "$SCRATCH/cpack") >"$SCRATCH/cpack.log" 2>&1 ||
  { cat "$SCRATCH/cpack.log" >&2; fail "cpack failed (is every installed target built?)"; }
debs=("$SCRATCH"/cpack/revkv_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one revkv_*.deb, found: ${debs[*]}"
deb=${debs[0]}
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

note "control fields"
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == revkv ]] || fail "Package is '$(field Package)', expected revkv"
depends=$(field Depends)
echo "Depends: $depends"
for lib in libgrpc++1.51 libprotobuf32 libabsl20220623 libfmt9 libc6 libstdc++6; do
  grep -qE "(^|, )$(printf '%s' "$lib" | sed 's/[+.]/\\&/g')( |,|$)" <<<"$depends" || fail "Depends lacks $lib"
done
grep -q "libspdlog1.10" <<<"$depends" || fail "Depends lacks spdlog"
grep -q "systemd | adduser" <<<"$depends" || fail "Depends lacks 'systemd | adduser' (postinst creates the user)"

note "maintainer scripts and conffiles"
control="$SCRATCH/control"
dpkg-deb -e "$deb" "$control"
for script in postinst prerm postrm; do
  [[ -x $control/$script ]] || fail "$script is missing or not executable"
  sh -n "$control/$script" || fail "$script: shell syntax error"
done
grep -qx "/etc/revkv/revkv.toml" "$control/conffiles" || fail "conffiles does not list /etc/revkv/revkv.toml"
grep -q "revkv.conf\|adduser" "$control/postinst" || fail "postinst does not create the revkv user"
grep -q "/var/lib/revkv" "$control/postinst" || fail "postinst does not create /var/lib/revkv"

note "dpkg -x into a scratch root"
root="$SCRATCH/root"
dpkg -x "$deb" "$root"
for f in usr/bin/revkv-server usr/bin/revkv-healthcheck usr/bin/revkv usr/bin/revkv-bench; do
  [[ -x $root/$f ]] || fail "/$f is missing from the package"
done
for f in usr/lib/systemd/system/revkv.service usr/lib/sysusers.d/revkv.conf etc/revkv/revkv.toml \
  usr/share/doc/revkv/operations.md usr/share/doc/revkv/configuration.md \
  usr/share/doc/revkv/examples/prometheus/revkv.rules.yml usr/share/doc/revkv/examples/grafana/revkv-dashboard.json; do
  [[ -f $root/$f ]] || fail "/$f is missing from the package"
done
cmp -s "$root/etc/revkv/revkv.toml" "$src/deploy/revkv.toml" || fail "/etc/revkv/revkv.toml differs from deploy/revkv.toml"

note "license, copyright and man pages"
copyright="$root/usr/share/doc/revkv/copyright"
[[ -f $copyright ]] || fail "/usr/share/doc/revkv/copyright is missing"
head -1 "$copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "the copyright file is not in Debian's machine-readable format"
grep -q '^License: Apache-2.0$' "$copyright" || fail "the copyright file does not name Apache-2.0"
grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright" || fail "the copyright file does not point at the license text"
cmp -s "$src/LICENSE" /usr/share/common-licenses/Apache-2.0 || fail "LICENSE is not the Apache-2.0 text Debian ships"
[[ -f $root/usr/share/doc/revkv/migration-from-etcd.md ]] || fail "the migration guide is missing"
for page in revkv-server revkv revkv-bench; do
  man_file="$root/usr/share/man/man1/$page.1.gz"
  [[ -f $man_file ]] || fail "/usr/share/man/man1/$page.1.gz is missing"
  text=$(zcat "$man_file")
  # roff escapes '-' as '\-'.
  grep -q '^\.TH "\?'"${page^^}"'"\? "\?1"\? ' <<<"$text" || fail "$page.1: no .TH header for section 1"
  grep -qF -- '\-\-help' <<<"$text" || fail "$page.1 does not describe the options"
  grep -q '3\.4\.0+revkv' <<<"$text" || fail "$page.1 does not carry the version"
done
grep -qF -- '\-\-max\-heap' <(zcat "$root/usr/share/man/man1/revkv-server.1.gz") || fail "revkv-server.1 lacks --max-heap"
cmp -s "$root/usr/lib/systemd/system/revkv.service" "$src/deploy/systemd/revkv.service" ||
  fail "the installed unit differs from deploy/systemd/revkv.service (prefix /usr must leave it as is)"
if readelf -d "$root/usr/bin/revkv-server" | grep -qE 'RPATH|RUNPATH'; then
  fail "the installed revkv-server carries an RPATH into the build tree"
fi
for b in revkv-server revkv-healthcheck revkv revkv-bench; do
  if ldd "$root/usr/bin/$b" | grep -q "not found"; then
    ldd "$root/usr/bin/$b" >&2
    fail "the installed $b needs a library that is not installed"
  fi
done

note "the installed unit verifies against the installed binary"
sed "s#^ExecStart=/usr/bin/revkv-server#ExecStart=$root/usr/bin/revkv-server#" \
  "$root/usr/lib/systemd/system/revkv.service" >"$SCRATCH/revkv.service"
out=$(cd "$SCRATCH" && systemd-analyze verify "$SCRATCH/revkv.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify warns: $out"
mkdir -p "$SCRATCH/sysroot/etc"
systemd-sysusers --root="$SCRATCH/sysroot" --dry-run "$root/usr/lib/sysusers.d/revkv.conf" >/dev/null 2>&1 ||
  fail "systemd-sysusers rejects /usr/lib/sysusers.d/revkv.conf"

note "the installed binary starts with the installed config"
start_server "$root/usr/bin/revkv-server" --config "$root/etc/revkv/revkv.toml"
grep -qF "$root/etc/revkv/revkv.toml" "$SERVER_LOG" ||
  fail "the startup log does not name the installed config file"
"$root/usr/bin/revkv-healthcheck" --endpoint "127.0.0.1:$GRPC_PORT" --timeout 5 ||
  fail "grpc.health.v1 does not answer SERVING"
[[ $(ops_get /healthz) == ok ]] || fail "/healthz does not answer ok"
"$root/usr/bin/revkv" --endpoints "127.0.0.1:$GRPC_PORT" put deploy/cli from-revkv >/dev/null || fail "revkv put"
got=$("$root/usr/bin/revkv" --endpoints "127.0.0.1:$GRPC_PORT" get deploy/cli)
[[ $got == from-revkv ]] || fail "revkv get returned '$got'"
"$root/usr/bin/revkv-bench" get --endpoints "127.0.0.1:$GRPC_PORT" --total 100 --warmup 0 --connections 1 \
  --quiet >"$SCRATCH/bench.txt" 2>&1 || { cat "$SCRATCH/bench.txt" >&2; fail "revkv-bench get"; }
if need_tool etcdctl etcd-client; then
  ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$GRPC_PORT" put deploy/key value >/dev/null || fail "etcdctl put"
  got=$(ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$GRPC_PORT" get --print-value-only deploy/key)
  [[ $got == value ]] || fail "etcdctl get returned '$got'"
fi
stop_server
grep -q "bye" "$SERVER_LOG" || fail "the server did not log its clean shutdown"
echo "PASS"
