#!/usr/bin/env bash
# The release, installed and run as a user would, on a Debian with no Node.js:
#   1. npm run release; sha256sum -c SHA256SUMS; scripts/release/check-release.mjs (the SBOM
#      against what each archive really contains, each unpacked by its own tool).
#   2. A minimal Debian root (mmdebstrap --variant=minbase plus systemd and procps, as on a host
#      that runs the unit; cached for the day as a tarball in ~/.cache/b2b-sidecar/roots/): apt
#      installs the .deb from the file alone (no package lists: its Depends must already be there); the modes of /etc/b2b-sidecar, the conffile, the service neither enabled
#      nor started; b2b-sidecar --version; systemd-analyze verify on the unit as installed;
#      the conffile names the package's credential files and only root and the group b2b-sidecar
#      read it; check-config accepts it; b2b-sidecar demo answers 200 through the sidecar; apt
#      remove keeps the edited config and the credentials, apt purge removes them and the enable
#      link and names what it leaves (an administrator's client key, the system user).
#   3. A second fresh root: the linux-x64 archive unpacked in /opt as the README says;
#      bin/b2b-sidecar (also through a symlink on PATH) --version, demo, systemd-analyze verify of
#      the archive's unit (ExecStart=/opt/b2b-sidecar/bin/b2b-sidecar).
# Everything in the roots runs in its own mount and PID namespace (unshare), so nothing is left
# mounted or running when it ends. RELEASE_SMOKE_REPRODUCIBLE=1 builds the release a second time
# and compares every artifact byte for byte (about as long again); RELEASE_SMOKE_BUILT=1 tests the
# release already in release/ instead of building it.
#
# Usage: scripts/release-smoke.sh   (npm run smoke:release; as root; needs mmdebstrap, dpkg-deb,
#        unshare, curl, python3; the npm registry and a Debian mirror, or caches)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/b2b-release-smoke.XXXXXX")
roots_cache="${XDG_CACHE_HOME:-$HOME/.cache}/b2b-sidecar/roots"
suite=${RELEASE_SMOKE_SUITE:-bookworm}
demo_pid=''

smoke=release-smoke
# shellcheck source=lib/smoke-steps.sh
. "$repo/scripts/lib/smoke-steps.sh"
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "needs root (chroot, dpkg inside the roots)"
for tool in mmdebstrap dpkg-deb unshare curl python3 sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (Debian: apt-get install mmdebstrap util-linux curl python3)"
done

if [ "${RELEASE_SMOKE_BUILT:-0}" = 1 ]; then
  step "the release already in release/ (RELEASE_SMOKE_BUILT=1)"
else
  step "npm run release"
  (cd "$repo" && node scripts/release.mjs)
fi
release="$repo/release"
version=$(node -p "require('$repo/package.json').version")
deb="b2b-sidecar_${version}_$(dpkg --print-architecture).deb"
[ "$(dpkg --print-architecture)" = amd64 ] || fail "this smoke installs the amd64 .deb and linux-x64 archive; this host is $(dpkg --print-architecture)"

step "sha256sum -c SHA256SUMS; the SBOM against the archives' contents"
(cd "$release" && sha256sum -c SHA256SUMS) || fail "SHA256SUMS does not match the artifacts"
node "$repo/scripts/release/check-release.mjs" "$release" || fail "the SBOM or the artifacts do not match"

if [ "${RELEASE_SMOKE_REPRODUCIBLE:-0}" = 1 ]; then
  step "a second build of the same commit: the same bytes"
  (cd "$repo" && node scripts/release.mjs --out "$work/release-again") >"$work/release-again.out" 2>&1 || fail "the second build failed"
  diff "$release/SHA256SUMS" "$work/release-again/SHA256SUMS" || fail "two builds gave different artifacts (above)"
  printf 'reproducible: every artifact of the second build has the same SHA-256\n'
fi

step "a minimal Debian root ($suite, minbase + systemd, no Node.js), cached for the day in $roots_cache"
base="$roots_cache/debian-$suite-amd64-minbase-systemd-$(date -u +%Y-%m-%d).tar"
if [ ! -f "$base" ]; then
  mkdir -p "$roots_cache"
  rm -f "$roots_cache/debian-$suite-amd64-minbase-systemd-"*.tar   # yesterday's: today's has the security updates
  # systemd for systemd-analyze and the unit's world (targets, /bin/kill from procps); apt's lists
  # are removed (mmdebstrap's default), so the .deb's Depends cannot be fetched: they must be there.
  mmdebstrap --variant=minbase --include=systemd,procps --format=tar --quiet "$suite" "$base.partial" || fail "mmdebstrap $suite failed"
  mv "$base.partial" "$base"
