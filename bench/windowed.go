package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
)

// Topic names RunWindowed uses.
const (
	WindowedInputTopic = "bench-windowed-in"
	// WindowedOutputTopic is where the windowed count writes its final
	// results; WindowedCountOutputTopic where the plain count writes.
	WindowedOutputTopic      = "bench-windowed-out"
	WindowedCountOutputTopic = "bench-windowed-count-out"
	// WindowedWarmUpOutputTopic is the output of the unmeasured warm-up
	// pass (a plain count).
	WindowedWarmUpOutputTopic = "bench-windowed-warmup-out"
)

// WindowedTarget is the ratio windowed/count the windowed benchmark must
// reach.
const WindowedTarget = 0.8

// The windows of the windowed benchmark: tumbling, 10 s, 5 s of grace,
// emitting final results only.
const (
	WindowSize  = 10 * time.Second
	WindowGrace = 5 * time.Second
)

// Shape of SeedWindowed's timestamps.
const (
	// DefaultEventRate is how many records SeedWindowed puts in one second
	// of event time by default: over 10,000 keys, about ten records per
	// key per 10 s window.
	DefaultEventRate = 10_000
	// OutOfOrderPercent of the records have a timestamp moved back; of
	// those, one in BeyondGraceOneIn is moved back further than the grace
	// allows, so that it arrives for a closed window and is dropped.
	OutOfOrderPercent = 5
	BeyondGraceOneIn  = 50
	// WindowedSeed seeds the random source of SeedWindowed: the input is
	// the same in every run.
	WindowedSeed = 20240611
)

// WindowedOptions configure RunWindowed. Zero fields take the defaults.
type WindowedOptions struct {
	Records    int // records seeded and counted; default 3,000,000
	Keys       int // distinct keys; default 10,000
	Partitions int // partitions of every topic; default 4
	// EventRate is how many records one second of event time holds
	// (see SeedWindowed); default DefaultEventRate.
	EventRate int
	Rounds    int       // rounds of each side; default 3
	Out       io.Writer // where the report goes; default os.Stdout
	// NoWarmUp skips the unmeasured plain-count pass over the input made
	// before the measured runs (see RunPipe for why there is one).
	NoWarmUp bool
}

