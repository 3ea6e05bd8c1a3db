package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/braidstream/braid/runtime/broker"
)

// Topic and group names RunCount uses.
const (
	CountInputTopic = "bench-count-in"
	// The hand-written count's output, changelog and group; round i uses
	// the group HandwrittenCountGroup + "-" + i.
	HandwrittenCountOutputTopic    = "bench-count-handwritten-out"
	HandwrittenCountChangelogTopic = "bench-count-handwritten-changelog"
	HandwrittenCountGroup          = "bench-count-handwritten"
	// The cached count ceiling's output, changelog and group; round i uses
	// the group CachedCountGroup + "-" + i.
	CachedCountOutputTopic    = "bench-count-ceiling-out"
	CachedCountChangelogTopic = "bench-count-ceiling-changelog"
	CachedCountGroup          = "bench-count-ceiling"
	// The unmeasured warm-up pass (a hand-written count).
	CountWarmUpOutputTopic    = "bench-count-warmup-out"
	CountWarmUpChangelogTopic = "bench-count-warmup-changelog"
	CountWarmUpGroup          = "bench-count-warmup"
	// BraidCountOutputTopic is the out topic RunCount passes to Braid.
	BraidCountOutputTopic = "bench-count-braid-out"
)

// CountTarget is the ratio braid/ceiling (Braid's count against
// CachedCount) the count benchmark must reach. Braid against the naive
// HandwrittenCount is reported beside it, not gated: it measures caching
// against no caching.
const CountTarget = 0.9

// CountOptions configure RunCount. Zero fields take the defaults.
type CountOptions struct {
	Records        int           // records seeded and counted; default 3,000,000
	Keys           int           // distinct keys; default 10,000
	Partitions     int           // partitions of every topic; default 4
	CommitInterval time.Duration // the hand-written counts commit this often; default 1s, BraidCount's interval
	Rounds         int           // rounds of each side, each reports its median; default 3
	Out            io.Writer     // where the report goes; default os.Stdout
	// Brokers is the cluster to run against (bootstrap addresses), whose
	// topics and groups named bench-* are deleted first; empty starts an
	// embedded broker for the run.
	Brokers []string
	// NoWarmUp skips the unmeasured hand-written pass over the input made
	// before the measured runs (see RunPipe for why there is one).
	NoWarmUp bool
}

func (o CountOptions) withDefaults() CountOptions {
	if o.Records == 0 {
		// Enough that the steady span outlasts the start-up by far.
		o.Records = 3_000_000
	}
	p := PipeOptions{Records: o.Records, Keys: o.Keys, Partitions: o.Partitions, CommitInterval: o.CommitInterval, Rounds: o.Rounds, Out: o.Out}.withDefaults()
	o.Records, o.Keys, o.Partitions, o.CommitInterval, o.Rounds, o.Out = p.Records, p.Keys, p.Partitions, p.CommitInterval, p.Rounds, p.Out
	return o
}

// CountFunc runs Braid's count: the records of topic in grouped by key and
// counted (GroupByKey().Count(), record cache on, at-least-once,
// committing every second), each count update written to topic out with
// the record's key and the count as an 8-byte big-endian int64 (Kafka's
// LongSerializer). Braid creates its own changelog. It returns once records
// records are processed, their outputs and changelog writes flushed and
// their offsets committed, measuring Result.Elapsed over the span Result
// describes, as HandwrittenCount and CachedCount do.
type CountFunc func(ctx context.Context, brokers []string, in, out string, records int) (Result, error)

// CountReport is what RunCount measured.
type CountReport struct {
	Records        int
	Keys           int
	Partitions     int
	CommitInterval time.Duration
	GOMAXPROCS     int
	Seed           time.Duration // how long seeding took (not compared)
	WarmUp         Run           // the unmeasured pass; zero with NoWarmUp
	Rounds         int
	// Handwritten, Ceiling and Braid are the median rounds, by steady
	// records/s, of HandwrittenCount, CachedCount and the CountFunc.
	Handwritten Run
	Ceiling     Run
	Braid       Run
	// Ratios are each round's Braid steady records/s over the
	// ceiling's, sorted; Ratio is their median, what CountTarget gates.
	Ratios []float64
	Ratio  float64
	// NaiveRatios and NaiveRatio are the same of Braid over the
	// hand-written count.
	NaiveRatios []float64
	NaiveRatio  float64
	// WholeRatio is Ratio of the whole runs' records/s, start-up and
	// final commit included: what Ratio was before the phases.
	WholeRatio float64
}

