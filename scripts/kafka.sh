#!/usr/bin/env bash
# Apache Kafka for Braid's tests, benchmarks and chaos runs, and for a person
# who wants a real broker (`make kafka`): fetches the jars kafka/pom.xml pins
# into a cache once, and runs a KRaft cluster of one node (broker and
# controller combined) or three on loopback, each node with its own data
# directory and a bounded heap.
#
#   scripts/kafka.sh fetch                 jars into the cache (offline after)
#   scripts/kafka.sh start --dir D [--port P] [--controller-port C]
#                          [--nodes N] [--watch-pid PID] [--extra-config F]
#                                          format and start a cluster in D, in
#                                          the background; returns when every
#                                          node has started; prints the
#                                          bootstrap servers
#   scripts/kafka.sh stop --dir D [--kill] stop the cluster in D (SIGTERM, or
#                                          SIGKILL with --kill)
#   scripts/kafka.sh node stop|kill|pause|resume|start --dir D --node I
#                                          one node of a running cluster (the
#                                          chaos runs' broker faults)
#   scripts/kafka.sh run [--port P] [--nodes N]
#                                          start one in a temporary directory
#                                          in the foreground; Ctrl-C stops it
#
# Node I (1-based) listens for clients on P+I-1 and for its controller
# quorum on C+I-1 (C defaults to P+100). --watch-pid makes a watchdog stop the cluster (and
# delete D) when that process exits, so a test binary killed mid-run leaves
# no broker behind. --extra-config appends the lines of F to every node's
# server.properties, where a property set again (listeners, say) overrides
# the one above it: a test's secured listener beside the PLAINTEXT one. In
# them @NODE@, @PORT@ and @CONTROLLER_PORT@ are the node's number and its
# client and controller ports. The cache is $BRAID_CACHE (default ~/.cache/braid).
set -euo pipefail

KAFKA_VERSION=4.4.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
pom="$root/kafka/pom.xml"
cache="${BRAID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/braid}/kafka-$KAFKA_VERSION"
heap="${KAFKA_HEAP:-512m}"

die() {
	echo "kafka.sh: $*" >&2
	exit 1
}

# fetch copies the pom's runtime dependencies into $cache/libs unless the
# cache already holds them for this very pom (its checksum is the stamp).
fetch() {
	local stamp want
	want=$(sha256sum "$pom" | cut -d' ' -f1)
	stamp="$cache/libs/.pom-sha256"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		return 0
	fi
	command -v java >/dev/null || die "java not found (scripts/install-deps.sh installs OpenJDK 17)"
	command -v mvn >/dev/null || die "mvn not found (scripts/install-deps.sh installs Maven)"
	mkdir -p "$cache"
	local tmp
	tmp=$(mktemp -d "$cache/fetch.XXXXXX")
	echo "kafka.sh: fetching Apache Kafka $KAFKA_VERSION into $cache (once)" >&2
	if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "fetching Kafka's jars with Maven failed (log above)"
	fi
	echo "$want" >"$tmp/libs/.pom-sha256"
	rm -rf "$cache/libs"
	mv "$tmp/libs" "$cache/libs"
	rm -rf "$tmp"
}

