#!/usr/bin/env bash
# The linux-arm64 release run on an x86-64 host, under user-mode emulation (qemu-aarch64, Debian's
# qemu-user; no binfmt_misc needed: qemu-aarch64 is called directly):
#   1. npm run release (or RELEASE_SMOKE_BUILT=1: the release already in release/); the arm64
#      archive and .deb against SHA256SUMS.
#   2. An arm64 sysroot holding only what the runtime links (libc6, libstdc++6, libgcc-s1 and what
#      they depend on): Debian's arm64 packages, extracted by `mmdebstrap --variant=extract` (nothing
#      of them runs, so making it needs no emulation, and the host's dpkg gets no foreign
#      architecture); cached for the day in ~/.cache/b2b-sidecar/sysroots/, its package versions
#      in its SOURCES file and printed.
#   3. The archive unpacked: node/bin/node is an AArch64 ELF; under `qemu-aarch64 -L SYSROOT` it
#      reports the pinned version and arch arm64; dist/cli.js --version prints the package version;
#      whether V8 takes the bundle's code cache is printed (made by the x64 runtime: it does not);
#      dist/cli.js demo answers 200 through the sidecar to the host's curl on the loopback port it
#      prints, and SIGTERM ends it with 0.
#   4. The arm64 .deb: Architecture arm64, its runtime and bundle the archive's bytes, and its
#      /usr/lib/b2b-sidecar/dist/cli.js --version under emulation.
# Not run here: bin/b2b-sidecar (the launcher), because a shell cannot exec an arm64 binary without
# binfmt_misc; it is the linux-x64 archive's launcher byte for byte (checked), which
# scripts/release-smoke.sh runs.
#
# Usage: scripts/release-smoke-arm64.sh   (npm run smoke:release:arm64; as root for mmdebstrap;
#        needs qemu-user, mmdebstrap, dpkg-deb, curl; the npm registry and a Debian mirror, or caches)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/b2b-release-arm64.XXXXXX")
sysroots_cache="${XDG_CACHE_HOME:-$HOME/.cache}/b2b-sidecar/sysroots"
suite=${RELEASE_SMOKE_SUITE:-bookworm}
demo_pid=''

smoke=release-smoke-arm64
# shellcheck source=lib/smoke-steps.sh
. "$repo/scripts/lib/smoke-steps.sh"
trap cleanup EXIT
# Seconds since the step began, to one decimal (the emulated runs' own times).
timer() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
[ -n "$qemu" ] || fail "qemu-aarch64 is not installed (Debian: apt-get install qemu-user)"
for tool in mmdebstrap dpkg-deb curl sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (Debian: apt-get install mmdebstrap dpkg curl)"
done
[ "$(id -u)" = 0 ] || fail "needs root (mmdebstrap makes the sysroot as root)"

if [ "${RELEASE_SMOKE_BUILT:-0}" = 1 ]; then
  step "the release already in release/ (RELEASE_SMOKE_BUILT=1)"
else
  step "npm run release"
  (cd "$repo" && node scripts/release.mjs)
fi
release="$repo/release"
version=$(node -p "require('$repo/package.json').version")
node_version=$(tr -d '[:space:]' <"$repo/.node-version")
archive="b2b-sidecar-$version-linux-arm64.tar.gz"
deb="b2b-sidecar_${version}_arm64.deb"
(cd "$release" && grep -E "  ($archive|$deb|b2b-sidecar-$version-linux-x64\.tar\.gz)\$" SHA256SUMS | sha256sum -c) || fail "SHA256SUMS does not match the arm64 archive or .deb"

