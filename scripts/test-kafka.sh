#!/usr/bin/env bash
# The real-Kafka pass of `make test`: runs the tests kafka/tests.txt lists
# against Apache Kafka (each package's TestMain starts a cluster through
# brokertest; BRAID_TEST_KAFKA_NODES picks its size), and fails if one of
# them did not run: a listed test that skips or is missing (renamed?) is an
# error, so the pass cannot pass by testing nothing.
#
# The lines run KAFKA_JOBS at a time (default 2), each on a cluster of its
# own: the tests mostly wait (for sessions to time out, failovers, brokers),
# so two at a time take little more than the longest alone would.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
maxjobs=${KAFKA_JOBS:-2}
list=kafka/tests.txt

scripts/kafka.sh fetch
# The Kafka Streams peer of TestBenchPeerOnKafka, built here once rather
# than inside the test.
scripts/peer.sh build >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_line N NODES PKG NAMES... runs one line's tests, its output in
# $work/N.log and its verdict (0 or 1) in $work/N.status.
run_line() {
	local n=$1 nodes=$2 pkg=$3
	shift 3
	local re
	re="^($(IFS='|'; echo "$*"))\$"
	local status=0
	BRAID_TEST_KAFKA=start BRAID_TEST_KAFKA_NODES=$nodes $GO test -count=1 -timeout 20m -v -run "$re" "$pkg" \
		>"$work/$n.log" 2>&1 || status=1
	echo $status >"$work/$n.status"
}

lines=() total=0
while read -r pkg tests; do
	[[ -z $pkg || $pkg == \#* ]] && continue
	nodes=1
	if [[ $pkg == nodes=* ]]; then
		nodes=${pkg#nodes=}
		read -r pkg tests <<<"$tests"
	fi
	lines+=("$nodes $pkg $tests")
done <"$list"

start=$SECONDS
for i in "${!lines[@]}"; do
	read -r nodes pkg tests <<<"${lines[$i]}"
	read -ra names <<<"$tests"
	total=$((total + ${#names[@]}))
	echo "real Kafka ($nodes node(s)): go test -run <${#names[@]} tests> $pkg"
	while (($(jobs -rp | wc -l) >= maxjobs)); do
		wait -n || true
	done
	run_line "$i" "$nodes" "$pkg" "${names[@]}" &
done
wait

failed=0
for i in "${!lines[@]}"; do
	read -r nodes pkg tests <<<"${lines[$i]}"
	read -ra names <<<"$tests"
	log="$work/$i.log"
	bad=$(cat "$work/$i.status")
	echo "real Kafka ($nodes node(s)) $pkg: $(grep -E '^(ok|FAIL)[[:space:]]' "$log" | tail -n 1 || echo "no result")"
	for n in "${names[@]}"; do
		if ! grep -q "^--- PASS: $n " "$log"; then
			if grep -q "^--- SKIP: $n " "$log"; then
				echo "real Kafka: $pkg $n skipped; a listed test must run on Kafka"
				grep -A3 "^--- SKIP: $n " "$log" || true
			elif ! grep -q "^--- FAIL: $n " "$log"; then
				echo "real Kafka: $pkg $n did not run (renamed? see $list)"
			fi
			bad=1
		fi
	done
	if ((bad)); then
		echo "real Kafka: the output of $pkg:"
		grep -vE '^(=== (RUN|PAUSE|CONT)|--- PASS)' "$log" | tail -n 200
		failed=1
	fi
done
if ((failed)); then
	exit 1
fi
echo "real Kafka: $total tests passed on Apache Kafka in $((SECONDS - start)) s"
