#!/usr/bin/env bash
# The npm package works on its own: from a fresh copy of the repository, npm ci, npm run build,
# npm pack; check what the tarball ships (package.json "files"); install it into an empty
# directory with production dependencies only; run b2b-sidecar --help and --version.
#
# Usage: scripts/pack-smoke.sh   (npm run smoke:pack; needs git, npm, tar; network or npm cache)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/b2b-pack-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT

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
for required in package/package.json package/README.md package/dist/cli.js package/config/sidecar.example.yaml; do
  grep -qx "$required" <<<"$contents" || fail "$required is missing from the tarball"
done
if grep -Eq '^package/(src|test|bench|node_modules|\.ci|\.tmp)/' <<<"$contents"; then
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

printf '\npack-smoke: OK\n'
