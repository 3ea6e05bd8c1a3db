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
	const list = "Usage: braid bench <pipe|count|restore> [flags]\n\nBenchmarks:\n" +
		"  pipe     a hand-written franz-go pipe against a Braid Filter+MapValues topology\n" +
		"  count    a hand-written franz-go + pebble count against Braid's GroupByKey().Count()\n" +
		"  restore  a plain consumer writing pebble batches against Braid restoring a store"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, list)
		if len(args) == 0 {
			return fmt.Errorf("bench: name a benchmark")
		}
		return nil
	}
	name := args[0]
	if name != "pipe" && name != "count" && name != "restore" {
		return fmt.Errorf("bench: unknown benchmark %q (known: pipe, count, restore)", name)
	}
	defaultRecords, defaultKeys := 1_000_000, 10_000
	if name == "restore" {
		defaultKeys = 100_000
	}
	fs := newFlagSet("bench "+name, "braid bench "+name+" [--records N] [--keys N] [--partitions N] [--rounds N]", stdout)
	records := fs.Int("records", defaultRecords, "records to seed and process")
	keys := fs.Int("keys", defaultKeys, "distinct keys")
	partitions := fs.Int("partitions", 4, "partitions of every topic")
	rounds := fs.Int("rounds", 0, "rounds of every side; each reports its median (default: 5 for pipe, 3 otherwise)")
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
	}
	return err
}
