package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
)

// Topic names RunJoin uses.
const (
	// JoinLeftTopic and JoinRightTopic are the joined streams;
	// JoinCountTopic holds the records of both, for the count.
	JoinLeftTopic  = "bench-join-left"
	JoinRightTopic = "bench-join-right"
	JoinCountTopic = "bench-join-all"
	// JoinOutputTopic is where the join writes, JoinCountOutputTopic the
	// count, JoinCeilingOutputTopic the hand-written join (the ceiling),
	// JoinWarmUpOutputTopic the unmeasured warm-up pass of the ceiling.
	JoinOutputTopic        = "bench-join-out"
	JoinCountOutputTopic   = "bench-join-count-out"
	JoinCeilingOutputTopic = "bench-join-ceiling-out"
	JoinWarmUpOutputTopic  = "bench-join-warmup-out"
)

// JoinTarget is the ratio join/ceiling (BraidJoin over HandwrittenJoin)
// the join benchmark must reach.
const JoinTarget = 0.8

// The join benchmark's input and windows. Each side has a record a
// millisecond of event time (JoinEventRate a second); right record i has
// left record i's key and comes JoinRightDelay after it, so that with
// 10,000 keys (a key recurs every 10 s on each side) each left record
// meets exactly one right record within JoinWindow. JoinGrace is longer
// than all the input's event time, so that no record is late whatever
// order a task takes them in and the output can be checked exactly: task
// idling (Config.MaxTaskIdle, Kafka Streams' max.task.idle.ms) keeps a
// task from running ahead of a side whose records are on the broker, but
// not of one whose records are still being written.
const (
	JoinEventRate  = 1000
	JoinRightDelay = time.Second
	JoinWindow     = 5 * time.Second
	JoinGrace      = time.Hour
)

// JoinOptions configure RunJoin. Zero fields take the defaults.
type JoinOptions struct {
	Records    int       // records of both sides together; default 3,000,000
	Keys       int       // distinct keys; default 10,000
	Partitions int       // partitions of every topic; default 4
	Rounds     int       // rounds of each side; default 3
	Out        io.Writer // where the report goes; default os.Stdout
	// NoWarmUp skips the unmeasured pass of the hand-written join over the
	// input made before the measured runs (see RunPipe for why there is
	// one).
	NoWarmUp bool
}

func (o JoinOptions) withDefaults() JoinOptions {
	w := WindowedOptions{Records: o.Records, Keys: o.Keys, Partitions: o.Partitions, Rounds: o.Rounds, Out: o.Out}.withDefaults()
	o.Records, o.Keys, o.Partitions, o.Rounds, o.Out = w.Records, w.Keys, w.Partitions, w.Rounds, w.Out
	return o
}

// JoinReport is what RunJoin measured.
type JoinReport struct {
	Records    int
	Keys       int
	Partitions int
	GOMAXPROCS int
	Seed       time.Duration // how long seeding took (not compared)
	// Pairs is how many results the join must emit.
	Pairs  int64
	WarmUp Run // the unmeasured pass; zero with NoWarmUp
	Rounds int
	// Join, Ceiling and Count are each side's median round by steady
	// records/s.
	Join, Ceiling, Count Run
	// Ratios are the rounds' steady records/s of join over ceiling,
	// sorted; Ratio is their median.
	Ratios []float64
	Ratio  float64
	// CountRatios are the rounds' steady records/s of join over count,
	// sorted; VsCount is their median.
	CountRatios []float64
	VsCount     float64
	// WholeRatio is Ratio of the whole runs' records/s, start-up and
	// final commit included: what Ratio was before the phases.
	WholeRatio float64
}