fi
new_root() {
  mkdir -p "$work/$1"
  tar -C "$work/$1" -xf "$base"
}
# A command in a root: its own mount and PID namespace (proc mounted there, killed with unshare),
# the host's network (loopback: the host's curl reaches the demo), a clean environment.
in_root() {
  local root=$1
  shift
  unshare --mount --pid --fork --kill-child --mount-proc="$root/proc" \
    chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 "$@"
}

# `$bin demo` in the root: the first curl line it prints must answer 200 through the sidecar; SIGTERM ends it with 0.
demo_in_root() {
  local root=$1 bin=$2 name=$3
  in_root "$root" "$bin" demo >"$work/$name.out" 2>"$work/$name.err" &
  demo_pid=$!
  local curl_line='' code=''
  for _ in $(seq 1 600); do
    curl_line=$(grep -m1 '^curl ' "$work/$name.out" || true)
    [ -n "$curl_line" ] && break
    kill -0 "$demo_pid" 2>/dev/null || fail "$bin demo exited before printing its curl lines"
    sleep 0.1
  done
  [ -n "$curl_line" ] || fail "$bin demo printed no curl line within 60 s"
  for _ in $(seq 1 60); do
    code=$(eval "$curl_line -o '$work/$name.body' -w '%{http_code}'" || true)
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  [ "$code" = 200 ] || fail "$bin demo: $curl_line answered HTTP ${code:-nothing}, expected 200"
  printf '%s demo: %s → HTTP %s %s\n' "$bin" "$curl_line" "$code" "$(head -c 120 "$work/$name.body")"
  # The job is a subshell running unshare, whose child is node (chroot, env and the launcher exec it).
  local node_pid=$demo_pid child
  while child=$(pgrep -P "$node_pid" | head -n 1) && [ -n "$child" ]; do node_pid=$child; done
  tr '\0' ' ' <"/proc/$node_pid/cmdline" 2>/dev/null | grep -q 'node/bin/node .*dist/cli\.js demo' || fail "no node process found under $demo_pid"
  kill -TERM "$node_pid"
  local status=0
  wait "$demo_pid" || status=$?
  demo_pid=''
  [ "$status" = 0 ] || fail "$bin demo exited with $status after SIGTERM, expected 0"
}

# systemd-analyze verify of a unit, run inside the root (its systemd, its files: ExecStart must exist
# there); it must exit 0 and say nothing about the unit.
verify_unit() {
  local root=$1 unit=$2 output
  output=$(in_root "$root" systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $output"
  [ -z "$(grep -F 'b2b-sidecar' <<<"$output" || true)" ] || fail "systemd-analyze verify complains about the unit: $output"
  printf 'systemd-analyze verify %s (in the root): OK (ExecStart=%s)\n' "$unit" "$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$root$unit")"
}

step "root 1: apt install ./$deb"
new_root deb-root
r1="$work/deb-root"
in_root "$r1" sh -c '! command -v node && ! command -v nodejs' >/dev/null || fail "the root has a Node.js"
cp "$release/$deb" "$r1/tmp/"
in_root "$r1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 "/tmp/$deb" || fail "apt-get install ./$deb failed in a minimal $suite"

