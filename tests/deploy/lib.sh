# Helpers for the deploy tests (sourced, not run). Every test gets a scratch directory that is removed on
# exit, and every server it starts is stopped on exit, whether the test passes or not.
#
#   source lib.sh
#   start_server <binary> [args...]   starts a server on two free loopback ports with a fresh data
#                                     directory (appended flags override earlier ones); sets SERVER_PID,
#                                     GRPC_PORT, OPS_PORT, SERVER_LOG and waits until /healthz answers
#   stop_server                       SIGTERM, then checks the server exited 0 within 15 s
#   fail <message>                    prints the message (and the server log tail) and exits 1
#   need_tool <command> <package>     status 0 if the command is installed; else 1 with a note (the
#                                     caller leaves out what needs it), or, with REVKV_REQUIRE_TOOLS=1
#                                     (.ci/run sets it), a failure

set -euo pipefail

PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/revkv-deploy-test.XXXXXX")
SERVER_PID=""
SERVER_LOG=""
GRPC_PORT=""
OPS_PORT=""

cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  if [[ -n $SERVER_LOG && -f $SERVER_LOG ]]; then
    echo "--- server log (tail) ---" >&2
    tail -n 40 "$SERVER_LOG" >&2
  fi
  exit 1
}

note() { echo "== $*"; }

# The C++ tests' REVKV_NEED_TOOL (tests/support/external_tools.h) and deploytest.need_tool do the same.
need_tool() {
  command -v "$1" >/dev/null && return 0
  if [[ ${REVKV_REQUIRE_TOOLS:-0} == 1 ]]; then
    fail "$1 is not installed (Debian package $2; scripts/setup installs it) and REVKV_REQUIRE_TOOLS=1 makes a missing tool a failure"
  fi
  note "$1 is not installed (Debian package $2): skipping what needs it"
  return 1
}

# Two distinct free loopback ports, printed as "grpc ops". A port may be taken between this check and
# the server's bind; start_server retries with new ports when that happens.
free_ports() {
  "$PY" - <<'EOF'
import socket
socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# GET http://127.0.0.1:<port><path> into stdout; fails (status 1) on an HTTP or connection error.
# (Python rather than curl: curl is not among the packages scripts/setup installs.)
http_get() {
  "$PY" -c 'import sys, urllib.request
try:
    sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])).read().decode())
except Exception:
    sys.exit(1)' "http://127.0.0.1:$1$2" "${3:-5}"
}
ops_get() { http_get "$OPS_PORT" "$1"; }

start_server() {
  local binary=$1
  shift
  [[ -x $binary ]] || fail "$binary is missing: build the project first (cmake --build <build dir>)"
  local attempt
  for attempt in 1 2 3; do
    read -r GRPC_PORT OPS_PORT < <(free_ports)
    local data="$SCRATCH/data.$attempt"
    SERVER_LOG="$SCRATCH/server.$attempt.log"
    "$binary" "$@" --data-dir="$data" --listen="127.0.0.1:$GRPC_PORT" \
      --metrics-listen="127.0.0.1:$OPS_PORT" --log-level=info >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    local i
    for i in $(seq 1 100); do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
      if http_get "$OPS_PORT" /healthz 1 >/dev/null 2>&1; then
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then fail "the server did not answer /healthz within 10 s"; fi
    wait "$SERVER_PID" || true
    SERVER_PID=""
    if ! grep -qiE "address already in use|address in use" "$SERVER_LOG"; then
      fail "the server exited during startup: $binary $*"
    fi
  done
  fail "no free ports after 3 attempts"
}

stop_server() {
  kill -TERM "$SERVER_PID"
  local i
  for i in $(seq 1 150); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$SERVER_PID" 2>/dev/null && fail "the server did not exit within 15 s of SIGTERM"
  local status=0
  wait "$SERVER_PID" || status=$?
  SERVER_PID=""
  [[ $status -eq 0 ]] || fail "the server exited with status $status after SIGTERM"
}