// countSide is one of the sides RunCount measures.
type countSide struct {
	name      string
	label     string // its pprof label, bench=<label>
	out       string
	changelog string // the hand-written sides' changelog, "" for Braid's
	gated     bool
	// exact: one output and one changelog record per input record (the
	// hand-written count); otherwise at least one per key and at most one
	// per input record, counts going up (the ceiling), or, with no
	// changelog (Braid), at least one output per key.
	exact bool
	fn    func(round int) CountFunc
	runs  []Run
}

// RunCount runs the count benchmark: it starts an embedded broker with
// opts.Partitions partitions, seeds CountInputTopic once (Seed, keys over
// opts.Keys), and runs three counts over the same input, opts.Rounds times
// each, interleaved (round i starts with side i mod 3 of hand-written,
// ceiling, Braid), after an unmeasured hand-written warm-up pass: the naive
// HandwrittenCount (pebble, an output and a changelog record per input
// record), the ceiling CachedCount (a map, each changed key written once
// per commit, committing every opts.CommitInterval as Braid commits) and
// braid. It writes one line per run, the medians, the per-round ratios,
// and last
//
//	RESULT count ratio=<braid/ceiling> braid=<rec/s> ceiling=<rec/s> naive_ratio=<braid/handwritten> handwritten=<rec/s>
//	  braid_startup_ms=<ms> ceiling_startup_ms=<ms> braid_final_commit_ms=<ms> ceiling_final_commit_ms=<ms> whole_ratio=<braid/ceiling>
//
// (one line), where the rates are the sides' medians of steady records/s
// (see Phases), the ratios the medians of the rounds' steady ratios, the
// phases those of the median runs, and whole_ratio the median of the
// rounds' ratios of whole runs, start-up and final commit included.
//
// Every run's output is read back (not timed) and checked: the last count
// of every key must equal the number of input records with that key. The
// hand-written count must also have written exactly opts.Records records
// to its output and to its changelog; the ceiling, at least one per key
// and at most opts.Records to each, every key's counts going up, the
// changelog's last counts right too; Braid, whose record cache folds
// updates of a key between commits, at least one per key. Every topic a
// run created (its output, changelog, repartition topics) is deleted after
// the check, so each run starts with the broker holding only the input.
//
// It returns an error if a run fails or its output is wrong; it does not
// judge the ratio (see CountTarget).
func RunCount(ctx context.Context, opts CountOptions, braid CountFunc) (CountReport, error) {
	opts = opts.withDefaults()
	rep := CountReport{
		Records:        opts.Records,
		Keys:           opts.Keys,
		Partitions:     opts.Partitions,
		CommitInterval: opts.CommitInterval,
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.CommitInterval < 0 || opts.Rounds < 0 {
		return rep, errors.New("bench count: records, keys, partitions, commit interval and rounds must not be negative")
	}
	if braid == nil {
		return rep, errors.New("bench count: no Braid count to measure")
	}

	bc, err := openCluster(ctx, opts.Brokers, broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench count: %w", err)
	}
	defer bc.close()
	brokers := bc.brokers

	w := opts.Out
	fmt.Fprintf(w, "bench count: %d records, %d keys, %d partitions, commit every %v, GOMAXPROCS=%d, %s\n",
		opts.Records, opts.Keys, opts.Partitions, opts.CommitInterval, rep.GOMAXPROCS, bc.name)
	fmt.Fprintf(w, "  handwritten: franz-go + pebble, no cache: a store read and write, an output and a changelog record per input record (naive)\n")
	fmt.Fprintf(w, "  ceiling:     franz-go, counts in a map: each key changed since the last commit written once to output and changelog per commit\n")
	fmt.Fprintf(w, "  braid:       GroupByKey().Count(), record cache, at-least-once\n")
	fmt.Fprintf(w, "  target: braid/ceiling >= %.1f (braid/handwritten is reported beside it)\n", CountTarget)

	t0 := time.Now()
	if err := Seed(ctx, brokers, CountInputTopic, opts.Partitions, opts.Records, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench count: %w", err)
	}
	rep.Seed = time.Since(t0)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("bench count: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want, err := keyCounts(ctx, brokers, adm, CountInputTopic, opts.Records)
	if err != nil {
		return rep, fmt.Errorf("bench count: %w", err)
	}

	// hand returns a CountFunc running HandwrittenCount in group with
	// changelog, on a fresh state directory removed afterwards.
	hand := func(group, changelog string) CountFunc {
		return func(ctx context.Context, brokers []string, in, out string, records int) (res Result, err error) {
			dir, err := os.MkdirTemp("", "braid-bench-count-")
			if err != nil {
				return Result{}, err
			}
			defer func() {
				if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
					err = rerr
				}
			}()
			return HandwrittenCount(ctx, brokers, in, out, changelog, group, dir, records, opts.CommitInterval)
		}
	}
	sides := []*countSide{
		{name: "handwritten franz-go+pebble count (naive)", label: "handwritten", out: HandwrittenCountOutputTopic, changelog: HandwrittenCountChangelogTopic, exact: true,
			fn: func(round int) CountFunc {
				return hand(fmt.Sprintf("%s-%d", HandwrittenCountGroup, round), HandwrittenCountChangelogTopic)
			}},
		{name: "ceiling franz-go cached count (map)", label: "ceiling", out: CachedCountOutputTopic, changelog: CachedCountChangelogTopic,
			fn: func(round int) CountFunc {
				return func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
					return CachedCount(ctx, brokers, in, out, CachedCountChangelogTopic, fmt.Sprintf("%s-%d", CachedCountGroup, round), records, opts.CommitInterval)
				}
			}},
		{name: "braid groupByKey.count (record cache)", label: "braid", out: BraidCountOutputTopic, gated: true,
			fn: func(int) CountFunc { return braid }},
	}
	const warmName = "warm-up (handwritten count)"
	width := len(warmName)
	for _, s := range sides {
		width = max(width, len(s.name))
		s.runs = make([]Run, opts.Rounds)
	}
	cr := &countRunner{opts: opts, brokers: brokers, cl: cl, adm: adm, want: want, w: w, width: width}

	if !opts.NoWarmUp {
		warm := &countSide{name: warmName, label: "warmup", out: CountWarmUpOutputTopic, changelog: CountWarmUpChangelogTopic, exact: true}
		rep.WarmUp = Run{Name: warmName, Out: warm.out}
		if err := cr.measure(ctx, &rep.WarmUp, warm, hand(CountWarmUpGroup, CountWarmUpChangelogTopic), true); err != nil {
			return rep, err
		}
	}
	for round := range opts.Rounds {
		for i := range sides {
			s := sides[(round+i)%len(sides)]
			s.runs[round] = Run{Name: s.name, Gated: s.gated, Out: s.out}
			if err := cr.measure(ctx, &s.runs[round], s, s.fn(round), false); err != nil {
				return rep, err
			}
		}
	}
	handSide, ceilSide, braidSide := sides[0], sides[1], sides[2]
	rep.Rounds = opts.Rounds
	rep.Handwritten = medianRun(handSide.runs, steadyRate)
	rep.Ceiling = medianRun(ceilSide.runs, steadyRate)
	rep.Braid = medianRun(braidSide.runs, steadyRate)
	rep.Ratios, rep.Ratio = roundRatios(braidSide.runs, ceilSide.runs, steadyRate)
	rep.NaiveRatios, rep.NaiveRatio = roundRatios(braidSide.runs, handSide.runs, steadyRate)
	_, rep.WholeRatio = roundRatios(braidSide.runs, ceilSide.runs, wholeRate)
	writeSteadyMedians(w, opts.Rounds, width, rep.Handwritten, rep.Ceiling, rep.Braid)
	fmt.Fprintf(w, "per-round steady ratios of braid/ceiling: %s (target >= %.1f)\n", formatRatios(rep.Ratios), CountTarget)
	fmt.Fprintf(w, "per-round steady ratios of braid/handwritten: %s\n", formatRatios(rep.NaiveRatios))
	fmt.Fprintf(w, "RESULT count ratio=%.3f braid=%.0f ceiling=%.0f naive_ratio=%.3f handwritten=%.0f%s whole_ratio=%.3f\n",
		rep.Ratio, rep.Braid.SteadyPerSecond(), rep.Ceiling.SteadyPerSecond(), rep.NaiveRatio, rep.Handwritten.SteadyPerSecond(),
		phaseKeys("braid", rep.Braid, "ceiling", rep.Ceiling), rep.WholeRatio)
	return rep, nil
}

