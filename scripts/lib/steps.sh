# Sourced by the set-up and build scripts: long steps say what they do,
# roughly how long they take on a fresh 2-core machine, that they are still
# alive, and how long they took. Callers set STEP_PREFIX.

# step "<what>" "<estimate>" command...: runs the command with its output
# shown as it comes.
step() {
  local what=$1 estimate=$2 start=$SECONDS
  shift 2
  printf '[%s] %s (%s)\n' "$STEP_PREFIX" "$what" "$estimate"
  "$@"
  printf '[%s] %s: done in %s\n' "$STEP_PREFIX" "$what" "$(elapsed_since "$start")"
}

# quiet_step "<what>" "<estimate>" <log> command...: runs the command with
# its output in <log>, printing a line every 30 s so that a long build never
# looks hung, and the log's tail when it fails. Ctrl-C stops the command too.
quiet_step() {
  local what=$1 estimate=$2 log=$3 start=$SECONDS next pid status=0
  shift 3
  printf '[%s] %s (%s; output in %s)\n' "$STEP_PREFIX" "$what" "$estimate" "$log"
  "$@" >"$log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
  next=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$next" ]; then
      printf '[%s]   … still working, %s so far\n' "$STEP_PREFIX" "$(elapsed_since "$start")"
      next=$((SECONDS + 30))
    fi
    sleep 1
  done
  wait "$pid" || status=$?
  trap - INT TERM
  if [ "$status" != 0 ]; then
    tail -n 60 "$log" >&2
    printf '[%s] %s failed after %s (whole log: %s)\n' "$STEP_PREFIX" "$what" "$(elapsed_since "$start")" "$log" >&2
    return "$status"
  fi
  printf '[%s] %s: done in %s\n' "$STEP_PREFIX" "$what" "$(elapsed_since "$start")"
}

elapsed_since() {
  local s=$((SECONDS - $1))
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

# without_build_tools <dir>: prints a PATH for a new machine's first run:
# <dir>/tools/bin (an empty tools root, for CARGO_INSTALL_ROOT=<dir>/tools),
# Rust's own commands linked into <dir>/rust, and every directory of PATH
# except those holding the build tools scripts/setup installs.
without_build_tools() {
  local dir=$1 b d path
  mkdir -p "$dir/rust" "$dir/tools"
  for b in cargo rustc rustup rustdoc clippy-driver cargo-clippy rustfmt cargo-fmt; do
    ln -sf "$(command -v "$b")" "$dir/rust/$b"
  done
  path="$dir/tools/bin:$dir/rust"
  IFS=: read -ra dirs <<<"$PATH"
  for d in "${dirs[@]}"; do
    [ -x "$d/trunk" ] || [ -x "$d/wasm-bindgen" ] || [ -x "$d/wasm-pack" ] || path="$path:$d"
  done
  printf '%s' "$path"
}
