#!/usr/bin/env bash
# What serving reads at the durable revision costs (docs/benchmarks.md, "Reads at the durable
# revision"): two revkv-servers with --fsync always, A as shipped and B with
# --measure-reads-before-durable on (reads at the newest commit, no waits: unsafe, measurement only),
# driven by revkv-bench --compare in alternating rounds (A B, B A, ...). Client and servers share this
# machine.
#
#   bench/server/read_visibility.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR defaults to build/main, OUT_DIR to a new directory under /tmp. Environment: DURATION (per
# round, default 8s), ROUNDS (default 4), WARMUP (default 2s), CONNECTIONS (4), INFLIGHT (16), KEYS (10000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/main}
out=${2:-$(mktemp -d /tmp/revkv-reads.XXXXXX)}
mkdir -p "$out"
bench="$build/clients/bench/revkv-bench"
server="$build/server/revkv-server"
for b in "$bench" "$server"; do
  [[ -x $b ]] || { echo "read_visibility.sh: $b is missing (build it first)" >&2; exit 2; }
done

a_port=23801 a_ops=23802 b_port=23803 b_ops=23804
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

"$server" --listen "127.0.0.1:$a_port" --metrics-listen "127.0.0.1:$a_ops" \
  --data-dir "$out/a-data" --fsync always --log-level warn >"$out/a.log" 2>&1 &
pids+=($!)
"$server" --listen "127.0.0.1:$b_port" --metrics-listen "127.0.0.1:$b_ops" \
  --data-dir "$out/b-data" --fsync always --measure-reads-before-durable on --log-level warn >"$out/b.log" 2>&1 &
pids+=($!)
for port in $a_port $b_port; do
  for _ in $(seq 1 100); do
    if "$bench" get --endpoints "127.0.0.1:$port" --total 1 --warmup 0s --keys 1 --quiet >/dev/null 2>&1; then
      continue 2
    fi
    sleep 0.2
  done
  echo "read_visibility.sh: the server on port $port did not come up (logs in $out)" >&2
  exit 1
done

common=(--value-size 100 --key-size 16 --keys "${KEYS:-10000}" --preload --duration "${DURATION:-8s}"
        --warmup "${WARMUP:-2s}" --rounds "${ROUNDS:-4}" --quiet)
a="127.0.0.1:$a_port" b="127.0.0.1:$b_port"
run() {  # run <name> <workload args...>
  local name=$1; shift
  echo "=== $name: A = reads at the durable revision, B = --measure-reads-before-durable on"
  "$bench" "$@" --compare "$a" "$b" "${common[@]}" --json >"$out/$name.json" 2>"$out/$name.txt"
  cat "$out/$name.txt"
}
unary=(--connections "${CONNECTIONS:-4}" --inflight "${INFLIGHT:-16}")
run get get "${unary[@]}"
run mixed mixed --read-ratio 0.9 "${unary[@]}"
run pipeline-mixed mixed --read-ratio 0.9 --mode pipeline --connections 4 --inflight 256
echo "reports in $out"