// RunJoin runs `braid bench join`: it starts an embedded broker with
// opts.Partitions partitions, seeds opts.Records/2 records to each of
// JoinLeftTopic and JoinRightTopic and all of them to JoinCountTopic
// (SeedJoin), and runs three sides opts.Rounds times each, in an order
// rotated every round (rotateRounds), after an unmeasured pass of the
// ceiling: the ceiling (HandwrittenJoin, the least durable work the join
// does, by hand with franz-go), join (BraidJoin, a stream-stream inner
// join of the two sides) and count (BraidCount over JoinCountTopic, the
// same records). It writes one line per run, the medians, the per-round
// ratios and last
//
//	RESULT join ratio=<join/ceiling> join=<rec/s> ceiling=<rec/s> vs_count=<join/count>
//	  join_startup_ms=<ms> ceiling_startup_ms=<ms> join_final_commit_ms=<ms> ceiling_final_commit_ms=<ms> whole_ratio=<join/ceiling>
//
// (one line), where the ratios are medians of the rounds' ratios of
// steady records/s (see Phases) and the rates each side's median steady
// rate, in input records a second (both sides' for the joins); the phases
// are those of the median runs, and whole_ratio the median of the rounds'
// ratios of whole runs, start-up and final commit included.
//
// Every run's output is read back (not timed) and checked: the count's
// last count of every key equals its records; each join emitted, for
// every left record, one result per right record of its key within
// JoinWindow (its value is the left record's), and nothing else; the
// ceiling's changelogs hold a record per input record of their side.
// Every topic a run created is deleted after the check.
//
// It returns an error if a run fails or its output is wrong; it does not
// judge the ratio (see JoinTarget).
func RunJoin(ctx context.Context, opts JoinOptions) (JoinReport, error) {
	opts = opts.withDefaults()
	rep := JoinReport{Records: opts.Records, Keys: opts.Keys, Partitions: opts.Partitions, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.Rounds < 0 {
		return rep, errors.New("bench join: records, keys, partitions and rounds must not be negative")
	}
	half := opts.Records / 2
	if 2*half != opts.Records {
		return rep, fmt.Errorf("bench join: %d records do not split into two equal sides", opts.Records)
	}
	b, err := startBroker(broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench join: starting the broker: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()

	w := opts.Out
	fmt.Fprintf(w, "bench join: %d records (%d a side), %d keys, %d partitions, inner join within %v (grace %v), right records %v after their left ones, against a hand-written franz-go join (in-memory buffers, every result and a changelog record per buffered record produced) and a count of the same records, commit every 1s at-least-once, GOMAXPROCS=%d, embedded broker\n",
		opts.Records, half, opts.Keys, opts.Partitions, JoinWindow, JoinGrace, JoinRightDelay, rep.GOMAXPROCS)

	t0 := time.Now()
	if err := SeedJoin(ctx, brokers, opts.Partitions, half, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench join: %w", err)
	}
	rep.Seed = time.Since(t0)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return rep, fmt.Errorf("bench join: creating the admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	perKey, err := keyCounts(ctx, brokers, adm, JoinCountTopic, opts.Records)
	if err != nil {
		return rep, fmt.Errorf("bench join: %w", err)
	}
	pairs := joinPairs(half, opts.Keys)
	for _, n := range pairs {
		rep.Pairs += int64(n)
	}
	fmt.Fprintf(w, "input: %d join results to emit\n", rep.Pairs)

	const (
		joinName    = "braid stream-stream join"
		ceilingName = "hand-written join (ceiling)"
		countName   = "braid groupByKey.count (record cache)"
		warmName    = "warm-up (hand-written join)"
	)
	fmt.Fprintf(w, "%s: franz-go alone: consumes both sides, buffers them in memory by key, produces every result and one changelog record per buffered record, commits\n", ceilingName)
	fmt.Fprintf(w, "%s: Braid's Join: buffers in memory with changelogs (pebble a snapshot), produces every result, commits\n", joinName)
	fmt.Fprintf(w, "%s: Braid's GroupByKey().Count() of both sides' records: each key written once per commit\n", countName)
	width := max(len(joinName), len(ceilingName), len(countName), len(warmName))
	checkCount := func(out string) (int64, error) { return checkCounts(ctx, brokers, out, perKey, countChecks{}) }
	checkJoin := func(out string) (int64, error) { return checkJoinPairs(ctx, brokers, out, pairs) }
	checkCeiling := func(out string) (int64, error) {
		for _, t := range []string{JoinCeilingLeftChangelog, JoinCeilingRightChangelog} {
			if n, err := topicRecords(ctx, adm, t); err != nil {
				return 0, err
			} else if n != int64(half) {
				return 0, fmt.Errorf("changelog %s holds %d records, want one per record of its side, %d", t, n, half)
			}
		}
		return checkJoinPairs(ctx, brokers, out, pairs)
	}
	counts := &countRuns{bench: "bench join", brokers: brokers, cl: cl, adm: adm, in: JoinCountTopic,
		partitions: opts.Partitions, records: opts.Records, w: w, width: width, rate: steadyRate}
	joins := *counts
	joins.in = JoinLeftTopic
	join := func(ctx context.Context, brokers []string, _, out string, records int) (Result, error) {
		return BraidJoin(ctx, brokers, JoinLeftTopic, JoinRightTopic, out, records)
	}
	ceiling := func(ctx context.Context, brokers []string, _, out string, records int) (Result, error) {
		return HandwrittenJoin(ctx, brokers, JoinLeftTopic, JoinRightTopic, out, JoinCeilingLeftChangelog, JoinCeilingRightChangelog,
			fmt.Sprintf("bench-join-ceiling-%d", handwrittenJoins.Add(1)), records, time.Second)
	}
	if !opts.NoWarmUp {
		rep.WarmUp = Run{Name: warmName, Out: JoinWarmUpOutputTopic}
		if err := joins.measure(ctx, &rep.WarmUp, "warm-up", ceiling, checkCeiling, true); err != nil {
			return rep, err
		}
	}
	runs, err := rotateRounds(ctx, opts.Rounds, []roundSide{
		{runs: &joins, name: ceilingName, label: "ceiling", out: JoinCeilingOutputTopic, fn: ceiling, check: checkCeiling},
		{runs: &joins, name: joinName, label: "join", out: JoinOutputTopic, gated: true, fn: join, check: checkJoin},
		{runs: counts, name: countName, label: "count", out: JoinCountOutputTopic, fn: BraidCount, check: checkCount},
	})
	if err != nil {
		return rep, err
	}
	rep.Rounds = opts.Rounds
	rep.Ceiling, rep.Join, rep.Count = medianRun(runs[0], steadyRate), medianRun(runs[1], steadyRate), medianRun(runs[2], steadyRate)
	rep.Ratios, rep.Ratio = roundRatios(runs[1], runs[0], steadyRate)
	rep.CountRatios, rep.VsCount = roundRatios(runs[1], runs[2], steadyRate)
	_, rep.WholeRatio = roundRatios(runs[1], runs[0], wholeRate)
	writeSteadyMedians(w, opts.Rounds, width, rep.Ceiling, rep.Join, rep.Count)
	fmt.Fprintf(w, "per-round steady ratios of join/ceiling: %s\n", formatRatios(rep.Ratios))
	fmt.Fprintf(w, "per-round steady ratios of join/count: %s\n", formatRatios(rep.CountRatios))
	fmt.Fprintf(w, "RESULT join ratio=%.3f join=%.0f ceiling=%.0f vs_count=%.3f%s whole_ratio=%.3f\n",
		rep.Ratio, rep.Join.SteadyPerSecond(), rep.Ceiling.SteadyPerSecond(), rep.VsCount,
		phaseKeys("join", rep.Join, "ceiling", rep.Ceiling), rep.WholeRatio)
	return rep, nil
}

// SeedJoin creates the join benchmark's topics and produces perSide
// records to each side: left record i has key Key(i, keys) and time
// start + i ms, right record i the same key and JoinRightDelay later;
// their values are Seed's JSON values with ids i (left) and perSide+i
// (right). JoinCountTopic gets every record of both.
func SeedJoin(ctx context.Context, brokers []string, partitions, perSide, keys int) error {
	if partitions <= 0 || perSide < 0 || keys <= 0 {
		return fmt.Errorf("seed: partitions %d, records %d and keys %d must be positive", partitions, perSide, keys)
	}
	if keys > 1_000_000 {
		return fmt.Errorf("seed: %d keys do not fit the %d-byte key format", keys, KeyBytes)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ProducerLinger(50*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.MaxBufferedRecords(250_000),
	)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{JoinLeftTopic, JoinRightTopic, JoinCountTopic} {
		if err := EnsureTopic(ctx, adm, topic, partitions); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	var produceErr firstError
	promise := produceErr.promise
	step := int64(1000 / JoinEventRate)
	start := time.Now().UnixMilli() - int64(perSide)*step
	var slab []byte
	for i := range perSide {
		if cap(slab)-len(slab) < 4*ValueBytes {
			slab = make([]byte, 0, 1<<20)
		}
		key := Key(i, keys)
		ts := start + int64(i)*step
		for side, topic := range []string{JoinLeftTopic, JoinRightTopic} {
			id, at := i, ts
			if side == 1 {
				id, at = perSide+i, ts+JoinRightDelay.Milliseconds()
			}
			from := len(slab)
			slab = appendValue(slab, id, key, at)
			v := slab[from:len(slab):len(slab)]
			for _, t := range []string{topic, JoinCountTopic} {
				cl.Produce(ctx, &kgo.Record{Topic: t, Key: key, Value: v, Timestamp: time.UnixMilli(at)}, promise)
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("seed: flushing: %w", err)
	}
	if err := produceErr.get(); err != nil {
		return fmt.Errorf("seed: producing the join input: %w", err)
	}
	return nil
}

// joinPairs returns, for every left record i, how many right records meet
// it: those of its key (j = i mod keys) whose time, JoinRightDelay after
// left record j's, lies within JoinWindow of left record i's.
func joinPairs(perSide, keys int) []int {
	window, delay := JoinWindow.Milliseconds(), JoinRightDelay.Milliseconds()
	step := int64(1000 / JoinEventRate)
	out := make([]int, perSide)
	for i := range perSide {
		// Right record j is (j-i)*step+delay after left record i.
		for j := i % keys; j < perSide; j += keys {
			if d := int64(j-i)*step + delay; d >= -window && d <= window {
				out[i]++
			}
		}
	}
	return out
}

// checkJoinPairs reads the join's output and checks that left record i's
// value came out exactly want[i] times, and nothing else did.
func checkJoinPairs(ctx context.Context, brokers []string, topic string, want []int) (int64, error) {
	got := make([]int, len(want))
	var bad int
	var example string
	n, err := readTopicAs(ctx, brokers, topic, kgo.ReadUncommitted(), func(r *kgo.Record) error {
		id, ok := recordID(r.Value)
		if !ok || id < 0 || id >= len(want) {
			bad++
			if example == "" {
				example = fmt.Sprintf("value %.40q at %s[%d]@%d is no left record's", r.Value, r.Topic, r.Partition, r.Offset)
			}
			return nil
		}
		got[id]++
		return nil
	})
	if err != nil {
		return n, err
	}
	var wrong int
	for i := range want {
		if got[i] != want[i] {
			wrong++
			if example == "" {
				example = fmt.Sprintf("left record %d joined %d times, want %d", i, got[i], want[i])
			}
		}
	}
	if bad+wrong > 0 {
		return n, fmt.Errorf("output topic %s (%d records): %d left records joined a wrong number of times, %d unknown values; e.g. %s", topic, n, wrong, bad, example)
	}
	return n, nil
}

// recordID returns the id of a seeded JSON value, {"id":N,...}.
func recordID(v []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(v, []byte(`{"id":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, false
	}
	id, err := strconv.Atoi(string(rest[:end]))
	return id, err == nil
}

// BraidJoin is the Braid side of the join benchmark: an inner join of the
// left and right topics within JoinWindow and JoinGrace on the bytes
// serde, whose joiner passes the left value on, at-least-once, committing
// every second. It measures from the call until every record of both
// sides is processed and committed; records counts both sides.
func BraidJoin(ctx context.Context, brokers []string, left, right, out string, records int) (Result, error) {
	start := time.Now()
	topo, err := joinTopology(left, right, out)
	if err != nil {
		return Result{}, err
	}
	return runStateful(ctx, start, topo, brokers, fmt.Sprintf("bench-join-braid-%d", braidJoins.Add(1)), records)
}

// joinTopology is the join benchmark's topology (see BraidJoin).
func joinTopology(left, right, out string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	l := b.Stream([]string{left}, streams.WithSerdes(streams.Bytes, streams.Bytes))
	r := b.Stream([]string{right}, streams.WithSerdes(streams.Bytes, streams.Bytes))
	l.Join(r, func(_, lv, _ any) (any, error) { return lv, nil },
		streams.JoinWindows{Before: JoinWindow, After: JoinWindow, Grace: JoinGrace},
		streams.Materialized(streams.StoreOptions{Name: "pairs"})).
		To(out, streams.WithSerdes(streams.Bytes, streams.Bytes))
	return b.Build()
}

// braidJoins numbers BraidJoin calls for their application ids,
// handwrittenJoins HandwrittenJoin calls for their groups.
var braidJoins, handwrittenJoins atomic.Int64
