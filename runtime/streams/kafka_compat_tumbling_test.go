package streams_test

// The port of Kafka Streams' tests of time-windowed aggregations
// (TimeWindowedKStreamImplTest, and KGroupedStreamImplTest's windowed
// count), and the helpers the window, session and sliding-window ports
// share, named windows*.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

const (
	windowsIn  = "input"
	windowsOut = "output"
)

// windowsToStringAdder is Kafka's MockAggregator.toStringInstance(sep):
// the aggregate, sep and the value, as Java's string concatenation prints
// them.
func windowsToStringAdder(sep string) streams.Aggregator {
	return func(_, value, agg any) (any, error) { return kafkaString(agg) + sep + kafkaString(value), nil }
}

// windowsStringInit is Kafka's MockInitializer.STRING_INIT.
func windowsStringInit() (any, error) { return "0", nil }

// windowsStringAdd is Kafka's MockReducer.STRING_ADDER.
func windowsStringAdd(agg, value any) (any, error) {
	return kafkaString(agg) + "+" + kafkaString(value), nil
}

// windowsSessionMerger joins two session aggregates with "+", as
// SessionWindowedKStreamImplTest's merger does.
func windowsSessionMerger(_, a, b any) (any, error) {
	return kafkaString(a) + "+" + kafkaString(b), nil
}

// windowsGrouped starts a topology: the input topic of string keys and
// values, grouped by key.
func windowsGrouped() (*streams.Builder, *streams.GroupedStream) {
	b := streams.NewBuilder()
	s := b.Stream([]string{windowsIn}, streams.WithSerdes(streams.String, streams.String))
	return b, s.GroupByKey()
}

// windowsStore materializes an aggregation in store name ("" generates
// one), with the record cache on or off.
func windowsStore(name string, cached bool) streams.Option {
	return streams.Materialized(streams.StoreOptions{Name: name, CachingDisabled: !cached})
}

// windowsEmit maps Kafka's emitFinal parameter to Braid's strategy.
func windowsEmit(final bool) streams.EmitStrategy {
	if final {
		return streams.EmitOnWindowClose
	}
	return streams.EmitOnWindowUpdate
}

// windowsCaches runs run with the record cache off and on, as Kafka's
// tests parameterized by withCache do: TopologyTestDriver commits after
// every record, which windowsDriver.in does too, so that both see every
// record's updates.
func windowsCaches(t *testing.T, run func(t *testing.T, cached bool)) {
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cached"
		}
		t.Run(name, func(t *testing.T) { run(t, cached) })
	}
}

// windowsDriver is a kafkaDriver on a windowed topology whose results go
// to windowsOut with the given serdes.
type windowsDriver struct {
	*kafkaDriver
	keySerde, valueSerde streams.Serde
}

// newWindowsDriver writes table to windowsOut and starts a driver with
// hooks.
func newWindowsDriver(t *testing.T, b *streams.Builder, table *streams.Table, keySerde, valueSerde streams.Serde, hooks ...streams.Hook) *windowsDriver {
	t.Helper()
	if table != nil {
		table.ToStream().To(windowsOut, streams.WithSerdes(keySerde, valueSerde))
	}
	return &windowsDriver{kafkaDriver: newKafkaDriver(t, b, streams.DriverConfig{Hooks: hooks}), keySerde: keySerde, valueSerde: valueSerde}
}

// in pipes string records "key:value@ts" to windowsIn, committing after
// each as TopologyTestDriver does; a key or value "null" is null.
func (w *windowsDriver) in(records ...string) {
	w.t.Helper()
	for _, r := range records {
		w.inNoCommit(r)
		w.commit()
	}
}

// inNoCommit pipes records as in does, without the commits: for Kafka
// tests that drive a processor and flush its store only at the end.
func (w *windowsDriver) inNoCommit(records ...string) {
	w.t.Helper()
	for _, r := range records {
		kv, ts, ok := strings.Cut(r, "@")
		key, value, ok2 := strings.Cut(kv, ":")
		var stamp int64
		if _, err := fmt.Sscan(ts, &stamp); err != nil || !ok || !ok2 {
			w.t.Fatalf("bad input %q: want key:value@ts", r)
		}
		w.pipe(windowsIn, windowsNull(key), windowsNull(value), stamp)
	}
}

func windowsNull(s string) any {
	if s == "null" {
		return nil
	}
	return s
}

// expectOut reads the results written since the last read.
func (w *windowsDriver) expectOut(want ...string) {
	w.t.Helper()
	w.expect(windowsOut, w.keySerde, w.valueSerde, want...)
}

