#!/usr/bin/env bash
# Braid's Kafka Streams peer (peer/kstreams: the workloads of
# `braid bench peer`, and the design runner of peer/difftest): builds it once into the cache beside Kafka's jars
# (scripts/kafka.sh), stamped with the checksum of the module's pom and
# sources, so that it is offline after the first build and rebuilt only when
# the module changes.
#
#   scripts/peer.sh build        build unless the cache holds this version;
#                                prints the directory of its jars
#   scripts/peer.sh classpath    the same, printed as a Java classpath (DIR/*)
#
# The cache is $BRAID_CACHE (default ~/.cache/braid), as for kafka.sh.
# Java and Maven are needed by the peer benchmark, its test and the
# differential tests only, never by `make run`.
set -euo pipefail

KAFKA_VERSION=4.4.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
module="$root/peer/kstreams"
cache="${BRAID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/braid}/kafka-$KAFKA_VERSION/peer"

die() {
	echo "peer.sh: $*" >&2
	exit 1
}

# stamp prints the checksum of the module's pom and sources.
stamp() {
	(cd "$module" && find pom.xml src -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

build() {
	local want libs="$cache/libs"
	want=$(stamp)
	if [[ -f "$libs/.stamp" && "$(cat "$libs/.stamp")" == "$want" ]]; then
		echo "$libs"
		return 0
	fi
	command -v java >/dev/null || die "java not found (scripts/install-deps.sh installs OpenJDK 17)"
	command -v mvn >/dev/null || die "mvn not found (scripts/install-deps.sh installs Maven)"
	mkdir -p "$cache"
	local tmp
	tmp=$(mktemp -d "$cache/build.XXXXXX")
	echo "peer.sh: building the Kafka Streams $KAFKA_VERSION peer into $cache (once per version of peer/kstreams)" >&2
	# A copy of the module, so that the build writes no target/ into the
	# checkout.
	cp -r "$module/pom.xml" "$module/src" "$tmp/"
	if ! mvn -q -B -f "$tmp/pom.xml" package dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "building the peer with Maven failed (log above)"
	fi
	cp "$tmp/target/braid-kstreams-peer.jar" "$tmp/libs/"
	echo "$want" >"$tmp/libs/.stamp"
	rm -rf "$libs"
	mv "$tmp/libs" "$libs"
	rm -rf "$tmp"
	echo "$libs"
}

case ${1:-} in
build) build ;;
classpath) echo "$(build)/*" ;;
*) die "usage: peer.sh build | classpath" ;;
esac
