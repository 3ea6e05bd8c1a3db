package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/braidstream/braid/bench"
	"github.com/braidstream/braid/runtime/streams"
)

// peerMainClass is the Kafka Streams peer's entry point (peer/kstreams).
const peerMainClass = "io.braidstream.peer.Bench"

// runBenchPeer runs `braid bench peer`: Braid and Kafka Streams side by
// side on an Apache Kafka cluster (bench.RunPeer), each run a worker
// process of its own: this binary's `bench peer-worker` and the JVM of the
// peer module that scripts/peer.sh builds.
func runBenchPeer(ctx context.Context, args []string, stdout io.Writer) error {
	usage := "braid bench peer --brokers host:port,... [--records N] [--keys N] [--partitions N] [--rounds N] [--workloads pipe,count,window,join,count-eos,restore,failover] [--commit-interval D] [--eos-commit-interval D] [--cache-max-bytes N] [--session-timeout D] [--failover-rate N] [--failover-warm D] [--kstreams-classpath CP]"
	fs := newFlagSet("bench peer", usage, stdout)
	brokers := fs.String("brokers", "", "the Apache Kafka cluster both sides run against (required); the bench deletes its own topics and groups there (named "+bench.OwnPrefix+"*) first")
	records := fs.Int("records", 1_000_000, "records to seed per workload (the join: both sides together)")
	keys := fs.Int("keys", 10_000, "distinct keys")
	partitions := fs.Int("partitions", 4, "partitions of every topic")
	rounds := fs.Int("rounds", 3, "rounds of each side per workload (each worker warms up with a pass over the input first)")
	workloads := fs.String("workloads", strings.Join(bench.PeerWorkloads, ","), "workloads to run, in order")
	commit := fs.Duration("commit-interval", time.Second, "commit interval of both sides at-least-once")
	eosCommit := fs.Duration("eos-commit-interval", 100*time.Millisecond, "commit interval of both sides exactly-once (count-eos)")
	cache := fs.Int64("cache-max-bytes", 10<<20, "record cache of both sides (Kafka Streams' statestore.cache.max.bytes)")
	session := fs.Duration("session-timeout", 10*time.Second, "group session timeout of both sides in the failover")
	failRate := fs.Int("failover-rate", 4000, "steady input of the failover, records per second")
	failWarm := fs.Duration("failover-warm", 10*time.Second, "how long the failover's steady input flows before the crash")
	classpath := fs.String("kstreams-classpath", "", "the Kafka Streams peer's classpath (default: what scripts/peer.sh build put in the cache, $BRAID_CACHE/kafka-4.4.0/peer/libs/*)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *brokers == "" {
		return fmt.Errorf("bench peer: --brokers is required: Kafka Streams runs against Apache Kafka (make kafka starts one)")
	}
	cp := *classpath
	if cp == "" {
		var err error
		if cp, err = peerClasspath(); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench peer: finding this program: %w", err)
	}
	_, err = bench.RunPeer(ctx, bench.PeerOptions{
		Brokers: streams.SplitBrokers(*brokers), Records: *records, Keys: *keys, Partitions: *partitions, Rounds: *rounds,
		Workloads: strings.Split(*workloads, ","), CommitInterval: *commit, EOSCommitInterval: *eosCommit, CacheMaxBytes: *cache,
		SessionTimeout: *session, FailoverRate: *failRate, FailoverWarm: *failWarm,
		Braid: func(args []string) *exec.Cmd {
			return exec.Command(exe, append([]string{"bench", "peer-worker"}, args...)...)
		},
		KStreams: func(args []string) *exec.Cmd {
			// Kafka Streams' and the JVM's defaults, but for the log level.
			return exec.Command("java", append([]string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, peerMainClass}, args...)...)
		},
		Out: stdout,
	})
	return err
}

// peerClasspath returns the classpath of the peer scripts/peer.sh built
// into the cache.
func peerClasspath() (string, error) {
	cache := os.Getenv("BRAID_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("bench peer: finding the cache: %w", err)
		}
		cache = filepath.Join(dir, "braid")
	}
	libs := filepath.Join(cache, "kafka-4.4.0", "peer", "libs")
	if _, err := os.Stat(filepath.Join(libs, "braid-kstreams-peer.jar")); err != nil {
		return "", fmt.Errorf("bench peer: the Kafka Streams peer is not built in %s (scripts/peer.sh build builds it; make bench-peer does both): %w", libs, err)
	}
	return filepath.Join(libs, "*"), nil
}