// expectLast compares the last result of each window key, as Kafka's
// lastValueAndTimestampPerKey gives them (a tombstone forgets its key),
// with want (in any order).
func (w *windowsDriver) expectLast(want ...string) {
	w.t.Helper()
	last := make(map[string]string)
	for _, line := range w.read(windowsOut, w.keySerde, w.valueSerde) {
		sep := ":"
		if strings.HasPrefix(line, "[") {
			sep = "]:" // a windowed key
		}
		key, rest, _ := strings.Cut(line, sep)
		if strings.HasPrefix(rest, "null@") {
			delete(last, key)
		} else {
			last[key] = line
		}
	}
	var got []string
	for _, line := range last {
		got = append(got, line)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		w.t.Errorf("last result per window:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

// expectWindows compares the committed windows of key in store with want,
// as "[key@start/end]:value@ts" lines.
func (w *windowsDriver) expectWindows(store string, key string, from, to int64, want ...string) {
	w.t.Helper()
	if got := windowsFetch(w, store, key, from, to); !slices.Equal(got, want) {
		w.t.Errorf("windows of %q in %s:\n got  %s\n want %s", key, store, kafkaLines(got), kafkaLines(want))
	}
}

// lateDrops sums the late drops of every store.
func (w *windowsDriver) lateDrops() int64 {
	var n int64
	for _, ts := range w.d.Stats().Tasks {
		for _, s := range ts.Stores {
			n += s.LateDrops
		}
	}
	return n
}

// skipped sums the records the tasks skipped.
func (w *windowsDriver) skipped() int64 {
	var n int64
	for _, ts := range w.d.Stats().Tasks {
		n += ts.Skipped
	}
	return n
}

// windowsSkips records the skipped records a RecordSkippedHook hears of,
// as "topic/partition@offset: error" lines.
type windowsSkips struct{ lines []string }

func (s *windowsSkips) OnRecordSkipped(r streams.SkippedRecord) {
	s.lines = append(s.lines, fmt.Sprintf("%s/%d@%d: %v", r.Topic, r.Partition, r.Offset, r.Err))
}

// expectSkips checks that the hook heard of exactly the records at the
// given input offsets, each skipped for why.
func (w *windowsDriver) expectSkips(s *windowsSkips, why error, offsets ...int64) {
	w.t.Helper()
	if got := w.skipped(); got != int64(len(offsets)) {
		w.t.Errorf("Stats: %d records skipped, want %d", got, len(offsets))
	}
	var want []string
	for _, o := range offsets {
		want = append(want, fmt.Sprintf("%s/0@%d", windowsIn, o))
	}
	var got []string
	for _, line := range s.lines {
		at, msg, _ := strings.Cut(line, ": ")
		got = append(got, at)
		if !strings.HasSuffix(msg, why.Error()) {
			w.t.Errorf("skipped %s for %q, want %q", at, msg, why)
		}
	}
	if !slices.Equal(got, want) {
		w.t.Errorf("skipped records:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

// windowsTimeKeys is the serde of a time-windowed string key.
func windowsTimeKeys(size time.Duration) streams.Serde {
	return streams.TimeWindowedSerde(streams.String, size.Milliseconds())
}

const windowsMs = time.Millisecond

// timeWindowedImplData is TimeWindowedKStreamImplTest.processData.
var timeWindowedImplData = []string{"1:1@10", "1:2@15", "1:3@500", "2:10@550", "2:20@500", "2:30@1000"}

// timeWindowedImpl runs one of TimeWindowedKStreamImplTest's
// aggregations over tumbling windows of 500ms without grace, cached and
// not, and compares the results with want.
func timeWindowedImpl(t *testing.T, final bool, valueSerde streams.Serde, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := agg(g.WindowedBy(streams.Tumbling(500*windowsMs, 0)).Emit(windowsEmit(final)), windowsStore("", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(500*windowsMs), valueSerde)
		w.in(timeWindowedImplData...)
		w.expectOut(want...)
	})
}

func timeWindowedCount(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Count(store)
}

func timeWindowedReduce(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Reduce(windowsStringAdd, store)
}

func timeWindowedAggregate(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Aggregate(windowsStringInit, windowsToStringAdder("+"), store)
}

var _ = port(
	// TimeWindowedKStreamImplTest.java, shouldCountWindowed: a result per
	// record, each carrying the largest timestamp of its window's records
	// (2:20@500 leaves [500,1000) of key 2 at 550).
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldCountWindowed/emit-update", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedImpl(t, false, streams.Int64, timeWindowedCount,
			"[1@0/500]:1@10", "[1@0/500]:2@15", "[1@500/1000]:1@500",
			"[2@500/1000]:1@550", "[2@500/1000]:2@550", "[2@1000/1500]:1@1000")
	}},
	// TimeWindowedKStreamImplTest.java, shouldCountWindowed, emitting
	// final results: each window once, when stream time passes its end.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldCountWindowed/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		timeWindowedImpl(t, true, streams.Int64, timeWindowedCount,
			"[1@0/500]:2@15", "[1@500/1000]:1@500", "[2@500/1000]:2@550")
	}},
	// TimeWindowedKStreamImplTest.java, shouldReduceWindowed.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldReduceWindowed/emit-update", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedImpl(t, false, streams.String, timeWindowedReduce,
			"[1@0/500]:1@10", "[1@0/500]:1+2@15", "[1@500/1000]:3@500",
			"[2@500/1000]:10@550", "[2@500/1000]:10+20@550", "[2@1000/1500]:30@1000")
	}},
	// TimeWindowedKStreamImplTest.java, shouldReduceWindowed, final.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldReduceWindowed/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		timeWindowedImpl(t, true, streams.String, timeWindowedReduce,
			"[1@0/500]:1+2@15", "[1@500/1000]:3@500", "[2@500/1000]:10+20@550")
	}},
	// TimeWindowedKStreamImplTest.java, shouldAggregateWindowed.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldAggregateWindowed/emit-update", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedImpl(t, false, streams.String, timeWindowedAggregate,
			"[1@0/500]:0+1@10", "[1@0/500]:0+1+2@15", "[1@500/1000]:0+3@500",
			"[2@500/1000]:0+10@550", "[2@500/1000]:0+10+20@550", "[2@1000/1500]:0+30@1000")
	}},
	// TimeWindowedKStreamImplTest.java, shouldAggregateWindowed, final.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldAggregateWindowed/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		timeWindowedImpl(t, true, streams.String, timeWindowedAggregate,
			"[1@0/500]:0+1+2@15", "[1@500/1000]:0+3@500", "[2@500/1000]:0+10+20@550")
	}},
	// TimeWindowedKStreamImplTest.java, shouldMaterializeCount, uncached
	// and emitting updates: the store keeps what its retention (size +
	// grace) still covers at stream time 1000, the window [1000,1500).
	// (Kafka's cached variant also returns windows past retention that
	// its cache still holds, and its emit-final store keeps three.)
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldMaterializeCount", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedMaterialized(t, timeWindowedCount, "[2@1000/1500]:1@1000")
	}},
	// TimeWindowedKStreamImplTest.java, shouldMaterializeReduced, uncached.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldMaterializeReduced", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedMaterialized(t, timeWindowedReduce, "[2@1000/1500]:30@1000")
	}},
	// TimeWindowedKStreamImplTest.java, shouldMaterializeAggregated,
	// uncached.
	kafkaCase{Kafka: "TimeWindowedKStreamImplTest.shouldMaterializeAggregated", Area: "tumbling", Run: func(t *testing.T) {
		timeWindowedMaterialized(t, timeWindowedAggregate, "[2@1000/1500]:0+30@1000")
	}},
	// KGroupedStreamImplTest.java, shouldCountWindowed: tumbling windows
	// of 500ms with 100ms of grace; 3:B@100 still counts in [0,500) at
	// stream time 500.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountWindowed", Area: "grace", Run: func(t *testing.T) {
		windowsCountWindowed(t, "aggregate-by-key-windowed")
	}},
	// KGroupedStreamImplTest.java, shouldCountWindowedWithInternalStoreName:
	// the same with a generated store name.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountWindowedWithInternalStoreName", Area: "grace", Run: func(t *testing.T) {
		windowsCountWindowed(t, "")
	}},
)

