# Sourced by tests/c/run.sh and bindings-go/test.sh: starts three plimsolld on
# free loopback ports with one random bearer token, and stops them on exit:
#
#   PLIMSOLL_TEST_URL           the disabled provider (every run refused)
#   PLIMSOLL_TEST_WASM_URL      the wasm provider (no rate limit)
#   PLIMSOLL_TEST_SESSIONS_URL  docker on runc with sessions (the shared session calls)
#   PLIMSOLL_TEST_TOKEN         the token all accept
#
#   start_test_daemons PLIMSOLLD_BINARY LOG_DIR
TEST_DAEMON_PIDS=()

stop_test_daemons() {
  local pid
  for pid in "${TEST_DAEMON_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

# start_one BINARY LOG [VAR=VALUE…]: sets STARTED_URL to the daemon's address.
start_one() {
  local bin=$1 log=$2 addr=
  shift 2
  env -u SANDBOX_PROVIDER PLIMSOLL_ADDR=127.0.0.1:0 PLIMSOLL_METRICS_ADDR=off \
    PLIMSOLL_LOG_FORMAT=json PLIMSOLL_TOKEN="$PLIMSOLL_TEST_TOKEN" "$@" "$bin" >/dev/null 2>"$log" &
  local pid=$!
  TEST_DAEMON_PIDS+=("$pid")
  for _ in $(seq 1 900); do
    addr=$(sed -n 's/.*"message":"listening".*"addr":"\([^"]*\)".*/\1/p' "$log" | head -n1)
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$addr" ] || { cat "$log" >&2; echo "plimsolld ($*) did not start" >&2; return 1; }
  STARTED_URL="http://$addr"
}

start_test_daemons() {
  local bin=$1 dir=$2
  mkdir -p "$dir"
  trap stop_test_daemons EXIT
  PLIMSOLL_TEST_TOKEN="test-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  export PLIMSOLL_TEST_TOKEN
  start_one "$bin" "$dir/plimsolld-disabled.log"
  PLIMSOLL_TEST_URL=$STARTED_URL
  start_one "$bin" "$dir/plimsolld-wasm.log" SANDBOX_PROVIDER=wasm SANDBOX_RATE_PER_MIN=0
  PLIMSOLL_TEST_WASM_URL=$STARTED_URL
  start_one "$bin" "$dir/plimsolld-sessions.log" SANDBOX_PROVIDER=docker SANDBOX_DOCKER_RUNTIME=runc \
    SANDBOX_MAX_SESSIONS=2 SANDBOX_RATE_PER_MIN=0
  PLIMSOLL_TEST_SESSIONS_URL=$STARTED_URL
  export PLIMSOLL_TEST_URL PLIMSOLL_TEST_WASM_URL PLIMSOLL_TEST_SESSIONS_URL
  echo "plimsolld: disabled at $PLIMSOLL_TEST_URL, wasm at $PLIMSOLL_TEST_WASM_URL, sessions at $PLIMSOLL_TEST_SESSIONS_URL"
}
