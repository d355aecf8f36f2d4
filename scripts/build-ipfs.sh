#!/usr/bin/env bash
# Builds the real IPFS Cluster and Kubo binaries the conformance and end-to-end tests start on 127.0.0.1
# (test/support/ipfs-real.ts), into a cache folder that later runs reuse. Go compiles them from the
# module proxy; nothing prebuilt is downloaded. Prints the folder on its last line.
set -euo pipefail
CLUSTER_VERSION=v1.1.6
# Kubo v0.39.0 no longer compiles with Go 1.26 (its cockroachdb/swiss reaches into runtime internals that
# Go 1.26 removed); v0.42.0 does, and building inside its module folder honours its go.mod `exclude` block.
KUBO_VERSION=v0.42.0
dir="${SEALPOST_IPFS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sealpost/ipfs-bin}"
stamp="$dir/VERSIONS"
want="cluster=$CLUSTER_VERSION kubo=$KUBO_VERSION"
if [ -x "$dir/ipfs" ] && [ -x "$dir/ipfs-cluster-service" ] && [ -x "$dir/ipfs-cluster-ctl" ] \
  && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || { echo "build-ipfs: Go is not installed" >&2; exit 1; }
mkdir -p "$dir"
start=$(date +%s)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-trimpath -modcacherw"
# `go install pkg@version` first asks the proxy for the module's version list (to report deprecation),
# which the proxy here refuses; so download the exact version and build inside the module's own folder,
# where its go.mod (replace and exclude blocks included) and go.sum apply as its authors meant.
build() { # module version output-dir packages...
  local module=$1 version=$2 src
  shift 2
  src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "build-ipfs: could not download $module@$version" >&2; exit 1; }
  (cd "$src" && go build -o "$dir/" "$@") >&2
}
echo "build-ipfs: building IPFS Cluster $CLUSTER_VERSION and Kubo $KUBO_VERSION into $dir" >&2
build github.com/ipfs-cluster/ipfs-cluster "$CLUSTER_VERSION" ./cmd/ipfs-cluster-service ./cmd/ipfs-cluster-ctl
build github.com/ipfs/kubo "$KUBO_VERSION" ./cmd/ipfs
echo "$want" > "$stamp"
echo "build-ipfs: built in $(( $(date +%s) - start )) s" >&2
echo "$dir"
