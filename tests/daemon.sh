# Sourced by tests/c/run.sh and tests/go/run.sh: starts a plimsolld (disabled
# provider, one random bearer token) on a free loopback port, exports
# PLIMSOLL_TEST_URL and PLIMSOLL_TEST_TOKEN, and stops it on exit.
#
#   start_test_daemon PLIMSOLLD_BINARY LOG_FILE
start_test_daemon() {
  local bin=$1 log=$2 addr=
  PLIMSOLL_TEST_TOKEN="test-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  env -u SANDBOX_PROVIDER PLIMSOLL_ADDR=127.0.0.1:0 PLIMSOLL_METRICS_ADDR=off \
    PLIMSOLL_LOG_FORMAT=json PLIMSOLL_TOKEN="$PLIMSOLL_TEST_TOKEN" "$bin" 2>"$log" &
  TEST_DAEMON_PID=$!
  trap 'kill "$TEST_DAEMON_PID" 2>/dev/null || true; wait "$TEST_DAEMON_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*"message":"listening".*"addr":"\([^"]*\)".*/\1/p' "$log" | head -n1)
    [ -n "$addr" ] && break
    kill -0 "$TEST_DAEMON_PID" 2>/dev/null || { cat "$log" >&2; echo "plimsolld exited" >&2; return 1; }
    sleep 0.1
  done
  [ -n "$addr" ] || { cat "$log" >&2; echo "plimsolld did not announce its address" >&2; return 1; }
  export PLIMSOLL_TEST_URL="http://$addr" PLIMSOLL_TEST_TOKEN
  echo "plimsolld at $PLIMSOLL_TEST_URL"
}
