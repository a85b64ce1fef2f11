# Shared by the release smokes (sourced, not run): the step header, the failure report with the
# tails of the step logs, and the cleanup of a demo left running and of the work folder.
# The sourcing script sets `smoke` (its name in messages), `started` (date +%s), `work` (its
# temporary folder, where each step's *.out and *.err go) and `demo_pid` ('' when none runs).

cleanup() {
  if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then
    kill -KILL "$demo_pid" 2>/dev/null || true   # in release-smoke.sh, unshare --kill-child takes the namespace with it
    wait "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}

step() { printf '\n== [%ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

fail() {
  printf '%s: FAIL: %s\n' "$smoke" "$*" >&2
  for log in "$work"/*.out "$work"/*.err; do
    [ -s "$log" ] && { printf -- '--- %s (last 30 lines)\n' "$log" >&2; tail -n 30 "$log" >&2; }
  done
  exit 1
}