// countRunner measures RunCount's runs over its one input.
type countRunner struct {
	opts    CountOptions
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	want    map[string]int64
	w       io.Writer
	width   int
}

// measure runs fn, one count of side s, to r.Out, under the pprof label
// bench=<s.label>, which the goroutines fn starts inherit, so that a CPU
// profile of the whole benchmark tells the sides apart; then it checks
// what the run wrote as s says, writes its line and deletes every topic
// the run created.
func (c *countRunner) measure(ctx context.Context, r *Run, s *countSide, fn CountFunc, warmUp bool) error {
	before, err := topicNames(ctx, c.cl)
	if err != nil {
		return fmt.Errorf("bench count: %w", err)
	}
	if err := EnsureTopic(ctx, c.adm, r.Out, c.opts.Partitions); err != nil {
		return fmt.Errorf("bench count: %w", err)
	}
	var res Result
	t := time.Now()
	pprof.Do(ctx, pprof.Labels("bench", s.label), func(ctx context.Context) {
		res, err = fn(ctx, c.brokers, CountInputTopic, r.Out, c.opts.Records)
	})
	r.Wall = time.Since(t)
	if err != nil {
		return fmt.Errorf("bench count: %s: %w", r.Name, err)
	}
	r.Result = res
	switch {
	case res.Records != c.opts.Records:
		return fmt.Errorf("bench count: %s reports %d records processed, want %d", r.Name, res.Records, c.opts.Records)
	case res.Elapsed <= 0 || res.Elapsed > r.Wall:
		return fmt.Errorf("bench count: %s reports %v elapsed, but its call took %v", r.Name, res.Elapsed, r.Wall)
	}
	n, err := c.check(ctx, r, s)
	if err != nil {
		return fmt.Errorf("bench count: %s: %w", r.Name, err)
	}
	r.OutRecords = n
	line := runLine(c.width, r.Name, res, steadyRate, warmUp)
	line += fmt.Sprintf("  (%d output records)", n)
	fmt.Fprintln(c.w, line)

	if err := deleteTopicsSince(ctx, c.cl, c.adm, before); err != nil {
		return fmt.Errorf("bench count: %w", err)
	}
	return nil
}

