package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/braidstream/braid/bench"
	"github.com/braidstream/braid/runtime/streams"
)

func runBench(ctx context.Context, args []string, stdout io.Writer) error {
	const list = "Usage: braid bench <pipe|count|restore|windowed|failover|eos|join|snapshot|peer> [flags]\n\nBenchmarks:\n" +
		"  pipe      a hand-written franz-go pipe against a Braid Filter+MapValues topology\n" +
		"  count     Braid's GroupByKey().Count() against its ceiling (franz-go, a map, each changed key written once per commit) and a naive franz-go + pebble count\n" +
		"  restore   a plain consumer writing pebble batches against Braid restoring a store\n" +
		"  windowed  Braid's tumbling-window count (emit final) against its plain Count(), and against its ceiling (franz-go, open windows in a map by key)\n" +
		"  failover  crash one of 3 instances of a count (standby or none, cooperative or eager, exactly-once): detection, recovery, downtime, stayed tasks' gaps\n" +
		"  eos       Braid's Count() exactly-once (a transaction every 100ms) against at-least-once, both committing every 100ms\n" +
		"  join      Braid's stream-stream inner join of two halves of the records (5s windows) against a hand-written franz-go join (in-memory buffers, changelog per record), and its Count() of all of them\n" +
		"  snapshot  a store of 1,000,000 keys restored on a fresh state dir from its changelog against from a snapshot in a blob store plus the changelog's tail\n" +
		"  peer      Braid against Kafka Streams 4.4.0 on an Apache Kafka cluster: pipe, count, windowed count, join and exactly-once count, each a process of its own"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, list)
		if len(args) == 0 {
			return fmt.Errorf("bench: name a benchmark")
		}
		return nil
	}
	name := args[0]
	switch name {
	case "peer":
		return runBenchPeer(ctx, args[1:], stdout)
	case "snapshot":
		return runBenchSnapshot(ctx, args[1:], stdout)
	case "peer-worker":
		// Not listed: the Braid side of bench peer, in a process of its own.
		return bench.RunPeerWorker(ctx, args[1:], stdout)
	}
	if name != "pipe" && name != "count" && name != "restore" && name != "windowed" && name != "failover" && name != "eos" && name != "join" {
		return fmt.Errorf("bench: unknown benchmark %q (known: pipe, count, restore, windowed, failover, eos, join, snapshot, peer)", name)
	}
	defaultRecords, defaultKeys, defaultPartitions := 1_000_000, 10_000, 4
	if name == "join" || name == "count" || name == "windowed" || name == "restore" {
		// Their ratios are of steady state: enough records that the
		// steady span outlasts start-up and final commit by far.
		defaultRecords = 3_000_000
	}
	if name == "restore" || name == "failover" {
		defaultKeys = 100_000
	}
	if name == "failover" {
		defaultPartitions = 8
	}
	usage := "braid bench " + name + " [--records N] [--keys N] [--partitions N]"
	switch name {
	case "failover":
		usage += " [--instances N] [--session-timeout D] [--rate N]"
	case "windowed":
		usage += " [--rounds N] [--event-rate N]"
	default:
		usage += " [--rounds N]"
	}
	fs := newFlagSet("bench "+name, usage, stdout)
	recordsUsage := "records to seed and process"
	if name == "failover" {
		recordsUsage = "records to seed per run: the changelog records of the count"
	}
	if name == "join" {
		recordsUsage = "records to seed and process, half to each side of the join"
	}
	records := fs.Int("records", defaultRecords, recordsUsage)
	keys := fs.Int("keys", defaultKeys, "distinct keys")
	partitions := fs.Int("partitions", defaultPartitions, "partitions of every topic")
	var rounds, instances, rate int
	var sessionTimeout time.Duration
	if name == "failover" {
		fs.IntVar(&instances, "instances", 3, "instances of the topology, one of which is crashed")
		fs.DurationVar(&sessionTimeout, "session-timeout", 10*time.Second, "group session timeout: how long a crash nobody sees takes to detect")
		fs.IntVar(&rate, "rate", 20_000, "steady input during each run, in records per second")
	} else {
		fs.IntVar(&rounds, "rounds", 0, "rounds of every side; each reports its median (default: 5 for pipe and eos, 3 otherwise)")
	}
	eventRate := bench.DefaultEventRate
	if name == "windowed" {
		fs.IntVar(&eventRate, "event-rate", bench.DefaultEventRate, "records per second of event time")
	}
	var brokers string
	if name == "pipe" || name == "count" || name == "eos" || name == "failover" {
		usage += " [--brokers host:port,...]"
		fs.StringVar(&brokers, "brokers", "", "run against this Kafka cluster instead of an embedded broker; the bench deletes its own topics and groups there (named "+bench.OwnPrefix+"*) first")
	}
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := fs.String("memprofile", "", "write a profile of the whole run's allocations to this file")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *memProfile != "" {
		// A sample every 4 KB rather than 512 KB: runs are short, and
		// the profile is for finding what they allocate.
		runtime.MemProfileRate = 4096
		defer func() {
			if err := writeAllocsProfile(*memProfile); err != nil {
				fmt.Fprintf(os.Stderr, "braid: %v\n", err)
			}
		}()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if name == "failover" && (*records <= 0 || *keys <= 0 || *partitions <= 0 || instances < 2 || sessionTimeout <= 0 || rate <= 0) {
		return fmt.Errorf("bench failover: --records, --keys, --partitions, --session-timeout and --rate must be positive, --instances at least 2")
	}
	var err error
	switch name {
	case "pipe":
		_, err = bench.RunPipe(ctx, bench.PipeOptions{Brokers: streams.SplitBrokers(brokers), Records: *records, Keys: *keys, Partitions: *partitions, Rounds: rounds, Out: stdout}, bench.BraidVariants())
	case "count":
		_, err = bench.RunCount(ctx, bench.CountOptions{Brokers: streams.SplitBrokers(brokers), Records: *records, Keys: *keys, Partitions: *partitions, Rounds: rounds, Out: stdout}, bench.BraidCount)
	case "restore":
		_, err = bench.RunRestore(ctx, bench.RestoreOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: rounds, Out: stdout}, bench.BraidRestore)
	case "windowed":
		_, err = bench.RunWindowed(ctx, bench.WindowedOptions{Records: *records, Keys: *keys, Partitions: *partitions, EventRate: eventRate, Rounds: rounds, Out: stdout}, bench.BraidWindowedCount, bench.BraidCount)
	case "join":
		_, err = bench.RunJoin(ctx, bench.JoinOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: rounds, Out: stdout})
	case "eos":
		_, err = bench.RunEOS(ctx, bench.EOSOptions{Brokers: streams.SplitBrokers(brokers), Records: *records, Keys: *keys, Partitions: *partitions, Rounds: rounds, Out: stdout})
	case "failover":
		_, err = bench.RunFailover(ctx, bench.FailoverOptions{Brokers: streams.SplitBrokers(brokers), Records: *records, Keys: *keys, Partitions: *partitions, Instances: instances,
			SessionTimeout: sessionTimeout, Rate: rate, Out: stdout})
	}
	return err
}

// writeAllocsProfile writes the allocations profile to path.
func writeAllocsProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the allocations profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("writing the allocations profile: %w", err)
	}
	return nil
}

// runBenchSnapshot runs braid bench snapshot.
func runBenchSnapshot(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bench snapshot", "braid bench snapshot [--keys N] [--tail N]", stdout)
	keys := fs.Int("keys", 1_000_000, "keys in the store, one changelog record each (about 100 bytes a record)")
	tail := fs.Int("tail", 10_000, "changelog records written after the snapshot")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keys <= 0 || *tail <= 0 {
		return fmt.Errorf("bench snapshot: --keys and --tail must be positive")
	}
	_, err := bench.RunSnapshot(ctx, bench.SnapshotOptions{Keys: *keys, Tail: *tail, Out: stdout})
	return err
}
