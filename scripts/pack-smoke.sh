#!/usr/bin/env bash
# The npm package works on its own: from a fresh copy of the repository, npm ci, npm run build,
# npm pack; check what the tarball ships (package.json "files"); install it into an empty
# directory with production dependencies only; run b2b-sidecar --help and --version. Then, as the
# README's systemd steps do, `npm install -g` the tarball and run `systemd-analyze verify` on the
# unit the package ships, whose ExecStart must be the binary that install created; the global
# install is removed again on exit.
#
# Usage: scripts/pack-smoke.sh   (npm run smoke:pack; needs git, npm, tar; network or npm cache;
#        for the global part: write access to npm's global prefix and systemd-analyze, else it is
#        skipped with a note, or fails with PACK_SMOKE_GLOBAL=1 as in CI)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/b2b-pack-smoke.XXXXXX")
global_installed=''
cleanup() {
  # Only what this run installed: a b2b-sidecar that was there before is left alone.
  if [ -n "$global_installed" ]; then
    npm uninstall -g --no-audit --no-fund b2b-sidecar >/dev/null 2>&1 || printf 'pack-smoke: could not uninstall the global b2b-sidecar\n' >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'pack-smoke: FAIL: %s\n' "$*" >&2; exit 1; }

step "fresh copy of the repository in $work/src"
mkdir -p "$work/src" "$work/install"
git -C "$repo" ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$repo/$f" ] && printf '%s\0' "$f"; done \
  | tar -C "$repo" --null -T - -cf - | tar -C "$work/src" -xf -

step "npm ci && npm run build && npm pack"
(cd "$work/src" && npm ci --no-audit --no-fund && npm run build)
tgz_name=$(cd "$work/src" && npm pack --silent --pack-destination "$work")
tgz="$work/$tgz_name"
[ -f "$tgz" ] || fail "npm pack produced no tarball"

step "tarball contents ($tgz_name)"
contents=$(tar -tzf "$tgz")
printf '%s\n' "$contents" | sed 's/^/  /'
for required in package/package.json package/README.md package/dist/cli.js package/dist/lib/bundle/run.cjs package/dist/lib/bundle/run.cjs.v8cache package/config/sidecar.example.yaml; do
  grep -qx "$required" <<<"$contents" || fail "$required is missing from the tarball"
done
# dist/ is the launcher, its scope file and dist/lib/: anything else is left over from another layout.
stray=$(grep '^package/dist/' <<<"$contents" | grep -Ev '^package/dist/(cli\.js|package\.json|lib/.*)$' || true)
[ -z "$stray" ] || fail "the tarball ships files outside the dist/ layout: $(head -3 <<<"$stray" | tr '\n' ' ')"
if grep -Eq '^package/(src|test|node_modules|\.ci|\.tmp)/|^package/bench/.*\.(ts|mjs|cjs|js)$' <<<"$contents"; then
  fail "the tarball ships source, tests or local files (check package.json \"files\")"
fi

step "npm install --omit=dev $tgz_name into an empty directory"
(cd "$work/install" && npm init -y >/dev/null && npm install --omit=dev --no-audit --no-fund "$tgz")
if [ -d "$work/install/node_modules/typescript" ]; then
  fail "a dev dependency was installed"
fi

cd "$work/install"
step "npx b2b-sidecar --help (--no: never fetch it from the registry)"
help=$(npx --no -- b2b-sidecar --help) || fail "b2b-sidecar --help exited non-zero"
printf '%s\n' "$help"
grep -Eq '^[[:space:]]+run\b' <<<"$help" || fail "--help does not list the run command"

step "npx b2b-sidecar --version"
version=$(npx --no -- b2b-sidecar --version)
expected=$(node -p "require('$work/src/package.json').version")
[ "$version" = "$expected" ] || fail "--version printed '$version', expected '$expected'"
printf '%s\n' "$version"

step "npx b2b-sidecar run --config (missing file): the plain run path (dist/lib/bundle/run.cjs) loads and exits 2"
set +e
run_err=$(npx --no -- b2b-sidecar run --config "$work/missing.yaml" 2>&1 >/dev/null)
run_code=$?
set -e
[ "$run_code" = 2 ] || fail "run with a missing config file exited $run_code, expected 2: $run_err"
grep -q 'does not exist' <<<"$run_err" || fail "run with a missing config file did not say so: $run_err"
printf '%s\n' "$run_err"

step "npm install -g $tgz_name, then systemd-analyze verify on the unit it ships"
cd "$work"
prefix=$(npm prefix -g)
skip() {
  [ "${PACK_SMOKE_GLOBAL:-0}" = 1 ] && fail "$1"
  printf 'pack-smoke: SKIPPED the global install: %s\n' "$1"
}
if ! command -v systemd-analyze >/dev/null 2>&1; then
  skip "systemd-analyze is not installed (Debian: apt-get install systemd)"
elif [ ! -w "$prefix" ]; then
  skip "npm's global prefix $prefix is not writable (run as root)"
elif npm ls -g --depth=0 b2b-sidecar >/dev/null 2>&1; then
  skip "b2b-sidecar is already installed globally; not touching it"
else
  # One global install at a time on this machine (several checkouts may run this together).
  exec 9>"${TMPDIR:-/tmp}/b2b-sidecar-pack-smoke.lock"
  flock 9
  global_installed=1
  npm install -g --omit=dev --no-audit --no-fund "$tgz"
  bin="$prefix/bin/b2b-sidecar"
  [ -x "$bin" ] || fail "npm install -g created no $bin"
  printf 'npm prefix -g: %s; installed: %s -> %s\n' "$prefix" "$bin" "$(readlink -f "$bin")"
  "$bin" --version >/dev/null || fail "$bin --version failed"
  unit="$(npm root -g)/b2b-sidecar/deploy/systemd/b2b-sidecar.service"
  [ -f "$unit" ] || fail "the package ships no deploy/systemd/b2b-sidecar.service"
  exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
  if [ "$exec_start" != "$bin" ]; then
    # The README's instruction for other prefixes: point ExecStart at the installed binary.
    printf 'note: npm prefix -g is %s, not /usr: verifying the unit with ExecStart=%s as the README says\n' "$prefix" "$bin"
    sed -e "s#^ExecStart=[^ ]*#ExecStart=$bin#" "$unit" >"$work/b2b-sidecar.service"
    unit="$work/b2b-sidecar.service"
  fi
  verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
  # verify also reports other units of this machine; only lines about this unit count.
  about=$(grep -F 'b2b-sidecar' <<<"$verify" || true)
  [ -z "$about" ] || fail "systemd-analyze verify complains about the unit: $about"
  printf 'systemd-analyze verify %s: OK (ExecStart=%s exists)\n' "$unit" "$exec_start"
fi

printf '\npack-smoke: OK\n'