// check checks a run's output (and changelog) as RunCount says and
// returns how many records its output holds.
func (c *countRunner) check(ctx context.Context, r *Run, s *countSide) (int64, error) {
	records, keys := int64(c.opts.Records), int64(len(c.want))
	n, err := checkCounts(ctx, c.brokers, r.Out, c.want, countChecks{increasing: s.changelog != ""})
	if err != nil {
		return n, err
	}
	if s.changelog == "" {
		return n, nil
	}
	if _, err := checkCounts(ctx, c.brokers, s.changelog, c.want, countChecks{increasing: true}); err != nil {
		return n, fmt.Errorf("changelog: %w", err)
	}
	// The records written, counted by offsets: the broker's cleaner may
	// have compacted the changelog since, leaving the last count of each
	// key.
	cn, err := topicRecords(ctx, c.adm, s.changelog)
	if err != nil {
		return n, fmt.Errorf("changelog: %w", err)
	}
	for _, t := range []struct {
		topic string
		n     int64
	}{{r.Out, n}, {s.changelog, cn}} {
		switch {
		case s.exact && t.n != records:
			return n, fmt.Errorf("topic %s holds %d records, want one per input record, %d", t.topic, t.n, records)
		case !s.exact && (t.n < keys || t.n > records):
			return n, fmt.Errorf("topic %s holds %d records, want from one per key (%d) to one per input record (%d)", t.topic, t.n, keys, records)
		}
	}
	return n, nil
}

// runLine is the line a benchmark prints for one run: its name, records,
// time and whole rate, then its phases if the benchmark compares steady
// rates, or "(not measured)" for a warm-up.
func runLine(width int, name string, res Result, rate rate, warmUp bool) string {
	if warmUp {
		return fmt.Sprintf("%-*s  %8d records  %6.2fs  (not measured)", width, name, res.Records, res.Elapsed.Seconds())
	}
	line := fmt.Sprintf("%-*s  %8d records  %6.2fs  %9s rec/s", width, name, res.Records, res.Elapsed.Seconds(), thousands(res.PerSecond()))
	if rate == steadyRate {
		line += "  (" + res.phasesText() + ")"
	}
	return line
}

