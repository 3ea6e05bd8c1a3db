package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/braidstream/braid/bench"
)

func runBench(ctx context.Context, args []string, stdout io.Writer) error {
	const list = "Usage: braid bench <pipe|count|restore|windowed> [flags]\n\nBenchmarks:\n" +
		"  pipe      a hand-written franz-go pipe against a Braid Filter+MapValues topology\n" +
		"  count     a hand-written franz-go + pebble count against Braid's GroupByKey().Count()\n" +
		"  restore   a plain consumer writing pebble batches against Braid restoring a store\n" +
		"  windowed  Braid's tumbling-window count (emit final) against its plain Count()"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, list)
		if len(args) == 0 {
			return fmt.Errorf("bench: name a benchmark")
		}
		return nil
	}
	name := args[0]
	if name != "pipe" && name != "count" && name != "restore" && name != "windowed" {
		return fmt.Errorf("bench: unknown benchmark %q (known: pipe, count, restore, windowed)", name)
	}
	defaultRecords, defaultKeys := 1_000_000, 10_000
	if name == "restore" {
		defaultKeys = 100_000
	}
	usage := "braid bench " + name + " [--records N] [--keys N] [--partitions N] [--rounds N]"
	if name == "windowed" {
		usage += " [--event-rate N]"
	}
	fs := newFlagSet("bench "+name, usage, stdout)
	records := fs.Int("records", defaultRecords, "records to seed and process")
	keys := fs.Int("keys", defaultKeys, "distinct keys")
	partitions := fs.Int("partitions", 4, "partitions of every topic")
	rounds := fs.Int("rounds", 0, "rounds of every side; each reports its median (default: 5 for pipe, 3 otherwise)")
	eventRate := bench.DefaultEventRate
	if name == "windowed" {
		fs.IntVar(&eventRate, "event-rate", bench.DefaultEventRate, "records per second of event time")
	}
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
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
	var err error
	switch name {
	case "pipe":
		_, err = bench.RunPipe(ctx, bench.PipeOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: *rounds, Out: stdout}, bench.BraidVariants())
	case "count":
		_, err = bench.RunCount(ctx, bench.CountOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: *rounds, Out: stdout}, bench.BraidCount)
	case "restore":
		_, err = bench.RunRestore(ctx, bench.RestoreOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: *rounds, Out: stdout}, bench.BraidRestore)
	case "windowed":
		_, err = bench.RunWindowed(ctx, bench.WindowedOptions{Records: *records, Keys: *keys, Partitions: *partitions, EventRate: eventRate, Rounds: *rounds, Out: stdout}, bench.BraidWindowedCount, bench.BraidCount)
	}
	return err
}