step "root 1: files, modes, conffile, nothing enabled or started"
# stat in the root: the names are the root's users and groups (b2b-sidecar is made there).
modes=$(in_root "$r1" stat -c '%n %a %U:%G' /etc/b2b-sidecar /etc/b2b-sidecar/sidecar.yaml /etc/b2b-sidecar/api-key /etc/b2b-sidecar/password)
printf '%s\n' "$modes"
[ "$modes" = "/etc/b2b-sidecar 755 root:root
/etc/b2b-sidecar/sidecar.yaml 640 root:b2b-sidecar
/etc/b2b-sidecar/api-key 600 root:root
/etc/b2b-sidecar/password 600 root:root" ] || fail "unexpected modes under /etc/b2b-sidecar"
in_root "$r1" dpkg-query -W -f='${Conffiles}\n' b2b-sidecar | grep -q '^ /etc/b2b-sidecar/sidecar.yaml ' || fail "sidecar.yaml is not a conffile"
# The conffile names the package's own credential files, not a container's /run/secrets.
grep -qx '  apiKeyFile: /etc/b2b-sidecar/api-key' "$r1/etc/b2b-sidecar/sidecar.yaml" || fail "the conffile's apiKeyFile is not /etc/b2b-sidecar/api-key"
grep -qx '  passwordFile: /etc/b2b-sidecar/password' "$r1/etc/b2b-sidecar/sidecar.yaml" || fail "the conffile's passwordFile is not /etc/b2b-sidecar/password"
! grep -q '/run/secrets/b2b' "$r1/etc/b2b-sidecar/sidecar.yaml" || fail "the conffile still names /run/secrets/b2b"
# The service's user (DynamicUser= takes it) reads the config through its group; others cannot.
in_root "$r1" setpriv --reuid=b2b-sidecar --regid=b2b-sidecar --init-groups cat /etc/b2b-sidecar/sidecar.yaml >/dev/null || fail "the user b2b-sidecar cannot read sidecar.yaml"
! in_root "$r1" setpriv --reuid=nobody --regid=nogroup --clear-groups cat /etc/b2b-sidecar/sidecar.yaml >/dev/null 2>&1 || fail "nobody can read sidecar.yaml"
printf 'conffile: the package'"'"'s credential files; readable by root and the group b2b-sidecar only\n'
for command in kill useradd; do in_root "$r1" sh -c "command -v $command" >/dev/null || fail "$command is missing though the package depends on what provides it"; done
[ ! -e "$r1/etc/systemd/system/multi-user.target.wants/b2b-sidecar.service" ] || fail "the package enabled the service"
[ "$(readlink "$r1/usr/bin/b2b-sidecar")" = ../lib/b2b-sidecar/bin/b2b-sidecar ] || fail "/usr/bin/b2b-sidecar is not the launcher's symlink"

step "root 1: the README's links into docs/, deploy/, config/ and bench/ resolve in /usr/share/doc/b2b-sidecar"
doc="$r1/usr/share/doc/b2b-sidecar"
links=$(grep -oE '\]\((docs|deploy|config|bench)/[^)#]*' "$doc/README.md" | sed 's/^](//' | sort -u)
[ -n "$links" ] || fail "no links found in the installed README.md"
for link in $links; do [ -e "$doc/$link" ] || fail "README.md links $link, which the package does not ship in /usr/share/doc/b2b-sidecar"; done
printf '%s links resolve, among them %s\n' "$(wc -l <<<"$links")" "$(grep -m2 'deploy/\(prometheus\|grafana\)' <<<"$links" | tr '\n' ' ')"

step "root 1: b2b-sidecar --version"
got=$(in_root "$r1" b2b-sidecar --version) || fail "b2b-sidecar --version failed"
[ "$got" = "$version" ] || fail "b2b-sidecar --version printed '$got', expected '$version'"
printf '%s\n' "$got"

step "root 1: systemd-analyze verify /usr/lib/systemd/system/b2b-sidecar.service"
grep -q '^ExecStart=/usr/bin/b2b-sidecar run --config /etc/b2b-sidecar/sidecar.yaml$' "$r1/usr/lib/systemd/system/b2b-sidecar.service" || fail "the unit's ExecStart is not /usr/bin/b2b-sidecar"
verify_unit "$r1" /usr/lib/systemd/system/b2b-sidecar.service

step "root 1: check-config with the conffile as installed, the credential files filled in"
printf 'smoke-api-key\n' >"$r1/etc/b2b-sidecar/api-key"
printf 'smoke-password\n' >"$r1/etc/b2b-sidecar/password"
in_root "$r1" b2b-sidecar check-config --config /etc/b2b-sidecar/sidecar.yaml >"$work/check-config.out" 2>&1 || fail "check-config of the installed conffile failed: $(cat "$work/check-config.out")"
grep -q '/etc/b2b-sidecar/api-key' "$work/check-config.out" || fail "check-config does not show /etc/b2b-sidecar/api-key: $(cat "$work/check-config.out")"
! grep -q 'smoke-api-key\|smoke-password' "$work/check-config.out" || fail "check-config printed a credential"
printf 'check-config: exit 0, apiKeyFile /etc/b2b-sidecar/api-key\n'

step "root 1: b2b-sidecar demo"
demo_in_root "$r1" b2b-sidecar deb-demo

step "root 1: apt remove keeps the edited config and the credentials"
printf '# edited by release-smoke\n' >>"$r1/etc/b2b-sidecar/sidecar.yaml"
printf 'smoke-api-key\n' >"$r1/etc/b2b-sidecar/api-key"
in_root "$r1" env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q -o Dpkg::Use-Pty=0 b2b-sidecar >"$work/remove.out" 2>&1 || fail "apt-get remove failed"
[ ! -e "$r1/usr/bin/b2b-sidecar" ] && [ ! -e "$r1/usr/lib/b2b-sidecar" ] || fail "files left after remove"
tail -n 1 "$r1/etc/b2b-sidecar/sidecar.yaml" | grep -qx '# edited by release-smoke' || fail "remove did not keep the edited sidecar.yaml"
grep -qx smoke-api-key "$r1/etc/b2b-sidecar/api-key" || fail "remove did not keep the api-key file"
in_root "$r1" dpkg-query -W -f='${Status}\n' b2b-sidecar | grep -qx 'deinstall ok config-files' || fail "after remove the package is not in config-files state"
printf 'kept: /etc/b2b-sidecar/sidecar.yaml (edited), api-key, password\n'

step "root 1: apt purge removes what the package made and names what it leaves"
# A file the docs suggest putting there (a client key), and the link `systemctl enable` makes.
printf 'not a real key\n' >"$r1/etc/b2b-sidecar/client.key"
ln -s /usr/lib/systemd/system/b2b-sidecar.service "$r1/etc/systemd/system/multi-user.target.wants/b2b-sidecar.service"
in_root "$r1" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o Dpkg::Use-Pty=0 b2b-sidecar >"$work/purge.out" 2>&1 || fail "apt-get purge failed"
left=$(ls -A "$r1/etc/b2b-sidecar")
[ "$left" = client.key ] || fail "after purge /etc/b2b-sidecar holds '$left', expected only the administrator's client.key"
[ ! -e "$r1/etc/systemd/system/multi-user.target.wants/b2b-sidecar.service" ] && [ ! -L "$r1/etc/systemd/system/multi-user.target.wants/b2b-sidecar.service" ] || fail "purge left the enable link"
grep -q '^  /etc/b2b-sidecar/client.key$' "$work/purge.out" || fail "purge did not name the file it leaves: $(cat "$work/purge.out")"
grep -q 'leaves the system user and group b2b-sidecar' "$work/purge.out" || fail "purge did not say it leaves the user"
status=$(in_root "$r1" dpkg-query -W -f='${Status}\n' b2b-sidecar 2>/dev/null || true)
case "$status" in *installed*|*config-files*) [ "$status" = 'unknown ok not-installed' ] || fail "after purge dpkg says: $status" ;; esac
printf 'purge: sidecar.yaml, api-key, password and the enable link gone; it named what it left:\n'
grep '^b2b-sidecar: \|^  /etc/' "$work/purge.out"
rm "$r1/etc/b2b-sidecar/client.key" && rmdir "$r1/etc/b2b-sidecar"

