package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
)

// Topic names RunEOS uses.
const (
	EOSInputTopic = "bench-eos-in"
	// EOSOutputTopic is where the exactly-once count writes,
	// EOSAtLeastOnceOutputTopic where the at-least-once count does.
	EOSOutputTopic            = "bench-eos-out"
	EOSAtLeastOnceOutputTopic = "bench-eos-alos-out"
	// EOSWarmUpOutputTopic is the output of the unmeasured warm-up pass
	// (an at-least-once count).
	EOSWarmUpOutputTopic = "bench-eos-warmup-out"
)

// EOSTarget is the ratio exactly-once/at-least-once the eos benchmark
// must reach.
const EOSTarget = 0.85

// The commit intervals of the eos benchmark: both counts commit every
// 100 ms, as Kafka Streams does under exactly-once (and the runtime by
// default), so that the ratio is the price of the transactions themselves:
// offsets committed inside them, their markers, read-committed fetching.
// Committing more often has a price of its own, the same under both
// guarantees (the record cache folds fewer updates per key, so more
// outputs, changelog records and pebble writes), which `braid bench count`
// shows by its commit interval.
const (
	EOSAtLeastOnceCommitInterval = 100 * time.Millisecond
	EOSCommitInterval            = 100 * time.Millisecond
)

// EOSOptions configure RunEOS. Zero fields take the defaults.
type EOSOptions struct {
	Records    int       // records seeded and counted; default 1,000,000
	Keys       int       // distinct keys; default 10,000
	Partitions int       // partitions of every topic; default 4
	Rounds     int       // rounds of each side; default 5 (a run is short)
	Out        io.Writer // where the report goes; default os.Stdout
	// Brokers is the cluster to run against (bootstrap addresses), whose
	// topics and groups named bench-* are deleted first; empty starts an
	// embedded broker for the run.
	Brokers []string
	// NoWarmUp skips the unmeasured at-least-once pass over the input
	// made before the measured runs (see RunPipe for why there is one).
	NoWarmUp bool
	// ExactlyOnce and AtLeastOnce are the counts compared. Default:
	// BraidCountWith(streams.ExactlyOnce, EOSCommitInterval) and
	// BraidCountWith(streams.AtLeastOnce, EOSAtLeastOnceCommitInterval).
	// Tests put counts that misbehave here, to see the checks catch them.
	ExactlyOnce, AtLeastOnce CountFunc
}

func (o EOSOptions) withDefaults() EOSOptions {
	if o.Rounds == 0 {
		// A run at the default sizes lasts well under a second, so one
		// round's ratio is noisy; the median of five is not.
		o.Rounds = 5
	}
	if o.Records == 0 {
		// Not the windowed benchmark's: eos compares whole runs, which
		// already start at the first record (BraidCountWith).
		o.Records = 1_000_000
	}
	w := WindowedOptions{Records: o.Records, Keys: o.Keys, Partitions: o.Partitions, Rounds: o.Rounds, Out: o.Out}.withDefaults()
	o.Records, o.Keys, o.Partitions, o.Rounds, o.Out = w.Records, w.Keys, w.Partitions, w.Rounds, w.Out
	if o.ExactlyOnce == nil {
		o.ExactlyOnce = BraidCountWith(streams.ExactlyOnce, EOSCommitInterval)
	}
	if o.AtLeastOnce == nil {
		o.AtLeastOnce = BraidCountWith(streams.AtLeastOnce, EOSAtLeastOnceCommitInterval)
	}
	return o
}

// EOSReport is what RunEOS measured.
type EOSReport struct {
	Records    int
	Keys       int
	Partitions int
	GOMAXPROCS int
	Seed       time.Duration // how long seeding took (not compared)
	WarmUp     Run           // the unmeasured pass; zero with NoWarmUp
	Rounds     int
	// ExactlyOnce and AtLeastOnce are each side's median round.
	ExactlyOnce, AtLeastOnce Run
	// Ratios are the rounds' records/s of exactly-once over at-least-once,
	// sorted; Ratio is their median.
	Ratios []float64
	Ratio  float64
}

