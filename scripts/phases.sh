# Phases for the test command (sourced by .ci/run and scripts/test.sh): each
# phase's wall time is kept in $PHASES_FILE, so the run can end with a table of
# where its time went (`phases_table`).
#
#   phase NAME COMMAND...      runs it now; its output goes where ours does
#   spawn NAME COMMAND...      runs it in the background (at the lowest CPU
#                              priority with SPAWN_NICE=19), its output kept in
#                              $PHASES_LOGS/NAME.log until it is waited for
#   wait_for NAME...           waits for each, prints its log and fails as it did
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
declare -A SPAWNED=()

_phase_row() { # NAME START END STATUS
  printf '%s\t%s\t%s\t%s\n' "$1" "$(($2 - PHASES_START))" "$(($3 - $2))" "$4" >>"$PHASES_FILE"
}

phase() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s)
  printf '\n== [%ss] %s\n' "$((t0 - PHASES_START))" "$name"
  "$@" || rc=$?
  _phase_row "$name" "$t0" "$(date +%s)" "$([ "$rc" -eq 0 ] && echo ok || echo "failed ($rc)")"
  return "$rc"
}

spawn() {
  local name=$1 log
  shift
  log="$PHASES_LOGS/$name.log"
  printf '\n== [%ss] %s: started in the background (log %s)\n' "$(($(date +%s) - PHASES_START))" "$name" "$log"
  (
    t0=$(date +%s)
    rc=0
    if [ "${SPAWN_NICE:-0}" -gt 0 ]; then
      nice -n "$SPAWN_NICE" "$@" || rc=$?
    else
      "$@" || rc=$?
    fi
    _phase_row "$name (background)" "$t0" "$(date +%s)" "$([ "$rc" -eq 0 ] && echo ok || echo "failed ($rc)")"
    exit "$rc"
  ) </dev/null >"$log" 2>&1 &
  SPAWNED[$name]=$!
}

wait_for() {
  local name rc=0 one
  for name in "$@"; do
    one=0
    wait "${SPAWNED[$name]}" || one=$?
    printf '\n== [%ss] %s: done (%s)\n' "$(($(date +%s) - PHASES_START))" "$name" \
      "$([ "$one" -eq 0 ] && echo ok || echo "failed, exit $one")"
    cat "$PHASES_LOGS/$name.log"
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
