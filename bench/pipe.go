package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// Topic and group names RunPipe uses.
const (
	PipeInputTopic = "bench-in"
	RawOutputTopic = "bench-raw-out"
	RawGroup       = "bench-raw"
	WarmUpTopic    = "bench-warmup-out"
	WarmUpGroup    = "bench-warmup"
	// BraidOutputTopic is the output topic of the first variant; variant
	// i > 0 writes to BraidOutputTopic + "-" + strconv.Itoa(i+1) unless it
	// names its own.
	BraidOutputTopic = "bench-braid-out"
)

// PipeTarget is the ratio braid/raw the gated variant must reach.
const PipeTarget = 0.85

// PipeOptions configure RunPipe. Zero fields take the defaults.
type PipeOptions struct {
	Records        int           // records seeded and piped; default 1,000,000
	Keys           int           // distinct keys; default 10,000
	Partitions     int           // partitions of every topic; default 4
	CommitInterval time.Duration // both pipes commit this often; default 1s
	Out            io.Writer     // where the report goes; default os.Stdout
	// Brokers is the cluster to run against (bootstrap addresses), whose
	// topics and groups named bench-* are deleted first; empty starts an
	// embedded broker for the run.
	Brokers []string
	// NoWarmUp skips the unmeasured raw pass over the input that RunPipe
	// makes before the measured runs (see RunPipe for why it is there).
	NoWarmUp bool
	// Rounds is how many times the raw pipe and every variant run, in
	// turn; each reports its median, and the gated ratio is the median of
	// the rounds' ratios. Default 5: single runs on a shared two-core
	// machine vary by a third.
	Rounds int
}

