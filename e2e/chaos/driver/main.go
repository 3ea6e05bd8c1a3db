// Command driver runs the long chaos runs of `make chaos`: it builds the
// braid binary and the chaos worker, runs an at-least-once run and then an
// exactly-once run (see package chaos), prints their progress and their
// RESULT lines, the exactly-once one last, and exits 1 when exactly-once
// saw any duplicate, loss or wrong count, or at-least-once any loss or
// wrong count. Then it runs the broker faults (chaos.RunFault), each on a
// fresh setup under at-least-once and then exactly-once, prints a FAULT
// line per run and the RESULT broker-faults line, and exits 1 unless
// every fault recovered (every worker committing again within
// chaos.MaxResume of the broker's return, the checks passed) with nothing
// lost or duplicated. A failed run keeps its logs and says where.
//
//	go run ./e2e/chaos/driver [--duration 5m] [--kills 22] [--rate 200] [--seed N] [--broker-faults all]
//
// --duration 0 --alo-duration 0 runs the broker faults alone;
// --broker-faults none skips them.
//
// --kafka runs everything on an Apache Kafka cluster of three nodes
// (brokertest.StartKafka, scripts/kafka.sh) instead of `braid broker`,
// cleared between runs, and its broker faults are Kafka's
// (chaos.KafkaFaults): the node leading the most input, changelog and
// sink partitions killed and started again, one node stopped with
// SIGSTOP, the active controller killed and started again, the whole
// cluster stopped and started again.
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
	"strings"
	"syscall"
	"time"

	"github.com/braidstream/braid/e2e/chaos"
	"github.com/braidstream/braid/runtime/broker/brokertest"
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
	faultList := fs.String("broker-faults", "all", "broker faults to run after the kill runs, each under both guarantees: all ("+strings.Join(chaos.BrokerFaults, ",")+"; with --kafka "+strings.Join(chaos.KafkaFaults, ",")+"), none, or a comma-separated list of kill-restart-D, stop-D, cut-D (with --kafka leader-kill-D, stop-D, controller-kill-D, cluster-restart-D)")
	onKafka := fs.Bool("kafka", false, "run on an Apache Kafka cluster of three nodes (scripts/kafka.sh) instead of the embedded broker, with Kafka's broker faults")
	faultRate := fs.Int("fault-rate", 500, "inputs per second of the broker-fault runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	faults, err := chaos.ParseFaults(*faultList, *onKafka)
	if err != nil {
		return err
	}
	var kafka *brokertest.Kafka
	if *onKafka {
		fmt.Fprintln(stdout, "chaos: starting Apache Kafka, three nodes")
		if kafka, err = brokertest.StartKafka(3); err != nil {
			return fmt.Errorf("starting Apache Kafka: %w", err)
		}
		defer kafka.Stop()
		fmt.Fprintf(stdout, "chaos: Apache Kafka is up at %s (data in %s)\n", strings.Join(kafka.Addrs, ","), kafka.Dir)
	}

	root, err := os.MkdirTemp("", "braid-chaos-")
	if err != nil {
		return err
	}
	// Kafka needs no braid binary: it runs no `braid broker`.
	braid := ""
	if kafka == nil {
		fmt.Fprintf(stdout, "chaos: building braid and the worker in %s\n", root)
		if braid, err = chaos.BuildBraid(ctx, root); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "chaos: building the worker in %s\n", root)
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
			Kafka:          kafka,
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
	if ctx.Err() == nil && len(faults) > 0 {
		bad := runFaults(ctx, stdout, faults, chaos.Options{Braid: braid, Worker: worker, Kafka: kafka, Keys: *keys, Seed: *seed}, root, *faultRate, *keep)
		failed = append(failed, bad...)
		keepRoot = keepRoot || len(bad) > 0
	}
	if !keepRoot {
		os.RemoveAll(root)
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %v (directories kept in %s)", failed, root)
	}
	return ctx.Err()
}

// runFaults runs every fault under both guarantees, each on a fresh
// setup in its own directory of root, prints a FAULT line per run and
// the RESULT broker-faults line, and returns the runs that failed: the
// whole scenario when the result is not clean. A failed run's directory
// is kept, the others' removed unless keep.
func runFaults(ctx context.Context, stdout io.Writer, faults []chaos.Fault, base chaos.Options, root string, rate int, keep bool) []string {
	var (
		reps   []chaos.FaultReport
		failed []string
	)
	for _, f := range faults {
		for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
			dir := filepath.Join(root, "broker-faults", f.String()+"-"+g.String())
			o := base
			o.Guarantee, o.Dir, o.Progress = g, dir, stdout
			rep, err := chaos.RunFault(ctx, chaos.FaultOptions{
				Options: o,
				Fault:   f,
				Rate:    rate,
			})
			if err == nil {
				err = rep.Err()
			}
			reps = append(reps, rep)
			fmt.Fprintln(stdout, rep.ResultLine())
			if err != nil {
				failed = append(failed, f.String()+" "+g.String())
				fmt.Fprintf(stdout, "chaos: %s %s FAILED: %v\nchaos: its logs are in %s/logs; they end:\n%s", f, g, err, dir, chaos.TailLogs(dir, 15))
			} else if !keep {
				os.RemoveAll(dir)
			}
			if ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintln(stdout, chaos.FaultsResultLine(reps))
	return failed
}
