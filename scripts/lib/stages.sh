# Sourced by scripts/test: each stage of the test command says when it
# starts, how it ended and how long it took, and the run ends with a table
# of every stage and its time (printed on failure too, up to the stage
# that failed), so that where the time goes is read off each run.

STAGE_NAMES=()
STAGE_SECONDS=()
STAGE_RESULTS=()
STAGES_START=$SECONDS

stage_seconds() {
  local s=$1
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

stage_record() {
  STAGE_NAMES+=("$1")
  STAGE_SECONDS+=("$2")
  STAGE_RESULTS+=("$3")
  printf '== %s: %s in %s\n' "$1" "$3" "$(stage_seconds "$2")"
}

# stage "<name>" command...: runs the command with its output shown as it
# comes; a failure stops the run (after the table).
stage() {
  local name=$1 start=$SECONDS status=0
  shift
  printf '\n== %s\n' "$name"
  "$@" || status=$?
  if [ "$status" = 0 ]; then
    stage_record "$name" $((SECONDS - start)) passed
  else
    stage_record "$name" $((SECONDS - start)) "FAILED (exit $status)"
    exit "$status"
  fi
}

# stage_start "<name>" <log> command...: starts a stage beside the ones
# that follow (its output in <log>, shown when it is awaited); for work
# that leaves a core idle, such as a link or a test waiting on timers.
declare -A STAGE_PID STAGE_LOG STAGE_BEGAN
stage_start() {
  local name=$1 log=$2
  shift 2
  printf '\n== %s: started alongside what follows (output in %s)\n' "$name" "$log"
  # A process group of its own (set -m): signals reach it as they would a
  # command started from a terminal (a background job of a script ignores
  # SIGINT otherwise), and it can be stopped as a whole.
  # The stage's own time is written beside its log when it ends.
  set -m
  (
    set +m # the command stays in this job's process group
    began=$SECONDS
    status=0
    "$@" || status=$?
    echo $((SECONDS - began)) >"$log.seconds"
    exit "$status"
  ) >"$log" 2>&1 &
  STAGE_PID[$name]=$!
  set +m
  STAGE_LOG[$name]=$log
  STAGE_BEGAN[$name]=$SECONDS
}

# stage_await "<name>": waits for a stage stage_start began, shows its
# output, records its own time (start to end, however long before it was
# awaited) and stops the run if it failed.
stage_await() {
  local name=$1 status=0 took
  printf '\n== %s: waiting for it\n' "$name"
  wait "${STAGE_PID[$name]}" || status=$?
  cat "${STAGE_LOG[$name]}"
  unset 'STAGE_PID[$name]'
  took=$(cat "${STAGE_LOG[$name]}.seconds" 2>/dev/null || echo $((SECONDS - STAGE_BEGAN[$name])))
  if [ "$status" = 0 ]; then
    stage_record "$name (beside others)" "$took" passed
  else
    stage_record "$name (beside others)" "$took" "FAILED (exit $status)"
    exit "$status"
  fi
}

# The table, for an EXIT trap; stages still running in the background are
# stopped first.
stage_table() {
  local status=$? i name
  for name in "${!STAGE_PID[@]}"; do
    kill -- "-${STAGE_PID[$name]}" 2>/dev/null || true
    printf '== %s: stopped, still running at the end (output in %s)\n' "$name" "${STAGE_LOG[$name]}"
  done
  printf '\n%-100s %8s  %s\n' "stage" "time" "result"
  for i in "${!STAGE_NAMES[@]}"; do
    printf '%-100s %8s  %s\n' "${STAGE_NAMES[$i]}" "$(stage_seconds "${STAGE_SECONDS[$i]}")" "${STAGE_RESULTS[$i]}"
  done
  printf '%-100s %8s  %s\n' "the whole test command" "$(stage_seconds $((SECONDS - STAGES_START)))" \
    "$([ "$status" = 0 ] && echo passed || echo "FAILED (exit $status)")"
  return "$status"
}
