#!/usr/bin/env bash
# Server throughput side by side (docs/benchmarks.md, "Server: revkv vs etcd vs the null gRPC server"):
# starts revkv-server, Debian's etcd 3.4 and revkv-null-server on loopback, each with fsync on (revkv
# --fsync=always, etcd's default), and drives the same workloads with revkv-bench --compare in
# alternating rounds (A B, B A, ...). Client and servers share this machine.
#
#   bench/server/compare.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR defaults to build/main, OUT_DIR to a new directory under /tmp; every report is kept there as
# JSON (one file per comparison) beside the text reports. Environment: DURATION (per round, default
# 10s), ROUNDS (default 4), WARMUP (default 2s), CONNECTIONS (4), INFLIGHT (16), KEYS (10000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/main}
out=${2:-$(mktemp -d /tmp/revkv-compare.XXXXXX)}
mkdir -p "$out"
bench="$build/clients/bench/revkv-bench"
server="$build/server/revkv-server"
null_server="$build/bench/null_server/revkv-null-server"
for b in "$bench" "$server" "$null_server"; do
  [[ -x $b ]] || { echo "compare.sh: $b is missing (build it first)" >&2; exit 2; }
done
command -v etcd >/dev/null || { echo "compare.sh: etcd is missing (scripts/setup installs etcd-server)" >&2; exit 2; }

revkv_port=23791 revkv_ops=23792 etcd_port=23793 etcd_peer=23794 null_port=23795
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

"$server" --listen "127.0.0.1:$revkv_port" --metrics-listen "127.0.0.1:$revkv_ops" \
  --data-dir "$out/revkv-data" --fsync always --log-level warn >"$out/revkv.log" 2>&1 &
pids+=($!)
etcd --name bench --data-dir "$out/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "bench=http://127.0.0.1:$etcd_peer" --log-level warn >"$out/etcd.log" 2>&1 &
pids+=($!)
"$null_server" --listen "127.0.0.1:$null_port" >"$out/null.log" 2>&1 &
pids+=($!)

# Ready when a get answers (revkv-bench exits 0).
for port in $revkv_port $etcd_port $null_port; do
  for _ in $(seq 1 100); do
    if "$bench" get --endpoints "127.0.0.1:$port" --total 1 --warmup 0s --keys 1 --quiet >/dev/null 2>&1; then
      continue 2
    fi
    sleep 0.2
  done
  echo "compare.sh: the server on port $port did not come up (logs in $out)" >&2
  exit 1
done

common=(--connections "${CONNECTIONS:-4}" --inflight "${INFLIGHT:-16}" --value-size 100 --key-size 16
        --keys "${KEYS:-10000}" --preload --duration "${DURATION:-10s}" --warmup "${WARMUP:-2s}"
        --rounds "${ROUNDS:-4}" --quiet)
run() {  # run <name> <A> <B> <workload args...>
  local name=$1 a=$2 b=$3; shift 3
  echo "=== $name: A = $a, B = $b"
  "$bench" "$@" --compare "$a" "$b" "${common[@]}" --json >"$out/$name.json" 2>"$out/$name.txt"
  cat "$out/$name.txt"
}
etcd="127.0.0.1:$etcd_port" revkv="127.0.0.1:$revkv_port" null="127.0.0.1:$null_port"
run put-etcd-vs-revkv "$etcd" "$revkv" put
run get-etcd-vs-revkv "$etcd" "$revkv" get
run mixed-etcd-vs-revkv "$etcd" "$revkv" mixed --read-ratio 0.9
run txn-etcd-vs-revkv "$etcd" "$revkv" txn
run get-null-vs-revkv "$null" "$revkv" get
run put-null-vs-revkv "$null" "$revkv" put

# Pipeline (revkv only): single-key ops on one stream per connection, many in flight.
for w in get put; do
  echo "=== pipeline-$w: revkv, --mode pipeline --inflight 256"
  "$bench" "$w" --mode pipeline --endpoints "$revkv" --connections 4 --inflight 256 --value-size 100 \
    --key-size 16 --keys "${KEYS:-10000}" --preload --duration "${DURATION:-10s}" --warmup "${WARMUP:-2s}" \
    --quiet --json >"$out/pipeline-$w.json" 2>"$out/pipeline-$w.txt"
  cat "$out/pipeline-$w.txt"
done
echo "reports in $out"