java_cmd() {
	java -Xms128m -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$1" \
		-cp "$cache/libs/*" "${@:2}"
}

# write_config D I N P C [X] writes node I's server.properties, followed
# by the lines of file X when given, and log4j2 config.
write_config() {
	local dir=$1 i=$2 n=$3 port=$4 cport=$5 extra=${6:-}
	local node="$dir/node-$i" voters="" j rf isr
	for ((j = 1; j <= n; j++)); do
		voters+="${voters:+,}$j@127.0.0.1:$((cport + j - 1))"
	done
	rf=$((n < 3 ? n : 3))
	isr=$((rf >= 3 ? 2 : 1))
	mkdir -p "$node/data"
	cat >"$node/server.properties" <<-EOF
		process.roles=broker,controller
		node.id=$i
		controller.quorum.voters=$voters
		controller.listener.names=CONTROLLER
		listeners=PLAINTEXT://127.0.0.1:$((port + i - 1)),CONTROLLER://127.0.0.1:$((cport + i - 1))
		advertised.listeners=PLAINTEXT://127.0.0.1:$((port + i - 1))
		listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
		inter.broker.listener.name=PLAINTEXT
		log.dirs=$node/data
		num.partitions=4
		default.replication.factor=$rf
		offsets.topic.replication.factor=$rf
		offsets.topic.num.partitions=10
		transaction.state.log.replication.factor=$rf
		transaction.state.log.min.isr=$isr
		transaction.state.log.num.partitions=10
		share.coordinator.state.topic.replication.factor=$rf
		share.coordinator.state.topic.min.isr=$isr
		group.initial.rebalance.delay.ms=0
		group.min.session.timeout.ms=500
		log.retention.ms=-1
		log.cleaner.backoff.ms=1000
		log.cleaner.min.compaction.lag.ms=0
		num.network.threads=2
		num.io.threads=4
		auto.create.topics.enable=true
		delete.topic.enable=true
	EOF
	if [[ -n $extra ]]; then
		sed -e "s/@NODE@/$i/g" -e "s/@PORT@/$((port + i - 1))/g" \
			-e "s/@CONTROLLER_PORT@/$((cport + i - 1))/g" "$extra" >>"$node/server.properties"
	fi
	cat >"$node/log4j2.properties" <<-EOF
		appender.file.type=File
		appender.file.name=file
		appender.file.fileName=$node/server.log
		appender.file.layout.type=PatternLayout
		appender.file.layout.pattern=[%d] %p %m (%c)%n
		rootLogger.level=WARN
		rootLogger.appenderRef.file.ref=file
		logger.started.name=kafka.server.KafkaRaftServer
		logger.started.level=INFO
	EOF
}

# start_node D I launches node I in the background (its own session, so a
# Ctrl-C meant for make reaches it only through stop) and records its pid.
start_node() {
	local dir=$1 i=$2 node="$1/node-$2"
	: >"$node/server.log"
	setsid bash -c 'exec "$@" >>"$0/stdout.log" 2>&1' "$node" \
		java -Xms128m -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$node/log4j2.properties" \
		-cp "$cache/libs/*" kafka.Kafka "$node/server.properties" </dev/null &
	echo $! >"$node/pid"
}

# wait_started D I waits for node I's readiness line, failing if the node
# exits first or has not started within 120 s.
wait_started() {
	local node="$1/node-$2" pid deadline=$((SECONDS + 120))
	pid=$(cat "$node/pid")
	until grep -q "Kafka Server started" "$node/server.log" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 40 "$node/stdout.log" "$node/server.log" >&2 || true
			die "node $2 exited while starting (logs in $node)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 40 "$node/server.log" >&2 || true
			die "node $2 did not start within 120 s (logs in $node)"
		fi
		sleep 0.1
	done
}

cmd_start() {
	local dir="" port=19092 cport="" nodes=1 watch="" extra=""
	while (($#)); do
		case $1 in
		--dir) dir=$2; shift 2 ;;
		--extra-config) extra=$2; shift 2 ;;
		--port) port=$2; shift 2 ;;
		--controller-port) cport=$2; shift 2 ;;
		--nodes) nodes=$2; shift 2 ;;
		--watch-pid) watch=$2; shift 2 ;;
		*) die "start: unknown argument $1" ;;
		esac
	done
	[[ -n $dir ]] || die "start: --dir is required"
	[[ $nodes =~ ^[1-9]$ ]] || die "start: --nodes must be 1 to 9, not $nodes"
	cport=${cport:-$((port + 100))}
	if [[ -n $extra ]]; then
		[[ -f $extra ]] || die "start: --extra-config $extra: no such file"
		extra=$(cd "$(dirname "$extra")" && pwd)/$(basename "$extra")
	fi
	fetch
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local cluster_id i
	# A random id, base64url as Kafka's; one that begins with "-" would
	# read as an option to the storage tool, so draw again.
	cluster_id=-
	while [[ $cluster_id == -* ]]; do
		cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	done
	echo "$nodes" >"$dir/nodes"
	echo "$port" >"$dir/port"
	for ((i = 1; i <= nodes; i++)); do
		write_config "$dir" "$i" "$nodes" "$port" "$cport" "$extra"
		java_cmd "$dir/node-$i/log4j2.properties" kafka.tools.StorageTool format \
			-t "$cluster_id" -c "$dir/node-$i/server.properties" --ignore-formatted \
			>"$dir/node-$i/format.log" 2>&1 ||
			{ cat "$dir/node-$i/format.log" >&2; die "formatting node $i failed"; }
	done
	for ((i = 1; i <= nodes; i++)); do
		start_node "$dir" "$i"
	done
	if [[ -n $watch ]]; then
		# The watchdog polls its process once a second: no event tells a
		# process that an unrelated one exited.
		setsid bash -c '
			while kill -0 "$1" 2>/dev/null; do sleep 1; done
			for p in "$2"/node-*/pid; do kill -9 "$(cat "$p")" 2>/dev/null || true; done
			rm -rf "$2"' _ "$watch" "$dir" </dev/null >/dev/null 2>&1 &
		echo $! >"$dir/watchdog.pid"
	fi
	for ((i = 1; i <= nodes; i++)); do
		wait_started "$dir" "$i"
	done
	local servers=""
	for ((i = 1; i <= nodes; i++)); do
		servers+="${servers:+,}127.0.0.1:$((port + i - 1))"
	done
	echo "$servers" >"$dir/bootstrap"
	echo "$servers"
}

