#!/usr/bin/env bash
# Installs the system tools Braid's tests need, on Debian, if they are missing.
# Only runs apt-get when something is missing. Safe to run repeatedly.
set -euo pipefail

# command:package pairs. Adding a tool is one line.
deps=(
	"kcat:kcat"
	"chromium:chromium"
	"ip:iproute2"
	"java:openjdk-17-jre-headless"
	"mvn:maven"
)

missing=()
for pair in "${deps[@]}"; do
	cmd=${pair%%:*}
	pkg=${pair#*:}
	if ! command -v "$cmd" >/dev/null 2>&1; then
		missing+=("$pkg")
	fi
done

if ((${#missing[@]} == 0)); then
	exit 0
fi

fail() {
	echo "install-deps: $*" >&2
	echo "install-deps: could not install: ${missing[*]}; install them by hand (apt-get install ${missing[*]})" >&2
	exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "apt-get not found (this script supports Debian/Ubuntu only)"

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null 2>&1 || fail "not root and sudo is not available"
	sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q >/dev/null || fail "apt-get update failed"
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" || fail "apt-get install failed"

for pair in "${deps[@]}"; do
	cmd=${pair%%:*}
	command -v "$cmd" >/dev/null 2>&1 || fail "package ${pair#*:} installed but command $cmd is still missing"
done
echo "install-deps: installed ${missing[*]}"
