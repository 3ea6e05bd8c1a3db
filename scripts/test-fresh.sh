#!/usr/bin/env bash
# Runs `make test` as a new machine would: in a clean clone of HEAD, with an
# empty Go module cache and build cache (every module comes from the proxy,
# everything is compiled anew), then exports the demo design as a module
# and builds it with a module cache of its own, outside the repository.
# Prints how long each took. Leaves nothing behind unless KEEP=1.
set -euo pipefail
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
d=$(mktemp -d)
[[ ${KEEP:-} == 1 ]] || trap 'chmod -R u+w "$d" 2>/dev/null; rm -rf "$d"' EXIT
git clone -q "$repo" "$d/p"
cd "$d/p"
export GOMODCACHE=$d/mod GOCACHE=$d/cache GOFLAGS=-modcacherw
start=$SECONDS
make test
echo "test-fresh: make test on a clean clone with empty caches took $((SECONDS - start)) s"
start=$SECONDS
go run ./cmd/braid export cmd/braid/orders-demo.json -o "$d/x"
(cd "$d/x" && GOMODCACHE=$d/mod2 go build ./... && ./orders-demo --help >/dev/null)
echo "test-fresh: the exported demo built outside the repository with an empty module cache in $((SECONDS - start)) s"
