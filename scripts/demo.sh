#!/usr/bin/env bash
# plimsoll's main job on the embedded default: start plimsolld and run a snippet
# through the published Python client, printing the answer, its tier and its
# verified record.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${PLIMSOLL_VENV:-$ROOT/target/venv}
PROVIDER=${SANDBOX_PROVIDER:-wasm}

if [ "$PROVIDER" = wasm ] && [ -x scripts/install-wasm-toolchain.sh ]; then
  bash scripts/install-wasm-toolchain.sh >&2
fi
cargo build -q -p plimsolld
if ! "$VENV/bin/python" -c 'import plimsoll_client' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q plimsoll-client==0.23.0
fi
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
LOG=$(mktemp)
SANDBOX_PROVIDER=$PROVIDER PLIMSOLL_TOKEN=$TOKEN PLIMSOLL_ADDR=127.0.0.1:0 PLIMSOLL_METRICS_ADDR=off PLIMSOLL_LOG_FORMAT=json \
  target/debug/plimsolld 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 1 300); do
  ADDR=$(grep -o '"addr":"[^"]*"' "$LOG" | head -1 | cut -d'"' -f4 || true)
  [ -n "$ADDR" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 0.1
done
PLIMSOLL_URL="http://$ADDR" PLIMSOLL_DEMO_TOKEN=$TOKEN "$VENV/bin/python" - <<'PY'
import os
import plimsoll_client
from plimsoll_client import errors
c = plimsoll_client.Client(os.environ["PLIMSOLL_URL"], token=os.environ["PLIMSOLL_DEMO_TOKEN"])
info = c.describe()
print(f"daemon: provider={info.provider} tier={info.isolation} protocol={info.protocol}")
try:
    r = c.run_javascript("console.log(6*7)", minimum_isolation="process")
    print(f"stdout={r.stdout.decode(errors='replace')!r} exit={r.exit_code} isolation={r.isolation}")
    print(f"record verified by the client: {r.record.sha256}")
except errors.PlimsollError as e:
    print(f"refused: {type(e).__name__} (not_dispatched={e.not_dispatched}): {e}")
PY
