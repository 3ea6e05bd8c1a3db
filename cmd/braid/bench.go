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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "Usage: braid bench pipe [--records N]\n\nBenchmarks:\n  pipe   a hand-written franz-go pipe against a Braid Filter+MapValues topology, in one run")
		if len(args) == 0 {
			return fmt.Errorf("bench: name a benchmark")
		}
		return nil
	}
	if args[0] != "pipe" {
		return fmt.Errorf("bench: unknown benchmark %q (known: pipe)", args[0])
	}
	fs := newFlagSet("bench pipe", "braid bench pipe [--records N] [--keys N] [--partitions N] [--rounds N]", stdout)
	records := fs.Int("records", 1_000_000, "records to seed and pipe")
	keys := fs.Int("keys", 10_000, "distinct keys")
	partitions := fs.Int("partitions", 4, "partitions of every topic")
	rounds := fs.Int("rounds", 3, "rounds of every pipe; each reports its median")
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
	_, err := bench.RunPipe(ctx, bench.PipeOptions{Records: *records, Keys: *keys, Partitions: *partitions, Rounds: *rounds, Out: stdout}, bench.BraidVariants())
	return err
}