# stop_pid PID SIGNAL signals a node and waits for it to exit.
stop_pid() {
	local pid=$1 sig=$2
	kill -"$sig" "$pid" 2>/dev/null || return 0
	# A broker's clean shutdown takes a few seconds; it may wait on its
	# controller quorum, so give up on SIGTERM after 30 s.
	local waited=0
	while kill -0 "$pid" 2>/dev/null; do
		if ((waited >= 300)); then
			kill -9 "$pid" 2>/dev/null || true
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
}

cmd_stop() {
	local dir="" sig=TERM
	while (($#)); do
		case $1 in
		--dir) dir=$2; shift 2 ;;
		--kill) sig=KILL; shift ;;
		*) die "stop: unknown argument $1" ;;
		esac
	done
	[[ -n $dir && -d $dir ]] || die "stop: no cluster in ${dir:-(no --dir)}"
	if [[ -f $dir/watchdog.pid ]]; then
		kill "$(cat "$dir/watchdog.pid")" 2>/dev/null || true
	fi
	local p pids=()
	for p in "$dir"/node-*/pid; do
		[[ -f $p ]] && pids+=("$(cat "$p")")
	done
	# Resume paused nodes first, or SIGTERM would wait for them forever.
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do stop_pid "$p" "$sig" & done
	wait
}

cmd_node() {
	local action=${1:-} dir="" node=""
	shift || true
	while (($#)); do
		case $1 in
		--dir) dir=$2; shift 2 ;;
		--node) node=$2; shift 2 ;;
		*) die "node: unknown argument $1" ;;
		esac
	done
	[[ -n $dir && -f $dir/node-$node/pid ]] || die "node: no node ${node:-(no --node)} in ${dir:-(no --dir)}"
	local pid
	pid=$(cat "$dir/node-$node/pid")
	case $action in
	stop) stop_pid "$pid" TERM ;;
	kill) stop_pid "$pid" KILL ;;
	pause) kill -STOP "$pid" ;;
	resume) kill -CONT "$pid" ;;
	start)
		kill -0 "$pid" 2>/dev/null && die "node $node is running (pid $pid)"
		start_node "$dir" "$node"
		wait_started "$dir" "$node"
		;;
	*) die "node: action must be stop, kill, pause, resume or start, not ${action:-nothing}" ;;
	esac
}

cmd_run() {
	local port=${KAFKA_PORT:-19092} nodes=${KAFKA_NODES:-1}
	while (($#)); do
		case $1 in
		--port) port=$2; shift 2 ;;
		--nodes) nodes=$2; shift 2 ;;
		*) die "run: unknown argument $1" ;;
		esac
	done
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-kafka.XXXXXX")
	trap 'echo "kafka.sh: stopping"; cmd_stop --dir "$dir"; rm -rf "$dir"; exit 0' INT TERM
	local servers
	servers=$(cmd_start --dir "$dir" --port "$port" --nodes "$nodes" --watch-pid $$)
	echo "Apache Kafka $KAFKA_VERSION ($nodes node(s), KRaft) is up: bootstrap servers $servers"
	echo "logs in $dir/node-*/server.log; Ctrl-C stops it"
	# Wait for any node to exit (or for Ctrl-C).
	local pids=() p
	for p in "$dir"/node-*/pid; do pids+=("$(cat "$p")"); done
	while true; do
		for p in "${pids[@]}"; do
			kill -0 "$p" 2>/dev/null || { echo "kafka.sh: node with pid $p exited; stopping" >&2; cmd_stop --dir "$dir"; exit 1; }
		done
		sleep 1 &
		wait $! || true
	done
}

case ${1:-} in
fetch) fetch ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
node) shift; cmd_node "$@" ;;
run) shift; cmd_run "$@" ;;
*) die "usage: kafka.sh fetch | start --dir D [--port P] [--nodes N] [--watch-pid PID] [--extra-config F] | stop --dir D [--kill] | node ACTION --dir D --node I | run [--port P] [--nodes N]" ;;
esac