func (o PipeOptions) withDefaults() PipeOptions {
	if o.Records == 0 {
		o.Records = 1_000_000
	}
	if o.Keys == 0 {
		o.Keys = 10_000
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	return o
}

// PipeFunc runs one pipe from topic in to topic out over the brokers and
// returns after records records went through, at-least-once, committing
// every PipeOptions.CommitInterval. It must measure Result.Elapsed as
// Result says: from its call to the final flush and commit.
type PipeFunc func(ctx context.Context, brokers []string, in, out string, records int) (Result, error)

// Variant is one Braid pipe to measure against the raw pipe.
type Variant struct {
	Name string
	// Gated marks the variant the RESULT line reports. At most one
	// variant may be gated; when none is, the first one is.
	Gated bool
	// Out is the output topic; empty means the default (see
	// BraidOutputTopic).
	Out string
	Run PipeFunc
}

// Run is one measured pipe in a Report.
type Run struct {
	Name  string
	Gated bool
	Out   string // output topic
	Result
	// Wall is how long the call took as RunPipe saw it, including what
	// Elapsed excludes (closing clients, leaving the group).
	Wall time.Duration
	// OutRecords is the number of records in the output topic afterwards
	// (the sum of its partitions' end offsets).
	OutRecords int64
}

// Report is what RunPipe measured.
type Report struct {
	Records        int
	Keys           int
	Partitions     int
	CommitInterval time.Duration
	GOMAXPROCS     int
	Seed           time.Duration // how long seeding took (not compared)
	WarmUp         Run           // the unmeasured pass; zero with NoWarmUp
	Rounds         int
	Raw            Run   // the median round of the raw pipe
	Variants       []Run // each variant's median round, in the order given
	// Ratio is the gated variant's records/s over the raw pipe's.
	Ratio float64
}

// Gated returns the gated variant's run.
func (r Report) Gated() Run {
	for _, v := range r.Variants {
		if v.Gated {
			return v
		}
	}
	return Run{}
}

// RunPipe runs `braid bench pipe`: it starts an embedded broker with
// opts.Partitions partitions, seeds PipeInputTopic once, runs RawPipe (to
// RawOutputTopic, group RawGroup) and then each variant in order, all over
// the same input, checks that every output topic holds at least
// opts.Records records, and writes one line per run and the RESULT line to
// opts.Out. Every output topic is created before the runs, with the input's
// partition count, so no pipe pays for creating one, and deleted once
// counted, so every run starts with the broker holding only the input (the
// embedded broker's log lives in this process's heap).
//
// Before the measured runs, unless opts.NoWarmUp, it pipes the whole input
// once with RawPipe, unmeasured. Without that pass the first pipe of the
// process, the raw one, measured 15-40% slower than an identical raw pipe
// run right after it (the process's heap grows to its working size during
// the first pass, paying page faults), which inflated the ratio in Braid's
// favour. A pass over a tenth of the input did not remove the difference; a
// full pass did.
//
// It returns an error if any run fails or loses records; it does not judge
// the ratio (see PipeTarget).
func RunPipe(ctx context.Context, opts PipeOptions, variants []Variant) (Report, error) {
	opts = opts.withDefaults()
	rep := Report{
		Records:        opts.Records,
		Keys:           opts.Keys,
		Partitions:     opts.Partitions,
		CommitInterval: opts.CommitInterval,
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.CommitInterval < 0 {
		return rep, errors.New("bench pipe: records, keys, partitions and commit interval must not be negative")
	}
	if len(variants) == 0 {
		return rep, errors.New("bench pipe: no Braid variant to measure")
	}
	gated := -1
	for i, v := range variants {
		if v.Run == nil {
			return rep, fmt.Errorf("bench pipe: variant %q has no Run function", v.Name)
		}
		if v.Gated {
			if gated >= 0 {
				return rep, fmt.Errorf("bench pipe: variants %q and %q are both gated", variants[gated].Name, v.Name)
			}
			gated = i
		}
	}
	if gated < 0 {
		gated = 0
	}
	runs := make([]Run, len(variants))
	outs := map[string]string{RawOutputTopic: "the raw pipe", PipeInputTopic: "the input", WarmUpTopic: "the warm-up"}
	for i, v := range variants {
		out := v.Out
		if out == "" {
			out = BraidOutputTopic
			if i > 0 {
				out += "-" + strconv.Itoa(i+1)
			}
		}
		if other, dup := outs[out]; dup {
			return rep, fmt.Errorf("bench pipe: variant %q writes to %s, as %s does", v.Name, out, other)
		}
		outs[out] = fmt.Sprintf("variant %q", v.Name)
		runs[i] = Run{Name: v.Name, Gated: i == gated, Out: out}
	}

	bc, err := openCluster(ctx, opts.Brokers, broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench pipe: %w", err)
	}
	defer bc.close()
	brokers := bc.brokers

	w := opts.Out
	fmt.Fprintf(w, "bench pipe: %d records, %d keys, %d partitions, commit every %v, GOMAXPROCS=%d, %s\n",
		opts.Records, opts.Keys, opts.Partitions, opts.CommitInterval, rep.GOMAXPROCS, bc.name)

	t0 := time.Now()
	if err := Seed(ctx, brokers, PipeInputTopic, opts.Partitions, opts.Records, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench pipe: %w", err)
	}
	rep.Seed = time.Since(t0)

	adm, err := newAdmin(brokers)
	if err != nil {
		return rep, fmt.Errorf("bench pipe: %w", err)
	}
	defer adm.Close()
	outTopics := []string{RawOutputTopic}
	if !opts.NoWarmUp {
		outTopics = append(outTopics, WarmUpTopic)
	}
	for _, r := range runs {
		outTopics = append(outTopics, r.Out)
	}
	for _, t := range outTopics {
		if err := EnsureTopic(ctx, adm, t, opts.Partitions); err != nil {
			return rep, fmt.Errorf("bench pipe: %w", err)
		}
	}
	if n, err := topicRecords(ctx, adm, PipeInputTopic); err != nil {
		return rep, fmt.Errorf("bench pipe: %w", err)
	} else if n != int64(opts.Records) {
		return rep, fmt.Errorf("bench pipe: input topic %s holds %d records after seeding, want %d", PipeInputTopic, n, opts.Records)
	}

	// Names line up in one column.
	width := len("warm-up (raw pipe)")
	for _, r := range runs {
		width = max(width, len(r.Name))
	}

	// measure runs one pipe and checks its output topic.
	measure := func(r *Run, fn PipeFunc, warmUp bool) error {
		if err := EnsureTopic(ctx, adm, r.Out, opts.Partitions); err != nil {
			return fmt.Errorf("bench pipe: %w", err)
		}
		t := time.Now()
		res, err := fn(ctx, brokers, PipeInputTopic, r.Out, opts.Records)
		r.Wall = time.Since(t)
		if err != nil {
			return fmt.Errorf("bench pipe: %s: %w", r.Name, err)
		}
		r.Result = res
		switch {
		case res.Records != opts.Records:
			return fmt.Errorf("bench pipe: %s reports %d records processed, want %d", r.Name, res.Records, opts.Records)
		case res.Elapsed <= 0 || res.Elapsed > r.Wall:
			return fmt.Errorf("bench pipe: %s reports %v elapsed, but its call took %v", r.Name, res.Elapsed, r.Wall)
		}
		n, err := topicRecords(ctx, adm, r.Out)
		if err != nil {
			return fmt.Errorf("bench pipe: %s: %w", r.Name, err)
		}
		r.OutRecords = n
		if n < int64(opts.Records) {
			return fmt.Errorf("bench pipe: %s: output topic %s holds %d records, want at least %d: %d are missing",
				r.Name, r.Out, n, opts.Records, int64(opts.Records)-n)
		}
		line := runLine(width, r.Name, res, wholeRate, warmUp)
		if extra := n - int64(opts.Records); extra > 0 {
			line += fmt.Sprintf("  (output holds %d more records than the input)", extra)
		}
		fmt.Fprintln(w, line)
		// Each run starts with the broker holding only the input: the
		// broker's log lives in this process's heap.
		if _, err := adm.DeleteTopic(ctx, r.Out); err != nil {
			return fmt.Errorf("bench pipe: deleting %s after counting it: %w", r.Out, err)
		}
		return nil
	}

	raw := func(group string) PipeFunc {
		return func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
			return RawPipe(ctx, brokers, in, out, group, records, opts.CommitInterval)
		}
	}
	if !opts.NoWarmUp {
		rep.WarmUp = Run{Name: "warm-up (raw pipe)", Out: WarmUpTopic}
		if err := measure(&rep.WarmUp, raw(WarmUpGroup), true); err != nil {
			return rep, err
		}
	}
	// Rounds interleave the pipes so that a slow spell of the machine
	// hits all of them, and medians drop the outliers.
	rawRounds := make([]Run, opts.Rounds)
	variantRounds := make([][]Run, len(runs))
	// Odd rounds run the raw pipe last: whichever pipe runs right after
	// another's output was deleted pays for the broker's clean-up, so a
	// fixed order would favour one side.
	for round := range opts.Rounds {
		measureRaw := func() error {
			rawRounds[round] = Run{Name: "raw franz-go pipe", Out: RawOutputTopic}
			return measure(&rawRounds[round], raw(fmt.Sprintf("%s-%d", RawGroup, round)), false)
		}
		if round%2 == 0 {
			if err := measureRaw(); err != nil {
				return rep, err
			}
		}
		for i := range runs {
			r := runs[i]
			if err := measure(&r, variants[i].Run, false); err != nil {
				return rep, err
			}
			variantRounds[i] = append(variantRounds[i], r)
		}
		if round%2 == 1 {
			if err := measureRaw(); err != nil {
				return rep, err
			}
		}
	}
	rep.Rounds = opts.Rounds
	rep.Raw = medianRun(rawRounds, wholeRate)
	fmt.Fprintf(w, "medians of %d rounds:\n", opts.Rounds)
	fmt.Fprintf(w, "  %-*s  %9s rec/s\n", width, rep.Raw.Name, thousands(rep.Raw.PerSecond()))
	for i := range runs {
		m := medianRun(variantRounds[i], wholeRate)
		rep.Variants = append(rep.Variants, m)
		fmt.Fprintf(w, "  %-*s  %9s rec/s  (%.3f of raw)\n", width, m.Name, thousands(m.PerSecond()), m.PerSecond()/rep.Raw.PerSecond())
	}

	// The gated ratio is the median of each round's own ratio: the two
	// runs of a round are neighbours in time, so a slow spell of the
	// machine hits both and cancels out, where the ratio of the two
	// medians would mix spells.
	g := rep.Gated()
	gi := slices.IndexFunc(runs, func(r Run) bool { return r.Gated })
	ratios := make([]float64, opts.Rounds)
	for round := range opts.Rounds {
		ratios[round] = variantRounds[gi][round].PerSecond() / rawRounds[round].PerSecond()
	}
	slices.Sort(ratios)
	rep.Ratio = ratios[(len(ratios)-1)/2]
	fmt.Fprintf(w, "per-round ratios of %s: %s\n", g.Name, formatRatios(ratios))
	fmt.Fprintf(w, "RESULT pipe ratio=%.3f braid=%.0f raw=%.0f\n", rep.Ratio, g.PerSecond(), rep.Raw.PerSecond())
	return rep, nil
}

// newAdmin returns an admin client on its own kgo client; close it.
func newAdmin(brokers []string) (*kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// topicRecords returns the sum of topic's partitions' end offsets: its
// record count, for a topic nothing deleted from and written without
// transactions.
func topicRecords(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	if err := offs.Error(); err != nil {
		return 0, fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// thousands formats v rounded to an integer with commas: 812,345.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	if len(s) <= 3 {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/3)
	lead := len(s) % 3
	if lead == 0 {
		lead = 3
	}
	b = append(b, s[:lead]...)
	for i := lead; i < len(s); i += 3 {
		b = append(b, ',')
		b = append(b, s[i:i+3]...)
	}
	return string(b)
}

// medianRun returns the run with the median records/s by rate (the lower
// middle one for an even count).
func medianRun(runs []Run, rate rate) Run {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Run) int { return cmp.Compare(rate.of(a), rate.of(b)) })
	return sorted[(len(sorted)-1)/2]
}

func formatRatios(ratios []float64) string {
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%.3f", r)
	}
	return strings.Join(parts, " ")
}
