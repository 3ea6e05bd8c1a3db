#!/usr/bin/env bash
# The real-Kafka pass of `make test`: runs the tests kafka/tests.txt lists
# against Apache Kafka (each package's TestMain starts a cluster through
# brokertest; BRAID_TEST_KAFKA_NODES picks its size), and fails if one of
# them did not run: a listed test that skips or is missing (renamed?) is an
# error, so the pass cannot pass by testing nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
list=kafka/tests.txt

scripts/kafka.sh fetch
total=0 failed=0
while read -r pkg tests; do
	[[ -z $pkg || $pkg == \#* ]] && continue
	nodes=1
	if [[ $pkg == nodes=* ]]; then
		nodes=${pkg#nodes=}
		read -r pkg tests <<<"$tests"
	fi
	read -ra names <<<"$tests"
	total=$((total + ${#names[@]}))
	re="^($(IFS='|'; echo "${names[*]}"))\$"
	echo "real Kafka ($nodes node(s)): go test -run <${#names[@]} tests> $pkg"
	log=$(mktemp)
	if ! BRAID_TEST_KAFKA=start BRAID_TEST_KAFKA_NODES=$nodes $GO test -count=1 -timeout 20m -v -run "$re" "$pkg" >"$log" 2>&1; then
		failed=1
	fi
	grep -E '^(--- |FAIL|ok|panic)' "$log" | grep -v '^--- PASS' || true
	for n in "${names[@]}"; do
		if ! grep -q "^--- PASS: $n " "$log"; then
			if grep -q "^--- SKIP: $n " "$log"; then
				echo "real Kafka: $pkg $n skipped; a listed test must run on Kafka"
				grep -A3 "^--- SKIP: $n " "$log" || true
			elif ! grep -q "^--- FAIL: $n " "$log"; then
				echo "real Kafka: $pkg $n did not run (renamed? see $list)"
			fi
			failed=1
		fi
	done
	if ((failed)); then
		echo "real Kafka: the full output of $pkg:"
		grep -vE '^(=== (RUN|PAUSE|CONT)|--- PASS)' "$log" | tail -n 200
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
done <"$list"
echo "real Kafka: $total tests passed on Apache Kafka"