step "an arm64 sysroot ($suite: libc6, libstdc++6, libgcc-s1), cached for the day in $sysroots_cache"
sysroot="$sysroots_cache/debian-$suite-arm64-node-libs-$(date -u +%Y-%m-%d)"
if [ ! -f "$sysroot/SOURCES" ]; then
  mkdir -p "$sysroots_cache"
  rm -rf "$sysroots_cache/debian-$suite-arm64-node-libs-"*   # yesterday's: today's has the security updates
  # extract: the packages' files only (their dependencies too, none of their scripts run); the
  # downloaded .debs are kept (cleanup/apt/cache skipped) to record what they were, then removed.
  mmdebstrap --variant=extract --architectures=arm64 --include=libc6,libstdc++6,libgcc-s1 \
    --skip=check/qemu --skip=cleanup/apt/cache --format=directory --quiet "$suite" "$sysroot.partial" \
    >"$work/mmdebstrap.out" 2>&1 || fail "mmdebstrap --variant=extract --architectures=arm64 $suite failed"
  {
    printf '# Debian %s arm64 packages extracted by mmdebstrap %s --variant=extract on %s, from:\n' \
      "$suite" "$(mmdebstrap --version | awk '{ print $2 }')" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    sed 's/^/#   /' "$sysroot.partial/etc/apt/sources.list" 2>/dev/null || printf '#   (the sources are in %s)\n' "the mmdebstrap log"
    for package in "$sysroot.partial"/var/cache/apt/archives/*.deb; do
      printf '%s %s %s sha256:%s\n' "$(dpkg-deb -f "$package" Package)" "$(dpkg-deb -f "$package" Version)" \
        "$(dpkg-deb -f "$package" Architecture)" "$(sha256sum "$package" | cut -d' ' -f1)"
    done
  } >"$sysroot.partial/SOURCES.new"
  grep -q '^libc6 .* arm64 ' "$sysroot.partial/SOURCES.new" || fail "the sysroot has no arm64 libc6"
  rm -rf "$sysroot.partial/var/cache/apt/archives"
  mv "$sysroot.partial/SOURCES.new" "$sysroot.partial/SOURCES"
  mv -T "$sysroot.partial" "$sysroot"
fi
cat "$sysroot/SOURCES"
printf 'emulator: %s (%s)\n' "$($qemu --version | head -n 1)" "$(dpkg-query -W -f='${Package} ${Version}' qemu-user 2>/dev/null || dpkg-query -W -f='${Package} ${Version}' qemu-user-static 2>/dev/null || echo 'not from a Debian package')"

# A program of the archive under emulation, with a clean environment (nothing of the host's Node).
clean_env=(env -i PATH=/usr/bin:/bin HOME="$work" LANG=C.UTF-8 TMPDIR="$work")
emulate() { "${clean_env[@]}" "$qemu" -L "$sysroot" "$@"; }

step "$archive unpacked"
tar -C "$work" -xzf "$release/$archive"
tree="$work/b2b-sidecar-$version"
# e_machine (bytes 18-19 of the ELF header, little-endian): 0xb7 is EM_AARCH64.
[ "$(od -An -tx1 -j18 -N2 "$tree/node/bin/node" | tr -d ' ')" = b700 ] || fail "node/bin/node is not an AArch64 ELF binary"
printf 'node/bin/node: ELF, AArch64\n'
tar -C "$work" -xzf "$release/b2b-sidecar-$version-linux-x64.tar.gz" "b2b-sidecar-$version/bin/b2b-sidecar" --transform "s|^b2b-sidecar-$version|x64|"
cmp -s "$tree/bin/b2b-sidecar" "$work/x64/bin/b2b-sidecar" || fail "bin/b2b-sidecar differs from the linux-x64 archive's launcher"
printf 'bin/b2b-sidecar: the linux-x64 archive'"'"'s launcher byte for byte (run by npm run smoke:release)\n'

step "qemu-aarch64: node/bin/node --version, process.arch"
t=$(timer)
got=$(emulate "$tree/node/bin/node" -p '`${process.version} ${process.arch} ${process.platform}`') || fail "node/bin/node did not run under $qemu"
[ "$got" = "v$node_version arm64 linux" ] || fail "node/bin/node printed '$got', expected 'v$node_version arm64 linux'"
printf '%s (%s s)\n' "$got" "$(since "$t")"

step "qemu-aarch64: node/bin/node dist/cli.js --version"
t=$(timer)
got=$(emulate "$tree/node/bin/node" "$tree/dist/cli.js" --version) || fail "dist/cli.js --version failed under emulation"
[ "$got" = "$version" ] || fail "dist/cli.js --version printed '$got', expected '$version'"
printf '%s (%s s)\n' "$got" "$(since "$t")"

# The bundle's V8 code cache is made by the x64 runtime at release time (scripts/release.mjs), and V8
# takes a cache only from its own architecture: the arm64 artifacts ship none (a start compiles the
# bundle, as it would after rejecting one).
[ ! -e "$tree/dist/lib/bundle/run.cjs.v8cache" ] || fail "the arm64 archive ships the x64 code cache dist/lib/bundle/run.cjs.v8cache"
printf 'dist/lib/bundle/run.cjs.v8cache: not shipped (the x64 runtime made it)\n'

step "qemu-aarch64: node/bin/node dist/cli.js demo, the host's curl through the sidecar"
t=$(timer)
# A simple command, not the function: env and then qemu-aarch64 replace the job's process, so
# $! is the emulated node itself (qemu passes it the signals it gets).
"${clean_env[@]}" "$qemu" -L "$sysroot" "$tree/node/bin/node" "$tree/dist/cli.js" demo >"$work/demo.out" 2>"$work/demo.err" &
demo_pid=$!
curl_line=''
for _ in $(seq 1 1200); do
  curl_line=$(grep -m1 '^curl ' "$work/demo.out" || true)
  [ -n "$curl_line" ] && break
  kill -0 "$demo_pid" 2>/dev/null || fail "demo exited before printing its curl lines"
  sleep 0.1
done
[ -n "$curl_line" ] || fail "demo printed no curl line within 120 s"
printf 'demo listening after %s s\n' "$(since "$t")"
t=$(timer)
code=''
for _ in $(seq 1 120); do
  code=$(eval "$curl_line --max-time 60 -o '$work/demo.body' -w '%{http_code}'" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
[ "$code" = 200 ] || fail "$curl_line answered HTTP ${code:-nothing}, expected 200"
printf '%s → HTTP %s %s (%s s)\n' "$curl_line" "$code" "$(head -c 120 "$work/demo.body")" "$(since "$t")"
grep -q '"version":"'"$version"'"' "$work/demo.err" || fail "demo's start log does not carry version $version"
t=$(timer)
kill -TERM "$demo_pid"
status=0
wait "$demo_pid" || status=$?
demo_pid=''
[ "$status" = 0 ] || fail "demo exited with $status after SIGTERM, expected 0"
printf 'SIGTERM: exit 0 after %s s\n' "$(since "$t")"

step "$deb: Architecture arm64, the archive's runtime and bundle, cli.js --version"
[ "$(dpkg-deb -f "$release/$deb" Architecture)" = arm64 ] || fail "$deb is not Architecture: arm64"
dpkg-deb -x "$release/$deb" "$work/deb"
cmp -s "$work/deb/usr/lib/b2b-sidecar/node/bin/node" "$tree/node/bin/node" || fail "the .deb's node/bin/node is not the archive's"
cmp -s "$work/deb/usr/lib/b2b-sidecar/dist/lib/bundle/run.cjs" "$tree/dist/lib/bundle/run.cjs" || fail "the .deb's bundle is not the archive's"
[ ! -e "$work/deb/usr/lib/b2b-sidecar/dist/lib/bundle/run.cjs.v8cache" ] || fail "the arm64 .deb ships the x64 code cache"
t=$(timer)
got=$(emulate "$work/deb/usr/lib/b2b-sidecar/node/bin/node" "$work/deb/usr/lib/b2b-sidecar/dist/cli.js" --version) || fail "the .deb's cli.js --version failed under emulation"
[ "$got" = "$version" ] || fail "the .deb's cli.js --version printed '$got', expected '$version'"
printf '%s (%s s)\n' "$got" "$(since "$t")"

printf '\nrelease-smoke-arm64: OK in %s s\n' "$(( $(date +%s) - started ))"