step "root 2: the linux-x64 archive unpacked in /opt, with no Node.js on the host"
new_root archive-root
r2="$work/archive-root"
in_root "$r2" sh -c '! command -v node && ! command -v nodejs' >/dev/null || fail "the root has a Node.js"
tar -C "$r2/opt" -xzf "$release/b2b-sidecar-$version-linux-x64.tar.gz"
ln -s "b2b-sidecar-$version" "$r2/opt/b2b-sidecar"
ln -s /opt/b2b-sidecar/bin/b2b-sidecar "$r2/usr/local/bin/b2b-sidecar"
got=$(in_root "$r2" /opt/b2b-sidecar/bin/b2b-sidecar --version) || fail "bin/b2b-sidecar --version failed"
[ "$got" = "$version" ] || fail "bin/b2b-sidecar --version printed '$got', expected '$version'"
got=$(in_root "$r2" b2b-sidecar --version) || fail "b2b-sidecar --version through /usr/local/bin failed"
[ "$got" = "$version" ] || fail "the symlinked launcher printed '$got'"
printf '%s (bin/b2b-sidecar and the /usr/local/bin symlink)\n' "$got"

step "root 2: systemd-analyze verify of the archive's unit"
unit="/opt/b2b-sidecar-$version/deploy/systemd/b2b-sidecar.service"
grep -q '^ExecStart=/opt/b2b-sidecar/bin/b2b-sidecar run ' "$r2$unit" || fail "the archive's unit does not start /opt/b2b-sidecar/bin/b2b-sidecar"
verify_unit "$r2" "$unit"

step "root 2: bin/b2b-sidecar demo"
demo_in_root "$r2" /opt/b2b-sidecar/bin/b2b-sidecar archive-demo

printf '\nrelease-smoke: OK in %s s\n' "$(( $(date +%s) - started ))"