// deleteTopicsSince deletes the topics that are not in before: what a run
// created, so that the next starts with the broker holding only its input.
func deleteTopicsSince(ctx context.Context, cl *kgo.Client, adm *kadm.Client, before map[string]bool) error {
	after, err := topicNames(ctx, cl)
	if err != nil {
		return err
	}
	var created []string
	for t := range after {
		if !before[t] {
			created = append(created, t)
		}
	}
	resps, err := adm.DeleteTopics(ctx, created...)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("deleting %v after the run: %w", created, err)
	}
	return nil
}

// topicNames lists the cluster's topics, internal ones included, asking
// the broker (kadm's ListTopics may answer from the client's metadata
// cache, which does not yet know of topics created or deleted by others).
func topicNames(ctx context.Context, cl *kgo.Client) (map[string]bool, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	names := make(map[string]bool, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("listing topics: %s: %w", *t.Topic, err)
		}
		names[*t.Topic] = true
	}
	return names, nil
}

// keyCounts checks that the seeded input topic holds records records and
// returns how many it holds of every key: the truth every count's output
// is checked against, computed from the input as it is in the broker
// rather than from how Seed makes it.
func keyCounts(ctx context.Context, brokers []string, adm *kadm.Client, topic string, records int) (map[string]int64, error) {
	if n, err := topicRecords(ctx, adm, topic); err != nil {
		return nil, err
	} else if n != int64(records) {
		return nil, fmt.Errorf("input topic %s holds %d records after seeding, want %d", topic, n, records)
	}
	want := map[string]int64{}
	if _, err := readTopic(ctx, brokers, topic, func(r *kgo.Record) error {
		want[string(r.Key)]++
		return nil
	}); err != nil {
		return nil, err
	}
	return want, nil
}

// countChecks are checkCounts' checks beyond the last counts.
type countChecks struct {
	// increasing requires every key's counts to go up from one output
	// record to the next: a count that repeats or goes down is an update
	// written twice (a duplicate, or a replay of processing whose output
	// was already written), which exactly-once must never show.
	increasing bool
}

// checkCounts reads topic read-committed (see readTopicAs), whose values
// must be 8-byte big-endian counts, and checks that the last count of
// every key equals want's, that no other key appears, and what checks
// asks for. It returns how many records a read-committed consumer sees in
// topic.
func checkCounts(ctx context.Context, brokers []string, topic string, want map[string]int64, checks countChecks) (int64, error) {
	last := make(map[string]int64, len(want))
	var notUp int
	var example string
	n, err := readTopicAs(ctx, brokers, topic, kgo.ReadCommitted(), func(r *kgo.Record) error {
		if len(r.Value) != 8 {
			return fmt.Errorf("output topic %s: record %s[%d]@%d with key %q has a %d-byte value, want an 8-byte count",
				topic, r.Topic, r.Partition, r.Offset, r.Key, len(r.Value))
		}
		c := int64(binary.BigEndian.Uint64(r.Value))
		if prev, seen := last[string(r.Key)]; checks.increasing && seen && c <= prev {
			notUp++
			if example == "" {
				example = fmt.Sprintf("key %q counts %d at %s[%d]@%d after %d", r.Key, c, r.Topic, r.Partition, r.Offset, prev)
			}
		}
		last[string(r.Key)] = c
		return nil
	})
	if err != nil {
		return n, err
	}
	var missing, wrong, extra int
	for k, c := range want {
		got, ok := last[k]
		switch {
		case !ok:
			missing++
			if example == "" {
				example = fmt.Sprintf("key %q has no count, want %d", k, c)
			}
		case got != c:
			wrong++
			if example == "" {
				example = fmt.Sprintf("key %q: last count %d, want %d", k, got, c)
			}
		}
	}
	for k, got := range last {
		if _, ok := want[k]; !ok {
			extra++
			if example == "" {
				example = fmt.Sprintf("key %q (count %d) is not an input key", k, got)
			}
		}
	}
	if missing+wrong+extra+notUp > 0 {
		msg := fmt.Sprintf("output topic %s (%d records): %d keys missing, %d with a wrong last count, %d unknown", topic, n, missing, wrong, extra)
		if checks.increasing {
			msg += fmt.Sprintf(", %d counts not above their key's previous one", notUp)
		}
		return n, fmt.Errorf("%s; e.g. %s", msg, example)
	}
	return n, nil
}

