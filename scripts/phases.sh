# Phases for the test command (sourced by .ci/run and scripts/test.sh): each
# phase's wall time is kept in $PHASES_FILE, so the run can end with a table of
# where its time went (`phases_table`).
#
#   phase NAME COMMAND...      runs it now; its output goes where ours does
#   try_phase NAME COMMAND...  the same, a failure noted in PHASES_FAILED and
#                              the caller going on
#   spawn ID NAME COMMAND...   runs it in the background (at the lowest CPU
#                              priority with SPAWN_NICE=19), its output kept in
#                              $PHASES_LOGS/ID.log until it is waited for
#   wait_for ID...             waits for each, prints its log and fails as it did
#   phases_table               the table: every phase's start, wall time and
#                              status, and the run's total
#
# Phases started with `spawn` overlap the rest: their rows say where they began
# (seconds from the run's start), so the critical path can be read off the table.
# PHASES_FILE and PHASES_START are exported, so a nested script adds its rows to
# the same table.

: "${PHASES_START:=$(date +%s)}"
: "${PHASES_FILE:=$(mktemp)}"
: "${PHASES_LOGS:=$(mktemp -d)}"
export PHASES_START PHASES_FILE PHASES_LOGS
declare -A SPAWNED=() SPAWN_NAMES=()

_phase_row() { # NAME START END STATUS
  printf '%s\t%s\t%s\t%s\n' "$1" "$(($2 - PHASES_START))" "$(($3 - $2))" "$4" >>"$PHASES_FILE"
}

# A phase's commands run with errexit in force whatever the caller's context.
# A shell function called on the left of `||` (or in `if`) runs with `set -e`
# ignored, subshells included, so a failing command inside it would not stop
# it; an asynchronous subshell started where errexit holds, then waited for,
# keeps it. So nothing here calls a phase's commands through `||`: call
# `phase` and `try_phase` on a line of their own.
_phase() { # _phase strict|keep NAME COMMAND...
  local mode=$1 name=$2 t0 rc=0 pid
  shift 2
  t0=$(date +%s)
  printf '\n== [%ss] %s\n' "$((t0 - PHASES_START))" "$name"
  ( set -e; "$@" ) &
  pid=$!
  wait "$pid" || rc=$?
  _phase_row "$name" "$t0" "$(date +%s)" "$([ "$rc" -eq 0 ] && echo ok || echo "failed ($rc)")"
  if [ "$rc" -ne 0 ] && [ "$mode" = keep ]; then
    PHASES_FAILED=1
    return 0
  fi
  return "$rc"
}
phase() { _phase strict "$@"; }
# try_phase NAME COMMAND...: a phase whose failure is kept in PHASES_FAILED
# instead of stopping the caller, so the phases after it still run.
PHASES_FAILED=0
try_phase() { _phase keep "$@"; }

spawn() {
  local id=$1 name=$2 log
  shift 2
  log="$PHASES_LOGS/$id.log"
  printf '\n== [%ss] %s: started in the background (log %s)\n' "$(($(date +%s) - PHASES_START))" "$name" "$log"
  (
    t0=$(date +%s)
    rc=0
    # The whole subshell, so a shell function's commands are niced too.
    if [ "${SPAWN_NICE:-0}" -gt 0 ]; then
      renice -n "$SPAWN_NICE" -p "$BASHPID" >/dev/null
    fi
    ( set -e; "$@" ) &
    pid=$!
    wait "$pid" || rc=$?
    _phase_row "$name (background)" "$t0" "$(date +%s)" "$([ "$rc" -eq 0 ] && echo ok || echo "failed ($rc)")"
    exit "$rc"
  ) </dev/null >"$log" 2>&1 &
  SPAWNED[$id]=$!
  SPAWN_NAMES[$id]=$name
}

# spawned_stop: ends every background phase still running (their process
# groups' children included), for an exit that does not wait for them.
spawned_stop() {
  local id
  for id in "${!SPAWNED[@]}"; do
    pkill -TERM -P "${SPAWNED[$id]}" 2>/dev/null || true
    kill -TERM "${SPAWNED[$id]}" 2>/dev/null || true
  done
}

wait_for() {
  local id rc=0 one
  for id in "$@"; do
    one=0
    wait "${SPAWNED[$id]}" || one=$?
    printf '\n== [%ss] %s: done (%s)\n' "$(($(date +%s) - PHASES_START))" "${SPAWN_NAMES[$id]}" \
      "$([ "$one" -eq 0 ] && echo ok || echo "failed, exit $one")"
    cat "$PHASES_LOGS/$id.log"
    [ "$one" -eq 0 ] || rc=$one
  done
  return "$rc"
}

phases_table() {
  local total=$(($(date +%s) - PHASES_START))
  {
    printf '%-78s %7s %7s  %s\n' "phase" "start" "wall" "status"
    sort -t$'\t' -k2,2n -s "$PHASES_FILE" | while IFS=$'\t' read -r name start wall status; do
      printf '%-78.78s %6ss %6ss  %s\n' "$name" "$start" "$wall" "$status"
    done
    printf '%-78s %7s %6ss\n' "total" "" "$total"
  }
}