// RunEOS runs `braid bench eos`, the price of exactly-once: it starts an
// embedded broker with opts.Partitions partitions, seeds EOSInputTopic
// once (Seed, keys over opts.Keys), and counts it (BraidCountWith) at
// least once, committing every EOSAtLeastOnceCommitInterval, and exactly
// once, one transaction every EOSCommitInterval carrying the outputs, the
// changelog records and the input offsets, opts.Rounds times each,
// interleaved (odd rounds run exactly-once first), after an unmeasured
// at-least-once pass. It writes one line per run, the medians, the
// per-round ratios and last
//
//	RESULT eos ratio=<eos/alos> eos=<rec/s> alos=<rec/s>
//
// where the ratio is the median of the rounds' ratios and the rates are
// each side's median. A run is timed from its first record processed to
// the commit of its last (see BraidCountWith).
//
// Every run's output is read back (not timed) by a read-committed
// consumer, as a downstream application of an exactly-once one reads, and
// checked against the input: the last count of every key must equal the
// key's input records, and no transaction may be left open. The
// exactly-once output must also never repeat or lower a key's count: a
// duplicate would. Every topic a run created is deleted after the check.
//
// It returns an error if a run fails or its output is wrong; it does not
// judge the ratio (see EOSTarget).
func RunEOS(ctx context.Context, opts EOSOptions) (EOSReport, error) {
	opts = opts.withDefaults()
	rep := EOSReport{
		Records:    opts.Records,
		Keys:       opts.Keys,
		Partitions: opts.Partitions,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.Rounds < 0 {
		return rep, errors.New("bench eos: records, keys, partitions and rounds must not be negative")
	}

	bc, err := openCluster(ctx, opts.Brokers, broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench eos: %w", err)
	}
	defer bc.close()
	brokers := bc.brokers

	w := opts.Out
	fmt.Fprintf(w, "bench eos: %d records, %d keys, %d partitions, at-least-once committing every %v against exactly-once committing every %v, GOMAXPROCS=%d, %s\n",
		opts.Records, opts.Keys, opts.Partitions, EOSAtLeastOnceCommitInterval, EOSCommitInterval, rep.GOMAXPROCS, bc.name)

	t0 := time.Now()
	if err := Seed(ctx, brokers, EOSInputTopic, opts.Partitions, opts.Records, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench eos: %w", err)
	}
	rep.Seed = time.Since(t0)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("bench eos: creating the admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want, err := keyCounts(ctx, brokers, adm, EOSInputTopic, opts.Records)
	if err != nil {
		return rep, fmt.Errorf("bench eos: %w", err)
	}

	eosName := fmt.Sprintf("braid count exactly-once (commit %v)", EOSCommitInterval)
	alosName := fmt.Sprintf("braid count at-least-once (commit %v)", EOSAtLeastOnceCommitInterval)
	const warmName = "warm-up (braid count at-least-once)"
	width := max(len(eosName), len(alosName), len(warmName))

	checkALOS := func(out string) (int64, error) { return checkCounts(ctx, brokers, out, want, countChecks{}) }
	checkEOS := func(out string) (int64, error) {
		return checkCounts(ctx, brokers, out, want, countChecks{increasing: true})
	}
	runs := &countRuns{bench: "bench eos", brokers: brokers, cl: cl, adm: adm, in: EOSInputTopic,
		partitions: opts.Partitions, records: opts.Records, w: w, width: width, rate: wholeRate}
	var warmUp *Run
	if !opts.NoWarmUp {
		rep.WarmUp = Run{Name: warmName, Out: EOSWarmUpOutputTopic}
		warmUp = &rep.WarmUp
	}
	c, err := compareRounds(ctx, opts.Rounds, warmUp,
		roundSide{runs: runs, name: eosName, label: "eos", out: EOSOutputTopic, gated: true, fn: opts.ExactlyOnce, check: checkEOS},
		roundSide{runs: runs, name: alosName, label: "alos", out: EOSAtLeastOnceOutputTopic, fn: opts.AtLeastOnce, check: checkALOS},
		"exactly-once/at-least-once")
	if err != nil {
		return rep, err
	}
	rep.Rounds, rep.ExactlyOnce, rep.AtLeastOnce, rep.Ratios, rep.Ratio = opts.Rounds, c.num, c.den, c.ratios, c.ratio
	fmt.Fprintf(w, "RESULT eos ratio=%.3f eos=%.0f alos=%.0f\n", rep.Ratio, rep.ExactlyOnce.PerSecond(), rep.AtLeastOnce.PerSecond())
	return rep, nil
}