func (o WindowedOptions) withDefaults() WindowedOptions {
	if o.Records == 0 {
		// Enough that the steady span outlasts the start-up by far.
		o.Records = 3_000_000
	}
	if o.Keys == 0 {
		o.Keys = 10_000
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.EventRate == 0 {
		o.EventRate = DefaultEventRate
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// WindowedReport is what RunWindowed measured.
type WindowedReport struct {
	Records    int
	Keys       int
	Partitions int
	EventRate  int
	GOMAXPROCS int
	Seed       time.Duration // how long seeding took (not compared)
	// OutOfOrder is how many input records have a timestamp below an
	// earlier record's of their partition; Late how many of those come for
	// a window already closed (they are dropped); Windows how many
	// (key, window) results the windowed count must emit.
	OutOfOrder, Late, Windows int64
	WarmUp                    Run // the unmeasured pass; zero with NoWarmUp
	Rounds                    int
	Windowed                  Run // the median round of the windowed count, by steady records/s
	Count                     Run // the median round of the plain count, by steady records/s
	Ceiling                   Run // the median round of WindowedCeiling, by steady records/s
	// Ratios are the rounds' windowed count's steady records/s over the
	// plain count's in the same round, sorted; Ratio is their median,
	// what WindowedTarget gates.
	Ratios []float64
	Ratio  float64
	// CeilingRatios and VsCeiling are the same of the windowed count over
	// its ceiling (WindowedCeiling), reported beside Ratio.
	CeilingRatios []float64
	VsCeiling     float64
	// WholeRatio is Ratio of the whole runs' records/s, start-up and
	// final commit included: what Ratio was before the phases.
	WholeRatio float64
}

// RunWindowed runs `braid bench windowed`: it starts an embedded broker
// with opts.Partitions partitions, seeds WindowedInputTopic once
// (SeedWindowed), and runs three sides over the same input, opts.Rounds
// times each, in an order rotated every round (rotateRounds), after an
// unmeasured pass of count: windowed (a windowed count, see
// BraidWindowedCount), count (a plain count, see BraidCount) and the
// ceiling (WindowedCeiling, the windowed count by hand with franz-go). It
// writes one line per run, the medians, the per-round ratios and last
//
//	RESULT windowed ratio=<windowed/count> windowed=<rec/s> count=<rec/s> vs_ceiling=<windowed/ceiling> ceiling=<rec/s>
//	  windowed_startup_ms=<ms> count_startup_ms=<ms> windowed_final_commit_ms=<ms> count_final_commit_ms=<ms> whole_ratio=<windowed/count>
//
// (one line), where the ratios are medians of the rounds' ratios of
// steady records/s (see Phases), the rates each side's median steady
// rate, the phases those of the median runs, and whole_ratio the median
// of the rounds' ratios of whole runs. The ratio WindowedTarget gates is
// windowed/count; windowed/ceiling is beside it, because the windowed
// count emits a result per key and window (about 290,000 at the
// defaults) where the plain count emits one per key changed in a commit
// interval (10,000), and only the ceiling does the same work.
//
// Every run's output is read back (not timed) and checked against what
// the input says it must be: the plain count's last count of every key
// equals the key's records; the windowed count and its ceiling emitted
// exactly one result for every (key, window) that its partition's stream
// time closed, equal to the records of the key in the window that were
// not late, and nothing else (see windowedTruth). Every topic a run
// created is deleted after the check.
//
// It returns an error if a run fails or its output is wrong; it does not
// judge the ratio (see WindowedTarget).
func RunWindowed(ctx context.Context, opts WindowedOptions, windowed, count CountFunc) (WindowedReport, error) {
	opts = opts.withDefaults()
	rep := WindowedReport{
		Records:    opts.Records,
		Keys:       opts.Keys,
		Partitions: opts.Partitions,
		EventRate:  opts.EventRate,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.EventRate < 0 || opts.Rounds < 0 {
		return rep, errors.New("bench windowed: records, keys, partitions, event rate and rounds must not be negative")
	}
	if windowed == nil || count == nil {
		return rep, errors.New("bench windowed: need both a windowed and a plain count to measure")
	}

	b, err := startBroker(broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench windowed: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()

	w := opts.Out
	fmt.Fprintf(w, "bench windowed: %d records, %d keys, %d partitions, %d records per second of event time, %d%% out of order, tumbling %v windows with %v grace emitting final results, commit every 1s, GOMAXPROCS=%d, embedded broker\n",
		opts.Records, opts.Keys, opts.Partitions, opts.EventRate, OutOfOrderPercent, WindowSize, WindowGrace, rep.GOMAXPROCS)

	t0 := time.Now()
	if err := SeedWindowed(ctx, brokers, WindowedInputTopic, opts.Partitions, opts.Records, opts.Keys, opts.EventRate); err != nil {
		return rep, fmt.Errorf("bench windowed: %w", err)
	}
	rep.Seed = time.Since(t0)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("bench windowed: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if n, err := topicRecords(ctx, adm, WindowedInputTopic); err != nil {
		return rep, fmt.Errorf("bench windowed: %w", err)
	} else if n != int64(opts.Records) {
		return rep, fmt.Errorf("bench windowed: input topic %s holds %d records after seeding, want %d", WindowedInputTopic, n, opts.Records)
	}
	// The truths the outputs are checked against, computed from the
	// input as it is in the broker.
	truth, err := windowedTruth(ctx, brokers, WindowedInputTopic)
	if err != nil {
		return rep, fmt.Errorf("bench windowed: %w", err)
	}
	rep.OutOfOrder, rep.Late, rep.Windows = truth.outOfOrder, truth.late, int64(len(truth.windows))
	fmt.Fprintf(w, "input: %d records out of order, %d of them late (for a closed window), %d window results to emit; event time spans %v\n",
		truth.outOfOrder, truth.late, len(truth.windows), time.Duration(truth.maxTs-truth.minTs)*time.Millisecond)

	const (
		windowedName = "braid windowed count (tumbling, emit final)"
		countName    = "braid groupByKey.count (record cache)"
		ceilingName  = "ceiling franz-go windowed count (map)"
		warmName     = "warm-up (braid count)"
	)
	width := max(len(windowedName), len(countName), len(ceilingName), len(warmName))

	checkCount := func(out string) (int64, error) { return checkCounts(ctx, brokers, out, truth.perKey, countChecks{}) }
	checkWindowed := func(out string) (int64, error) {
		return checkWindowCounts(ctx, brokers, out, truth.windows)
	}
	var ceilingRounds atomic.Int64
	ceiling := func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
		group := fmt.Sprintf("%s-%d", WindowedCeilingGroup, ceilingRounds.Add(1))
		return WindowedCeiling(ctx, brokers, in, out, WindowedCeilingChangelogTopic, group, records, time.Second)
	}

	runs := &countRuns{bench: "bench windowed", brokers: brokers, cl: cl, adm: adm, in: WindowedInputTopic,
		partitions: opts.Partitions, records: opts.Records, w: w, width: width, rate: steadyRate}
	if !opts.NoWarmUp {
		rep.WarmUp = Run{Name: warmName, Out: WindowedWarmUpOutputTopic}
		if err := runs.measure(ctx, &rep.WarmUp, "warm-up", count, checkCount, true); err != nil {
			return rep, err
		}
	}
	rounds, err := rotateRounds(ctx, opts.Rounds, []roundSide{
		{runs: runs, name: windowedName, label: "windowed", out: WindowedOutputTopic, gated: true, fn: windowed, check: checkWindowed},
		{runs: runs, name: countName, label: "count", out: WindowedCountOutputTopic, fn: count, check: checkCount},
		{runs: runs, name: ceilingName, label: "ceiling", out: WindowedCeilingOutputTopic, fn: ceiling, check: checkWindowed},
	})
	if err != nil {
		return rep, err
	}
	rep.Rounds = opts.Rounds
	rep.Windowed, rep.Count, rep.Ceiling = medianRun(rounds[0], steadyRate), medianRun(rounds[1], steadyRate), medianRun(rounds[2], steadyRate)
	rep.Ratios, rep.Ratio = roundRatios(rounds[0], rounds[1], steadyRate)
	rep.CeilingRatios, rep.VsCeiling = roundRatios(rounds[0], rounds[2], steadyRate)
	_, rep.WholeRatio = roundRatios(rounds[0], rounds[1], wholeRate)
	writeSteadyMedians(w, opts.Rounds, width, rep.Windowed, rep.Count, rep.Ceiling)
	fmt.Fprintf(w, "per-round ratios of windowed/count: %s (target >= %.1f)\n", formatRatios(rep.Ratios), WindowedTarget)
	fmt.Fprintf(w, "per-round ratios of windowed/ceiling: %s\n", formatRatios(rep.CeilingRatios))
	fmt.Fprintf(w, "RESULT windowed ratio=%.3f windowed=%.0f count=%.0f vs_ceiling=%.3f ceiling=%.0f%s whole_ratio=%.3f\n",
		rep.Ratio, rep.Windowed.SteadyPerSecond(), rep.Count.SteadyPerSecond(), rep.VsCeiling, rep.Ceiling.SteadyPerSecond(),
		phaseKeys("windowed", rep.Windowed, "count", rep.Count), rep.WholeRatio)
	return rep, nil
}

// SeedWindowed creates topic (partitions, replication 1; an existing topic
// must have that partition count) and produces records records to it, as
// Seed does (keys cycling over keys distinct keys, JSON values of
// ValueBytes bytes, partitioned by key), but with timestamps for windows:
// record i's is start + i*1000/eventRate ms, eventRate records to a second
// of event time, with start a multiple of WindowSize chosen so that the
// last record is about now. OutOfOrderPercent of the records, picked by a
// random source seeded with WindowedSeed, are out of order: their
// timestamp is moved back by 1 ms to 4 s, within WindowGrace, so they
// still count; one in BeyondGraceOneIn of those is moved back 20 to 30 s
// instead, past any grace, and is dropped as late.
func SeedWindowed(ctx context.Context, brokers []string, topic string, partitions, records, keys, eventRate int) error {
	if partitions <= 0 || records < 0 || keys <= 0 || eventRate <= 0 {
		return fmt.Errorf("seed: partitions %d, records %d, keys %d and event rate %d must be positive", partitions, records, keys, eventRate)
	}
	if keys > 1_000_000 {
		return fmt.Errorf("seed: %d keys do not fit the %d-byte key format", keys, KeyBytes)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		// As Seed: seeding is not measured, it only has to be quick.
		kgo.ProducerLinger(50*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.MaxBufferedRecords(250_000),
	)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer cl.Close()
	if err := EnsureTopic(ctx, kadm.NewClient(cl), topic, partitions); err != nil {
		return fmt.Errorf("seed: %w", err)
	}

	keyBytes := make([][]byte, keys)
	for i := range keyBytes {
		keyBytes[i] = Key(i, keys)
	}
	rng := rand.New(rand.NewPCG(WindowedSeed, 0))
	var produceErr firstError
	promise := produceErr.promise
	const slabSize = 1 << 20
	var slab []byte
	size := WindowSize.Milliseconds()
	span := int64(records) * 1000 / int64(eventRate)
	start := time.Now().UnixMilli() - span
	start -= start % size
	for i := range records {
		if cap(slab)-len(slab) < 2*ValueBytes {
			slab = make([]byte, 0, slabSize)
		}
		ts := start + int64(i)*1000/int64(eventRate)
		if rng.IntN(100) < OutOfOrderPercent {
			if rng.IntN(BeyondGraceOneIn) == 0 {
				ts -= 20_000 + rng.Int64N(10_001)
			} else {
				ts -= 1 + rng.Int64N(4_000)
			}
		}
		from := len(slab)
		slab = appendValue(slab, i, keyBytes[i%keys], ts)
		v := slab[from:len(slab):len(slab)]
		cl.Produce(ctx, &kgo.Record{Key: keyBytes[i%keys], Value: v, Timestamp: time.UnixMilli(ts)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("seed: flushing: %w", err)
	}
	if err := produceErr.get(); err != nil {
		return fmt.Errorf("seed: producing to %s: %w", topic, err)
	}
	return nil
}

// windowedInput is what the input says the outputs must be.
type windowedInput struct {
	// perKey is every key's record count: the plain count's last counts.
	perKey map[string]int64
	// windows maps the windowed result key of every (key, window) closed
	// by the end of its partition (the key's bytes, then the window start
	// as 8 big-endian bytes) to its count.
	windows map[string]int64
	// outOfOrder and late count records as RunWindowed reports them.
	outOfOrder, late int64
	minTs, maxTs     int64
}

// windowedTruth reads topic and computes, as Braid's semantics say, what
// a count per key over tumbling WindowSize windows with WindowGrace,
// emitting final results, must emit once the whole topic is processed.
// A task reads one partition in offset order; its stream time is the
// largest timestamp it has seen, the current record's included. A record
// is late, and dropped, when stream time has reached its window's end plus
// the grace; a window is closed, and its result emitted, once its
// partition's stream time reaches that.
func windowedTruth(ctx context.Context, brokers []string, topic string) (windowedInput, error) {
	in := windowedInput{perKey: map[string]int64{}, windows: map[string]int64{}, minTs: -1}
	streamTime := map[int32]int64{}
	counts := map[int32]map[string]int64{}
	var kb []byte
	_, err := readTopic(ctx, brokers, topic, func(r *kgo.Record) error {
		ts := r.Timestamp.UnixMilli()
		if in.minTs < 0 || ts < in.minTs {
			in.minTs = ts
		}
		in.maxTs = max(in.maxTs, ts)
		in.perKey[string(r.Key)]++
		st, seen := streamTime[r.Partition]
		if seen && ts < st {
			in.outOfOrder++
		}
		if !seen || ts > st {
			st = ts
			streamTime[r.Partition] = st
		}
		start := windowStart(ts)
		if windowClosed(st, start) {
			in.late++
			return nil
		}
		if counts[r.Partition] == nil {
			counts[r.Partition] = map[string]int64{}
		}
		kb = binary.BigEndian.AppendUint64(append(kb[:0], r.Key...), uint64(start))
		counts[r.Partition][string(kb)]++
		return nil
	})
	if err != nil {
		return in, err
	}
	for p, cs := range counts {
		for k, n := range cs {
			start := int64(binary.BigEndian.Uint64([]byte(k[len(k)-8:])))
			if windowClosed(streamTime[p], start) {
				in.windows[k] = n
			}
		}
	}
	return in, nil
}

// windowStart is the start of the tumbling WindowSize window that holds
// timestamp ts, in milliseconds.
func windowStart(ts int64) int64 {
	size := WindowSize.Milliseconds()
	return ts - ((ts%size)+size)%size
}

// windowClosed reports whether stream time st has closed the window
// starting at start: reached its end plus WindowGrace.
func windowClosed(st, start int64) bool {
	return st >= start+WindowSize.Milliseconds()+WindowGrace.Milliseconds()
}

// checkWindowCounts reads topic, whose keys must be time-windowed keys
// (key bytes, then the window start as 8 big-endian bytes) and values
// 8-byte big-endian counts, and checks that it holds exactly one record
// per window of want, with want's count. It returns how many records topic
// holds.
func checkWindowCounts(ctx context.Context, brokers []string, topic string, want map[string]int64) (int64, error) {
	got := make(map[string]int64, len(want))
	var dups int
	var example string
	n, err := readTopic(ctx, brokers, topic, func(r *kgo.Record) error {
		if len(r.Value) != 8 || len(r.Key) < 8 {
			return fmt.Errorf("output topic %s: record %s[%d]@%d has a %d-byte key and a %d-byte value, want a windowed key and an 8-byte count",
				topic, r.Topic, r.Partition, r.Offset, len(r.Key), len(r.Value))
		}
		c := int64(binary.BigEndian.Uint64(r.Value))
		if _, dup := got[string(r.Key)]; dup {
			dups++
			if example == "" {
				example = fmt.Sprintf("%s emitted twice", windowName(r.Key))
			}
		}
		got[string(r.Key)] = c
		return nil
	})
	if err != nil {
		return n, err
	}
	var missing, wrong, extra int
	for k, c := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
			if example == "" {
				example = fmt.Sprintf("%s has no result, want %d", windowName([]byte(k)), c)
			}
		case g != c:
			wrong++
			if example == "" {
				example = fmt.Sprintf("%s counts %d, want %d", windowName([]byte(k)), g, c)
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			extra++
			if example == "" {
				example = fmt.Sprintf("%s (count %d) is not a closed window of the input", windowName([]byte(k)), g)
			}
		}
	}
	if missing+wrong+extra+dups > 0 {
		return n, fmt.Errorf("output topic %s (%d records, %d windows expected): %d windows missing, %d with a wrong count, %d unknown, %d emitted more than once; e.g. %s",
			topic, n, len(want), missing, wrong, extra, dups, example)
	}
	return n, nil
}

// windowName formats a windowed key for an error: key@[start,end).
func windowName(kb []byte) string {
	start := int64(binary.BigEndian.Uint64(kb[len(kb)-8:]))
	return fmt.Sprintf("%q@[%d,%d)", kb[:len(kb)-8], start, start+WindowSize.Milliseconds())
}

// braidWindowedCounts numbers BraidWindowedCount calls for their
// application ids.
var braidWindowedCounts atomic.Int64

// BraidWindowedCount is the windowed side of the windowed benchmark:
// GroupByKey().WindowedBy(Tumbling(WindowSize, WindowGrace)), emitting on
// window close, Count(), its results written to out with the windowed key
// serde over the bytes serde and the counts as 8-byte big-endian int64.
// Everything else is as BraidCount: the bytes serde on the input, a store
// named "counts" with the record cache on, at-least-once, committing every
// second, measured from the call until every record is processed and
// committed.
func BraidWindowedCount(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
	start := time.Now()
	topo, err := windowedCountTopology(in, out)
	if err != nil {
		return Result{}, err
	}
	return runStateful(ctx, start, topo, brokers, fmt.Sprintf("bench-windowed-braid-%d", braidWindowedCounts.Add(1)), records)
}

// windowedCountTopology is the windowed benchmark's topology (see
// BraidWindowedCount).
func windowedCountTopology(in, out string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.Stream([]string{in}, streams.WithSerdes(streams.Bytes, streams.Bytes)).
		GroupByKey().
		WindowedBy(streams.Tumbling(WindowSize, WindowGrace)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		ToStream().
		To(out)
	return b.Build()
}
