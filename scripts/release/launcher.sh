#!/bin/sh
# b2b-sidecar with the Node.js runtime shipped beside it (node/bin/node): the host needs no Node.js,
# and a node on PATH is not used. Runs from any directory and through symlinks (/usr/bin/b2b-sidecar).
self=$(readlink -f -- "$0") || exit 1
root=$(dirname -- "$(dirname -- "$self")")
# --disable-sigusr1: a SIGUSR1 must never open the inspector, not even before dist/cli.js loads (docs/security.md).
exec "$root/node/bin/node" --disable-sigusr1 "$root/dist/cli.js" "$@"