// windowsCountWindowed is KGroupedStreamImplTest.doCountWindowed with
// the store named store ("" generates a name).
func windowsCountWindowed(t *testing.T, store string) {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Tumbling(500*windowsMs, 100*windowsMs)).Count(windowsStore(store, true))
	w := newWindowsDriver(t, b, table, windowsTimeKeys(500*windowsMs), streams.Int64)
	w.in("1:A@0", "1:A@499", "1:A@100", "2:B@0", "2:B@100", "2:B@200", "3:C@1",
		"1:A@500", "1:A@500", "2:B@500", "2:B@500", "3:B@100")
	w.expectOut(
		"[1@0/500]:1@0", "[1@0/500]:2@499", "[1@0/500]:3@499",
		"[2@0/500]:1@0", "[2@0/500]:2@100", "[2@0/500]:3@200",
		"[3@0/500]:1@1",
		"[1@500/1000]:1@500", "[1@500/1000]:2@500",
		"[2@500/1000]:1@500", "[2@500/1000]:2@500",
		"[3@0/500]:2@100")
}

// timeWindowedMaterialized runs an aggregation of
// TimeWindowedKStreamImplTest's shouldMaterialize* tests uncached and
// fetches keys 1 and 2 from the store over [0, 1000].
func timeWindowedMaterialized(t *testing.T, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	agg(g.WindowedBy(streams.Tumbling(500*windowsMs, 0)), windowsStore("store", false))
	w := newWindowsDriver(t, b, nil, nil, nil)
	w.in(timeWindowedImplData...)
	found := slices.Concat(windowsFetch(w, "store", "1", 0, 1000), windowsFetch(w, "store", "2", 0, 1000))
	if !slices.Equal(found, want) {
		t.Errorf("store:\n got  %s\n want %s", kafkaLines(found), kafkaLines(want))
	}
}

// windowsFetch returns the committed windows of key in store as
// "[key@start/end]:value@ts" lines.
func windowsFetch(w *windowsDriver, store, key string, from, to int64) []string {
	w.t.Helper()
	w.commit()
	found, err := w.d.FetchWindows(store, key, from, to)
	if err != nil {
		w.t.Fatalf("fetching windows of %q from %s: %v", key, store, err)
	}
	var out []string
	for _, r := range found {
		out = append(out, kafkaKV(r.Window, r.Value, r.Timestamp))
	}
	return out
}