// HandwrittenCount is the hand-written stateful baseline, the "naive
// stateful" loop of the baselines: one franz-go client in consumer group
// group reads topic in from the start (RawPipe's client options, rebalances
// held off while a poll is processed) and counts records per key in pebble,
// one DB per input partition under stateDir (opened when the partition
// first yields records), sharing a StoreCacheBytes block cache. For every
// record it reads the key's count (an 8-byte big-endian int64), increments
// it and writes it back, and produces the new count with the record's key
// and timestamp to out and to changelog, both in the input record's
// partition. There is no cache: every record costs a pebble read and write
// and two produced records.
//
// The writes of one partition's records in one poll go into one indexed
// pebble batch, committed NoSync once the poll's records of that partition
// are processed; the reads go through the batch (a key recurs within a
// poll: a poll holds up to ~200k records over 10,000 keys).
//
// It creates changelog if missing, compacted, with in's partition count (the
// span measured includes that, as Braid's includes creating its
// changelog); out must exist with at least in's partition count.
// At-least-once as RawPipe: every commitInterval, and once at the end, it
// flushes the producer and then commits the offsets of the records
// processed. Store writes are not flushed at commits: the changelog is what
// makes them durable. It stops after records records (the rest of in is
// left unprocessed and uncommitted) and returns how long that took, as
// Result says. Cancel ctx to give up.
//
// A partition revoked mid-run has its processed offsets committed; its DB
// stays open until the call returns (one member never rebalances).
func HandwrittenCount(ctx context.Context, brokers []string, in, out, changelog, group, stateDir string, records int, commitInterval time.Duration) (res Result, err error) {
	start := time.Now()
	if records <= 0 {
		return Result{}, fmt.Errorf("handwritten count: records %d must be positive", records)
	}
	if commitInterval <= 0 {
		return Result{}, fmt.Errorf("handwritten count: commit interval %v must be positive", commitInterval)
	}

	// Every produced record names its partition: its input's.
	c, err := newALOSConsumer("handwritten count", brokers, in, group, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	cl, promise := c.cl, c.promise
	st := newStores(stateDir)
	defer func() {
		if cerr := st.close(); cerr != nil && err == nil {
			err = fmt.Errorf("handwritten count: %w", cerr)
		}
	}()

	adm := kadm.NewClient(cl)
	parts, err := partitionCount(ctx, adm, in)
	if err != nil {
		return Result{}, fmt.Errorf("handwritten count: %w", err)
	}
	if err := ensureCompactedTopic(ctx, adm, changelog, parts); err != nil {
		return Result{}, fmt.Errorf("handwritten count: %w", err)
	}

	// countPartition processes one partition's records of one poll.
	countPartition := func(p int32, rs []*kgo.Record) error {
		db, err := st.db(p)
		if err != nil {
			return err
		}
		batch := db.NewIndexedBatch()
		defer batch.Close()
		// One allocation for the poll's values and one for its produced
		// records; the producer keeps each until it is acknowledged.
		vals := make([]byte, 8*len(rs))
		outs := make([]kgo.Record, 2*len(rs))
		for i, r := range rs {
			var n int64
			v, closer, err := batch.Get(r.Key)
			switch {
			case err == nil:
				if len(v) != 8 {
					closer.Close()
					return fmt.Errorf("the count of key %q in partition %d is %d bytes", r.Key, p, len(v))
				}
				n = int64(binary.BigEndian.Uint64(v))
				closer.Close()
			case errors.Is(err, pebble.ErrNotFound):
			default:
				return fmt.Errorf("reading the count of key %q in partition %d: %w", r.Key, p, err)
			}
			n++
			val := vals[8*i : 8*i+8 : 8*i+8]
			binary.BigEndian.PutUint64(val, uint64(n))
			if err := batch.Set(r.Key, val, nil); err != nil {
				return fmt.Errorf("writing the count of key %q in partition %d: %w", r.Key, p, err)
			}
			o, c := &outs[2*i], &outs[2*i+1]
			*o = kgo.Record{Topic: out, Partition: p, Key: r.Key, Value: val, Timestamp: r.Timestamp}
			*c = kgo.Record{Topic: changelog, Partition: p, Key: r.Key, Value: val, Timestamp: r.Timestamp}
			cl.Produce(ctx, o, promise)
			cl.Produce(ctx, c, promise)
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("committing the store batch of partition %d: %w", p, err)
		}
		return nil
	}

	return c.run(ctx, start, records, commitInterval, countPartition)
}
