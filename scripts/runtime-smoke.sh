#!/usr/bin/env bash
# Reproduces the Dockerfile's two stages without Docker, to prove the runtime image lacks nothing:
#   build stage:   only the files the build stage COPYs from the context (scripts/docker-context.ts
#                  reads the Dockerfile and .dockerignore), npm ci, npm run build
#   runtime stage: a directory with only package.json, package-lock.json and dist/ (what the
#                  runtime stage COPYs), npm ci --omit=dev --ignore-scripts
# then, in the runtime directory: node dist/cli.js --help, and a short `demo` run whose first
# printed curl line must answer 200 through the sidecar and whose config must pass the image's
# HEALTHCHECK command (`healthcheck --config`); SIGTERM must end it with exit code 0.
#
# Usage: scripts/runtime-smoke.sh   (npm run smoke:runtime; needs npm, curl, the dev dependencies; network or npm cache)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/b2b-runtime-smoke.XXXXXX")
demo_pid=''

cleanup() {
  if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then
    kill -KILL "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
  printf 'runtime-smoke: FAIL: %s\n' "$*" >&2
  for log in "$work"/demo.out "$work"/demo.err; do
    [ -s "$log" ] && { printf -- '--- %s (last 40 lines)\n' "$log" >&2; tail -n 40 "$log" >&2; }
  done
  exit 1
}

step "build stage's context: the files the Dockerfile's build stage COPYs, after .dockerignore, in $work/build"
mkdir -p "$work/build" "$work/runtime"
(cd "$repo" && node --import tsx scripts/docker-context.ts copy-stage 0 "$work/build")

step "build stage: npm ci && npm run build"
(cd "$work/build" && npm ci --no-audit --no-fund && npm run build)
[ -f "$work/build/dist/cli.js" ] || fail "npm run build produced no dist/cli.js"

step "runtime stage: package*.json + dist/ only, npm ci --omit=dev --ignore-scripts"
cp "$work/build/package.json" "$work/build/package-lock.json" "$work/runtime/"
cp -R "$work/build/dist" "$work/runtime/dist"
(cd "$work/runtime" && NODE_ENV=production npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
if [ -d "$work/runtime/node_modules/typescript" ] || [ -d "$work/runtime/node_modules/tsx" ]; then
  fail "dev dependencies ended up in the runtime node_modules"
fi

cd "$work/runtime"
export NODE_ENV=production

step "node dist/cli.js --help"
help=$(node dist/cli.js --help) || fail "--help exited non-zero"
printf '%s\n' "$help"
for command in run demo simulate token check-config translation healthcheck; do
  grep -Eq "^[[:space:]]+$command\b" <<<"$help" || fail "--help does not list the $command command"
done

step "node dist/cli.js demo"
node dist/cli.js demo >"$work/demo.out" 2>"$work/demo.err" &
demo_pid=$!

# The demo prints its curl lines once the sidecar listens; allow 60 s for a cold start.
curl_line=''
for _ in $(seq 1 600); do
  curl_line=$(grep -m1 '^curl ' "$work/demo.out" || true)
  [ -n "$curl_line" ] && break
  kill -0 "$demo_pid" 2>/dev/null || fail "demo exited before printing its curl lines"
  sleep 0.1
done
[ -n "$curl_line" ] || fail "demo printed no curl line within 60 s"
printf 'first curl line: %s\n' "$curl_line"

# The first token may still be on its way (503 until then): retry for up to 30 s.
code=''
for _ in $(seq 1 60); do
  code=$(eval "$curl_line -o '$work/body' -w '%{http_code}'" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
[ "$code" = 200 ] || fail "the first curl line answered HTTP ${code:-nothing}, expected 200"
printf 'HTTP %s: %s\n' "$code" "$(head -c 300 "$work/body")"

step "node dist/cli.js healthcheck --config <the demo's config> (the image's HEALTHCHECK)"
demo_config=$(sed -n 's/^  config: *//p' "$work/demo.out")
admin_port=$(sed -n 's|^  admin: *http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/demo.out")
[ -n "$demo_config" ] && [ -n "$admin_port" ] || fail "the demo printed no config or admin line"
# The demo's config asks for a free port (0); B2B_ADMIN_PORT names the one it got, as a container's env would.
B2B_ADMIN_PORT=$admin_port node dist/cli.js healthcheck --config "$demo_config" || fail "healthcheck exited $? against the running demo"

step "SIGTERM: graceful drain, exit 0"
kill -TERM "$demo_pid"
status=0
wait "$demo_pid" || status=$?
demo_pid=''
[ "$status" = 0 ] || fail "demo exited with $status after SIGTERM, expected 0"

printf '\nruntime-smoke: OK\n'
