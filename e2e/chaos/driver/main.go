// Command driver runs the long chaos runs of `make chaos`: it builds the
// braid binary and the chaos worker, runs an at-least-once run and then an
// exactly-once run (see package chaos), prints their progress and their
// RESULT lines, the exactly-once one last, and exits 1 when exactly-once
// saw any duplicate, loss or wrong count, or at-least-once any loss or
// wrong count. A failed run keeps its logs and says where.
//
//	go run ./e2e/chaos/driver [--duration 5m] [--kills 22] [--rate 200] [--seed N]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/braidstream/braid/e2e/chaos"
	"github.com/braidstream/braid/runtime/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// runSpec is one run's share of the flags.
type runSpec struct {
	guarantee      streams.Guarantee
	duration       time.Duration
	records, kills int
	commitInterval time.Duration
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stdout)
	eos := runSpec{guarantee: streams.ExactlyOnce}
	alo := runSpec{guarantee: streams.AtLeastOnce}
	fs.DurationVar(&eos.duration, "duration", 5*time.Minute, "how long the exactly-once run produces inputs")
	fs.IntVar(&eos.kills, "kills", 22, "kills in the exactly-once run")
	fs.IntVar(&eos.records, "records", 0, "inputs of the exactly-once run; 0: rate × duration")
	fs.DurationVar(&eos.commitInterval, "commit-interval", 0, "commit interval of the exactly-once run; 0: the runtime's default")
	fs.DurationVar(&alo.duration, "alo-duration", 90*time.Second, "how long the at-least-once run produces inputs; 0 skips it")
	fs.IntVar(&alo.kills, "alo-kills", 6, "kills in the at-least-once run")
	fs.IntVar(&alo.records, "alo-records", 0, "inputs of the at-least-once run; 0: rate × alo-duration")
	fs.DurationVar(&alo.commitInterval, "alo-commit-interval", 200*time.Millisecond, "commit interval of the at-least-once run; 0: the runtime's default (30 s)")
	rate := fs.Int("rate", 200, "inputs per second when --records is 0")
	keys := fs.Int("keys", 100, "distinct input keys")
	seed := fs.Uint64("seed", 0, "seed of both runs; 0 picks one per run (printed)")
	keep := fs.Bool("keep", false, "keep every run's directory (logs, state, broker data), not only a failed one's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	root, err := os.MkdirTemp("", "braid-chaos-")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chaos: building braid and the worker in %s\n", root)
	braid, err := chaos.BuildBraid(ctx, root)
	if err != nil {
		return err
	}
	worker, err := chaos.BuildWorker(ctx, root)
	if err != nil {
		return err
	}

	var failed []string
	keepRoot := *keep
	for _, spec := range []runSpec{alo, eos} {
		if spec.duration == 0 {
			continue
		}
		records := spec.records
		if records == 0 {
			records = int(spec.duration.Seconds() * float64(*rate))
		}
		dir := filepath.Join(root, spec.guarantee.String())
		rep, err := chaos.Run(ctx, chaos.Options{
			Braid:          braid,
			Worker:         worker,
			Guarantee:      spec.guarantee,
			Records:        records,
			Keys:           *keys,
			Duration:       spec.duration,
			Kills:          spec.kills,
			Seed:           *seed,
			CommitInterval: spec.commitInterval,
			Dir:            dir,
			Progress:       stdout,
		})
		// A run that failed before its checks has no result to print.
		checked := err == nil
		if checked {
			err = rep.Err()
		}
		fmt.Fprintf(stdout, "chaos: %s run took %v (seed %d, %d inputs, %d kills)\n",
			spec.guarantee, rep.Elapsed.Round(time.Second), rep.Seed, records, rep.Kills)
		if err != nil {
			keepRoot = true
			failed = append(failed, spec.guarantee.String())
			fmt.Fprintf(stdout, "chaos: %s FAILED: %v\nchaos: its logs are in %s/logs; they end:\n%s", spec.guarantee, err, dir, chaos.TailLogs(dir, 15))
		}
		if checked {
			fmt.Fprintln(stdout, rep.ResultLine())
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !keepRoot {
		os.RemoveAll(root)
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %v (directories kept in %s)", failed, root)
	}
	return ctx.Err()
}
