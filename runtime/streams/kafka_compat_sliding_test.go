package streams_test

// The port of Kafka Streams' tests of sliding windows:
// SlidingWindowedKStreamImplTest, KStreamSlidingWindowAggregateTest and
// KGroupedStreamImplTest's sliding count. A sliding window [start,
// start+TimeDifference] exists only where records define it, and its
// results carry the largest timestamp of its records.

import (
	"cmp"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// expectSet compares the results written since the last read with want
// as sets, the way KStreamSlidingWindowAggregateTest's gatherOutput
// compares them (per window start, a set of value and timestamp).
func (w *windowsDriver) expectSet(want ...string) {
	w.t.Helper()
	got := w.read(windowsOut, w.keySerde, w.valueSerde)
	slices.Sort(got)
	got = slices.Compact(got)
	want = slices.Compact(slices.Sorted(slices.Values(want)))
	if !slices.Equal(got, want) {
		w.t.Errorf("results as a set:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

// slidingAt expands "start:value@ts" results of key A over windows of
// difference d into "[A@start/end]:value@ts" lines.
func slidingAt(d time.Duration, results ...string) []string {
	var out []string
	for _, r := range results {
		start, rest, _ := strings.Cut(r, ":")
		s, err := strconv.ParseInt(start, 10, 64)
		if err != nil {
			panic("slidingAt: bad window start in " + r)
		}
		out = append(out, "[A@"+start+"/"+windowsItoa(s+d.Milliseconds())+"]:"+rest)
	}
	return out
}

// slidingRun runs an aggregation over sliding windows of difference d and
// grace, cached and not, pipes in and compares the result set with want.
func slidingRun(t *testing.T, final bool, d, grace time.Duration, agg func(*streams.WindowedStream, streams.Option) *streams.Table, in []string, want []string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := agg(g.WindowedBy(streams.Sliding(d, grace)).Emit(windowsEmit(final)), windowsStore("", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(d), streams.String)
		w.in(in...)
		w.expectSet(want...)
	})
}

var (
	slidingSmallIn       = []string{"A:1@10", "A:2@10", "A:3@14", "A:4@15", "A:5@20", "A:6@22", "A:7@30"}
	slidingReduceIn      = []string{"A:1@10", "A:2@14", "A:3@15", "A:4@22", "A:5@26", "A:6@30"}
	slidingEarlyIn       = []string{"A:1@0", "A:2@5", "A:3@6", "A:4@3", "A:5@13", "A:6@10", "A:7@70"}
	slidingEarlyRepeatIn = []string{"A:1@0", "A:2@2", "A:3@4", "A:4@0", "A:5@2", "A:6@2", "A:7@0", "A:8@7"}
	slidingNoGraceIn     = []string{"A:1@100", "A:2@105", "A:3@106", "A:4@103", "A:5@113", "A:6@110"}
	// slidingEarlyFinal is what both early-record tests over 50ms
	// windows emit as final results.
	slidingEarlyFinal = []string{"0:0+1+2+3+4+5+6@13", "1:0+2+3+4+5+6@13", "4:0+2+3+5+6@13",
		"6:0+3+5+6@13", "7:0+5+6@13", "11:0+5@13"}
	// slidingEarlyUpdates is what they emit as updates, but the last.
	slidingEarlyUpdates = []string{
		"0:0+1@0", "0:0+1+2@5", "0:0+1+2+3@6", "0:0+1+2+3+4@6", "0:0+1+2+3+4+5@13", "0:0+1+2+3+4+5+6@13",
		"1:0+2@5", "1:0+2+3@6", "1:0+2+3+4@6", "1:0+2+3+4+5@13", "1:0+2+3+4+5+6@13",
		"4:0+2+3@6", "4:0+2+3+5@13", "4:0+2+3+5+6@13",
		"6:0+3@6", "6:0+3+5@13", "6:0+3+5+6@13",
		"7:0+5@13", "7:0+5+6@13",
		"11:0+5@13"}
)

func slidingAggregate(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Aggregate(windowsStringInit, windowsToStringAdder("+"), store)
}

func slidingReduce(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Reduce(windowsStringAdd, store)
}

// slidingImplData is SlidingWindowedKStreamImplTest.processData.
var slidingImplData = []string{"1:1@100", "1:2@150", "1:3@500", "2:10@200", "2:20@150"}

// slidingImpl runs one of SlidingWindowedKStreamImplTest's aggregations
// over windows of 100ms with 1s of grace and compares the last result of
// each window with want.
func slidingImpl(t *testing.T, valueSerde streams.Serde, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	table := agg(g.WindowedBy(streams.Sliding(100*windowsMs, time.Second)), windowsStore("", true))
	w := newWindowsDriver(t, b, table, windowsTimeKeys(100*windowsMs), valueSerde)
	w.in(slidingImplData...)
	w.expectLast(want...)
}

var _ = port(
	// SlidingWindowedKStreamImplTest.java, shouldCountSlidingWindows: 2@150
	// comes after 2@200, so it gets a left window [50,150] and a right
	// window [151,251] holding 200.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldCountSlidingWindows", Area: "sliding", Run: func(t *testing.T) {
		slidingImpl(t, streams.Int64, func(ws *streams.WindowedStream, o streams.Option) *streams.Table { return ws.Count(o) },
			"[1@0/100]:1@100", "[1@101/201]:1@150", "[1@50/150]:2@150", "[1@400/500]:1@500",
			"[2@100/200]:2@200", "[2@50/150]:1@150", "[2@151/251]:1@200")
	}},
	// SlidingWindowedKStreamImplTest.java, shouldReduceSlidingWindows.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldReduceSlidingWindows", Area: "sliding", Run: func(t *testing.T) {
		slidingImpl(t, streams.String, slidingReduce,
			"[1@0/100]:1@100", "[1@101/201]:2@150", "[1@50/150]:1+2@150", "[1@400/500]:3@500",
			"[2@100/200]:10+20@200", "[2@50/150]:20@150", "[2@151/251]:10@200")
	}},
	// SlidingWindowedKStreamImplTest.java, shouldAggregateSlidingWindows.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldAggregateSlidingWindows", Area: "sliding", Run: func(t *testing.T) {
		slidingImpl(t, streams.String, slidingAggregate,
			"[1@0/100]:0+1@100", "[1@101/201]:0+2@150", "[1@50/150]:0+1+2@150", "[1@400/500]:0+3@500",
			"[2@100/200]:0+10+20@200", "[2@50/150]:0+20@150", "[2@151/251]:0+10@200")
	}},
	// KStreamSlidingWindowAggregateTest.java, testAggregateSmallInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateSmallInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRun(t, false, 10*windowsMs, 5*windowsMs, slidingAggregate, slidingSmallIn, slidingAt(10*windowsMs,
			"0:0+1@10", "0:0+1+2@10", "4:0+1+2+3@14", "5:0+1+2+3+4@15", "10:0+1+2+3+4+5@20",
			"11:0+3@14", "11:0+3+4@15", "11:0+3+4+5@20", "12:0+3+4+5+6@22",
			"15:0+4@15", "15:0+4+5@20", "15:0+4+5+6@22", "16:0+5@20", "16:0+5+6@22",
			"20:0+5+6+7@30", "21:0+6@22", "21:0+6+7@30", "23:0+7@30"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testAggregateSmallInput,
	// final: stream time 30 closes the windows ending before 25.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateSmallInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingRun(t, true, 10*windowsMs, 5*windowsMs, slidingAggregate, slidingSmallIn, slidingAt(10*windowsMs,
			"0:0+1+2@10", "4:0+1+2+3@14", "5:0+1+2+3+4@15", "10:0+1+2+3+4+5@20", "11:0+3+4+5@20", "12:0+3+4+5+6@22"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testReduceSmallInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testReduceSmallInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRun(t, false, 10*windowsMs, 5*windowsMs, slidingReduce, slidingReduceIn, slidingAt(10*windowsMs,
			"0:1@10", "4:1+2@14", "5:1+2+3@15", "11:2@14", "11:2+3@15", "12:2+3+4@22",
			"15:3@15", "15:3+4@22", "16:4@22", "16:4+5@26", "20:4+5+6@30", "23:5@26", "23:5+6@30", "27:6@30"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testReduceSmallInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testReduceSmallInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingRun(t, true, 10*windowsMs, 5*windowsMs, slidingReduce, slidingReduceIn, slidingAt(10*windowsMs,
			"0:1@10", "4:1+2@14", "5:1+2+3@15", "11:2+3@15", "12:2+3+4@22"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsSmallInput:
	// records before the time difference share the window [0,50].
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRun(t, false, 50*windowsMs, 0, slidingAggregate, slidingEarlyIn,
			slidingAt(50*windowsMs, append(slices.Clone(slidingEarlyUpdates), "20:0+7@70")...))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsSmallInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingRun(t, true, 50*windowsMs, 0, slidingAggregate, slidingEarlyIn, slidingAt(50*windowsMs, slidingEarlyFinal...))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyNoGracePeriodSmallInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodSmallInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		in := append(slices.Clone(slidingEarlyIn[:6]), "A:6@70")
		slidingRun(t, false, 50*windowsMs, 0, slidingAggregate, in,
			slidingAt(50*windowsMs, append(slices.Clone(slidingEarlyUpdates), "20:0+6@70")...))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyNoGracePeriodSmallInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodSmallInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		in := append(slices.Clone(slidingEarlyIn[:6]), "A:6@70")
		slidingRun(t, true, 50*windowsMs, 0, slidingAggregate, in, slidingAt(50*windowsMs, slidingEarlyFinal...))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsRepeatedInput:
	// records at the same timestamps, before the time difference of 5ms.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsRepeatedInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRun(t, false, 5*windowsMs, 0, slidingAggregate, slidingEarlyRepeatIn, slidingAt(5*windowsMs,
			"0:0+1@0", "0:0+1+2@2", "0:0+1+2+3+4+5@4", "0:0+1+2+3+4+5+6@4", "0:0+1+2+3@4",
			"0:0+1+2+3+4@4", "0:0+1+2+3+4+5+6+7@4",
			"1:0+2+3+5+6@4", "1:0+2@2", "1:0+2+3@4", "1:0+2+3+5@4",
			"2:0+2+3+5+6+8@7", "3:0+3@4", "3:0+3+8@7", "5:0+8@7"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsRepeatedInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsRepeatedInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingRun(t, true, 5*windowsMs, 0, slidingAggregate, slidingEarlyRepeatIn, slidingAt(5*windowsMs,
			"0:0+1+2+3+4+5+6+7@4", "1:0+2+3+5+6@4"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testNoGracePeriodSmallInput:
	// without grace, 6@110 is late for its left window [60,110] at stream
	// time 113 but counts in the windows still open.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testNoGracePeriodSmallInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRun(t, false, 50*windowsMs, 0, slidingAggregate, slidingNoGraceIn, slidingAt(50*windowsMs,
			"50:0+1@100", "55:0+1+2@105", "56:0+1+2+3@106", "56:0+1+2+3+4@106",
			"63:0+1+2+3+4+5@113", "63:0+1+2+3+4+5+6@113",
			"101:0+2@105", "101:0+2+3@106", "101:0+2+3+4@106", "101:0+2+3+4+5@113", "101:0+2+3+4+5+6@113",
			"104:0+2+3@106", "104:0+2+3+5@113", "104:0+2+3+5+6@113",
			"106:0+3@106", "106:0+3+5@113", "106:0+3+5+6@113",
			"107:0+5@113", "107:0+5+6@113", "111:0+5@113"))
	}},
	// KStreamSlidingWindowAggregateTest.java, testNoGracePeriodSmallInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testNoGracePeriodSmallInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingRun(t, true, 50*windowsMs, 0, slidingAggregate, slidingNoGraceIn, slidingAt(50*windowsMs,
			"50:0+1@100", "55:0+1+2@105", "56:0+1+2+3+4@106"))
	}},
	// KStreamSlidingWindowAggregateTest.java, shouldLogAndMeterWhenSkippingNullKey.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingNullKey", Area: "sliding", Run: func(t *testing.T) {
		for _, final := range []bool{false, true} {
			t.Run(windowsEmit(final).String(), func(t *testing.T) {
				b, g := windowsGrouped()
				g.WindowedBy(streams.Sliding(10*windowsMs, 100*windowsMs)).Emit(windowsEmit(final)).
					Aggregate(windowsStringInit, windowsToStringAdder("+"), windowsStore("topic1-Canonized", true))
				skips := &windowsSkips{}
				w := newWindowsDriver(t, b, nil, nil, nil, skips)
				w.in("null:1@0")
				w.expectSkips(skips, streams.ErrNullKey, 0)
			})
		}
	}},
	// KStreamSlidingWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindowByGrace.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace/emit-update", Area: "grace", Run: func(t *testing.T) {
		slidingExpiredByGrace(t, false, "[k@190/200]:0+100@200", "[k@290/300]:0+101@300", "[k@390/400]:0+102@400")
	}},
	// KStreamSlidingWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindowByGrace, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingExpiredByGrace(t, true, "[k@190/200]:0+100@200", "[k@290/300]:0+101@300")
	}},
	// KGroupedStreamImplTest.java, shouldCountSlidingWindows: every update,
	// sorted by key and window start as the Java test sorts them.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountSlidingWindows", Area: "sliding", Run: func(t *testing.T) {
		slidingCountGrouped(t, "aggregate-by-key-windowed")
	}},
	// KGroupedStreamImplTest.java, shouldCountSlidingWindowsWithInternalStoreName.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountSlidingWindowsWithInternalStoreName", Area: "sliding", Run: func(t *testing.T) {
		slidingCountGrouped(t, "")
	}},
	// KStreamSlidingWindowAggregateTest.java, testAggregateLargeInput:
	// every update, sorted by key and window start as the Java test sorts
	// them.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateLargeInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingLarge(t, false,
			"[A@0/10]:0+1@10", "[A@5/15]:0+1+4@15", "[A@10/20]:0+1+2@20", "[A@10/20]:0+1+2+4@20",
			"[A@11/21]:0+2@20", "[A@11/21]:0+2+4@20", "[A@12/22]:0+2+3@22", "[A@12/22]:0+2+3+4@22",
			"[A@16/26]:0+2+3@22", "[A@21/31]:0+3@22",
			"[B@2/12]:0+1@12", "[B@3/13]:0+1+2@13", "[B@4/14]:0+1+2+6@14",
			"[B@8/18]:0+1+2+3@18", "[B@8/18]:0+1+2+3+6@18",
			"[B@9/19]:0+1+2+3+4@19", "[B@9/19]:0+1+2+3+4+6@19",
			"[B@13/23]:0+2@13", "[B@13/23]:0+2+3@18", "[B@13/23]:0+2+3+4@19", "[B@13/23]:0+2+3+4+6@19",
			"[B@14/24]:0+3@18", "[B@14/24]:0+3+4@19", "[B@14/24]:0+3+4+6@19",
			"[B@15/25]:0+3+4+5@25", "[B@19/29]:0+4@19", "[B@19/29]:0+4+5@25", "[B@20/30]:0+5@25",
			"[C@1/11]:0+1@11", "[C@5/15]:0+1+2@15", "[C@6/16]:0+1+2+3@16", "[C@11/21]:0+1+2+3+4@21",
			"[C@12/22]:0+2@15", "[C@12/22]:0+2+3@16", "[C@12/22]:0+2+3+4@21",
			"[C@13/23]:0+2+3+4+5@23",
			"[C@16/26]:0+3@16", "[C@16/26]:0+3+4@21", "[C@16/26]:0+3+4+5@23",
			"[C@17/27]:0+4@21", "[C@17/27]:0+4+5@23", "[C@22/32]:0+5@23",
			"[D@1/11]:0+4@11", "[D@2/12]:0+4+2@12", "[D@6/16]:0+4+2+5@16",
			"[D@12/22]:0+2@12", "[D@12/22]:0+2+5@16", "[D@13/23]:0+5@16", "[D@19/29]:0+3@29")
	}},
	// KStreamSlidingWindowAggregateTest.java, testAggregateLargeInput,
	// final, with 10ms of grace instead of 50ms: B@14, C@11, D@11, D@12
	// and D@16 come too late for their windows.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateLargeInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingLarge(t, true,
			"[A@0/10]:0+1@10", "[A@5/15]:0+1+4@15",
			"[B@2/12]:0+1@12", "[B@3/13]:0+1+2@13", "[B@8/18]:0+1+2+3+6@18",
			"[C@5/15]:0+2@15", "[C@6/16]:0+2+3@16")
	}},
)

// slidingCountGrouped is KGroupedStreamImplTest.doCountSlidingWindows
// with the store named store ("" generates a name).
func slidingCountGrouped(t *testing.T, store string) {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Sliding(500*windowsMs, 2*time.Second)).Count(windowsStore(store, true))
	w := newWindowsDriver(t, b, table, windowsTimeKeys(500*windowsMs), streams.Int64)
	w.in("1:A@500", "1:A@999", "1:A@600", "2:B@500", "2:B@600", "2:B@700", "3:C@501",
		"1:A@1000", "1:A@1000", "2:B@1000", "2:B@1000", "3:C@600")
	w.expectSorted(
		"[1@0/500]:1@500", "[1@100/600]:2@600", "[1@499/999]:2@999", "[1@499/999]:3@999",
		"[1@500/1000]:4@1000", "[1@500/1000]:5@1000",
		"[1@501/1001]:1@999", "[1@501/1001]:2@999", "[1@501/1001]:3@1000", "[1@501/1001]:4@1000",
		"[1@601/1101]:1@999", "[1@601/1101]:2@1000", "[1@601/1101]:3@1000",
		"[1@1000/1500]:1@1000", "[1@1000/1500]:2@1000",
		"[2@0/500]:1@500", "[2@100/600]:2@600", "[2@200/700]:3@700",
		"[2@500/1000]:4@1000", "[2@500/1000]:5@1000",
		"[2@501/1001]:1@600", "[2@501/1001]:2@700", "[2@501/1001]:3@1000", "[2@501/1001]:4@1000",
		"[2@601/1101]:1@700", "[2@601/1101]:2@1000", "[2@601/1101]:3@1000",
		"[2@701/1201]:1@1000", "[2@701/1201]:2@1000",
		"[3@1/501]:1@501", "[3@100/600]:2@600", "[3@502/1002]:1@600")
}

// expectSorted compares the results written since the last read, sorted
// stably by key and window start as several Java tests sort them, with
// want.
func (w *windowsDriver) expectSorted(want ...string) {
	w.t.Helper()
	got := w.read(windowsOut, w.keySerde, w.valueSerde)
	slices.SortStableFunc(got, func(a, b string) int { return cmp.Compare(slidingSortKey(a), slidingSortKey(b)) })
	if !slices.Equal(got, want) {
		w.t.Errorf("sorted results:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

// slidingLarge is testAggregateLargeInput: windows of 10ms, with 50ms of
// grace emitting updates and 10ms emitting final results.
func slidingLarge(t *testing.T, final bool, want ...string) {
	grace := 50 * windowsMs
	if final {
		grace = 10 * windowsMs
	}
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := slidingAggregate(g.WindowedBy(streams.Sliding(10*windowsMs, grace)).Emit(windowsEmit(final)), windowsStore("", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in("A:1@10", "A:2@20", "A:3@22", "A:4@15",
			"B:1@12", "B:2@13", "B:3@18", "B:4@19", "B:5@25", "B:6@14",
			"C:1@11", "C:2@15", "C:3@16", "C:4@21", "C:5@23",
			"D:4@11", "D:2@12", "D:3@29", "D:5@16")
		w.expectSorted(want...)
	})
}

// slidingSortKey orders "[key@start/end]:..." lines by key, then start.
func slidingSortKey(line string) string {
	key, rest, _ := strings.Cut(strings.TrimPrefix(line, "["), "@")
	start, _, _ := strings.Cut(rest, "/")
	return key + "\x00" + strings.Repeat("0", 20-len(start)) + start
}

// slidingExpiredByGrace is shouldLogAndMeterWhenSkippingExpiredWindowByGrace:
// windows of 10ms with 90ms of grace; at stream time 200 the left windows
// of 100..105 and 15 have closed.
func slidingExpiredByGrace(t *testing.T, final bool, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := g.WindowedBy(streams.Sliding(10*windowsMs, 90*windowsMs)).Emit(windowsEmit(final)).
			Aggregate(windowsStringInit, windowsToStringAdder("+"), windowsStore("store-name", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in("k:100@200", "k:0@100", "k:1@101", "k:2@102", "k:3@103", "k:4@104", "k:5@105", "k:6@15", "k:101@300", "k:102@400")
		if n := w.lateDrops(); n != 7 {
			t.Errorf("late drops: %d, want 7", n)
		}
		w.expectOut(want...)
	})
}

// slidingMaterialized runs an aggregation of SlidingWindowedKStreamImplTest's
// shouldMaterialize* tests and fetches keys 1 and 2 over [0, 1000].
func slidingMaterialized(t *testing.T, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	agg(g.WindowedBy(streams.Sliding(100*windowsMs, time.Second)), windowsStore("store", true))
	w := newWindowsDriver(t, b, nil, nil, nil)
	w.in(slidingImplData...)
	got := append(windowsFetch(w, "store", "1", 0, 1000), windowsFetch(w, "store", "2", 0, 1000)...)
	if !slices.Equal(got, want) {
		t.Errorf("store:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

var _ = port(
	// SlidingWindowedKStreamImplTest.java, shouldMaterializeCount: every
	// window with its largest record timestamp.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldMaterializeCount", Area: "sliding", Run: func(t *testing.T) {
		slidingMaterialized(t, func(ws *streams.WindowedStream, o streams.Option) *streams.Table { return ws.Count(o) },
			"[1@0/100]:1@100", "[1@50/150]:2@150", "[1@101/201]:1@150", "[1@400/500]:1@500",
			"[2@50/150]:1@150", "[2@100/200]:2@200", "[2@151/251]:1@200")
	}},
	// SlidingWindowedKStreamImplTest.java, shouldMaterializeReduced.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldMaterializeReduced", Area: "sliding", Run: func(t *testing.T) {
		slidingMaterialized(t, slidingReduce,
			"[1@0/100]:1@100", "[1@50/150]:1+2@150", "[1@101/201]:2@150", "[1@400/500]:3@500",
			"[2@50/150]:20@150", "[2@100/200]:10+20@200", "[2@151/251]:10@200")
	}},
	// SlidingWindowedKStreamImplTest.java, shouldMaterializeAggregated.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldMaterializeAggregated", Area: "sliding", Run: func(t *testing.T) {
		slidingMaterialized(t, slidingAggregate,
			"[1@0/100]:0+1@100", "[1@50/150]:0+1+2@150", "[1@101/201]:0+2@150", "[1@400/500]:0+3@500",
			"[2@50/150]:0+20@150", "[2@100/200]:0+10+20@200", "[2@151/251]:0+10@200")
	}},
)

// slidingEarlyLarge is testEarlyRecordsLargeInput: windows of 10ms over
// records before and after the time difference, with 50ms of grace
// emitting updates and 1ms emitting final results.
func slidingEarlyLarge(t *testing.T, final bool, want ...string) {
	grace := 50 * windowsMs
	if final {
		grace = 1 * windowsMs
	}
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := slidingAggregate(g.WindowedBy(streams.Sliding(10*windowsMs, grace)).Emit(windowsEmit(final)), windowsStore("", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in("E:1@0", "E:3@5", "E:4@6", "E:2@3", "E:6@13", "E:5@10", "E:7@4", "E:8@2", "E:9@15")
		w.expectSorted(want...)
	})
}

var _ = port(
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsLargeInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsLargeInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingEarlyLarge(t, false,
			"[E@0/10]:0+1@0", "[E@0/10]:0+1+3@5", "[E@0/10]:0+1+3+4@6", "[E@0/10]:0+1+3+4+2@6",
			"[E@0/10]:0+1+3+4+2+5@10", "[E@0/10]:0+1+3+4+2+5+7@10", "[E@0/10]:0+1+3+4+2+5+7+8@10",
			"[E@1/11]:0+3@5", "[E@1/11]:0+3+4@6", "[E@1/11]:0+3+4+2@6", "[E@1/11]:0+3+4+2+5@10",
			"[E@1/11]:0+3+4+2+5+7@10", "[E@1/11]:0+3+4+2+5+7+8@10",
			"[E@3/13]:0+3+4+2+6@13", "[E@3/13]:0+3+4+2+6+5@13", "[E@3/13]:0+3+4+2+6+5+7@13",
			"[E@4/14]:0+3+4@6", "[E@4/14]:0+3+4+6@13", "[E@4/14]:0+3+4+6+5@13", "[E@4/14]:0+3+4+6+5+7@13",
			"[E@5/15]:0+3+4+6+5@13", "[E@5/15]:0+3+4+6+5+9@15",
			"[E@6/16]:0+4@6", "[E@6/16]:0+4+6@13", "[E@6/16]:0+4+6+5@13", "[E@6/16]:0+4+6+5+9@15",
			"[E@7/17]:0+6@13", "[E@7/17]:0+6+5@13", "[E@7/17]:0+6+5+9@15",
			"[E@11/21]:0+6@13", "[E@11/21]:0+6+9@15", "[E@14/24]:0+9@15")
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyRecordsLargeInput,
	// final, with 1ms of grace: E@2 comes too late for [0,10] and [1,11].
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyRecordsLargeInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingEarlyLarge(t, true, "[E@0/10]:0+1+3+4+2@6", "[E@1/11]:0+3+4+2@6", "[E@3/13]:0+3+4+2+6+5+7@13")
	}},
)

// slidingNoGraceLarge runs testEarlyNoGracePeriodLargeInput (base 0) and
// testNoGracePeriodLargeInput (base 100): windows of 10ms without grace
// over the same records shifted by base.
func slidingNoGraceLarge(t *testing.T, final bool, base int64, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := slidingAggregate(g.WindowedBy(streams.Sliding(10*windowsMs, 0)).Emit(windowsEmit(final)), windowsStore("", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		for _, r := range []struct {
			v  string
			ts int64
		}{{"1", 0}, {"3", 5}, {"4", 6}, {"2", 3}, {"6", 13}, {"5", 10}, {"7", 4}, {"8", 2}, {"9", 15}} {
			w.in("E:" + r.v + "@" + windowsItoa(base+r.ts))
		}
		w.expectSorted(want...)
	})
}

var _ = port(
	// KStreamSlidingWindowAggregateTest.java, testEarlyNoGracePeriodLargeInput:
	// without grace E@10, E@4 and E@2 miss the windows stream time closed.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodLargeInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingNoGraceLarge(t, false, 0,
			"[E@0/10]:0+1@0", "[E@0/10]:0+1+3@5", "[E@0/10]:0+1+3+4@6", "[E@0/10]:0+1+3+4+2@6",
			"[E@1/11]:0+3@5", "[E@1/11]:0+3+4@6", "[E@1/11]:0+3+4+2@6",
			"[E@3/13]:0+3+4+2+6@13", "[E@3/13]:0+3+4+2+6+5@13", "[E@3/13]:0+3+4+2+6+5+7@13",
			"[E@4/14]:0+3+4@6", "[E@4/14]:0+3+4+6@13", "[E@4/14]:0+3+4+6+5@13", "[E@4/14]:0+3+4+6+5+7@13",
			"[E@5/15]:0+3+4+6+5@13", "[E@5/15]:0+3+4+6+5+9@15",
			"[E@6/16]:0+4@6", "[E@6/16]:0+4+6@13", "[E@6/16]:0+4+6+5@13", "[E@6/16]:0+4+6+5+9@15",
			"[E@7/17]:0+6@13", "[E@7/17]:0+6+5@13", "[E@7/17]:0+6+5+9@15",
			"[E@11/21]:0+6@13", "[E@11/21]:0+6+9@15", "[E@14/24]:0+9@15")
	}},
	// KStreamSlidingWindowAggregateTest.java, testEarlyNoGracePeriodLargeInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testEarlyNoGracePeriodLargeInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingNoGraceLarge(t, true, 0,
			"[E@0/10]:0+1+3+4+2@6", "[E@1/11]:0+3+4+2@6", "[E@3/13]:0+3+4+2+6+5+7@13", "[E@4/14]:0+3+4+6+5+7@13")
	}},
	// KStreamSlidingWindowAggregateTest.java, testNoGracePeriodLargeInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testNoGracePeriodLargeInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingNoGraceLarge(t, false, 100,
			"[E@90/100]:0+1@100", "[E@95/105]:0+1+3@105", "[E@96/106]:0+1+3+4@106", "[E@96/106]:0+1+3+4+2@106",
			"[E@101/111]:0+3@105", "[E@101/111]:0+3+4@106", "[E@101/111]:0+3+4+2@106",
			"[E@103/113]:0+3+4+2+6@113", "[E@103/113]:0+3+4+2+6+5@113", "[E@103/113]:0+3+4+2+6+5+7@113",
			"[E@104/114]:0+3+4@106", "[E@104/114]:0+3+4+6@113", "[E@104/114]:0+3+4+6+5@113", "[E@104/114]:0+3+4+6+5+7@113",
			"[E@105/115]:0+3+4+6+5@113", "[E@105/115]:0+3+4+6+5+9@115",
			"[E@106/116]:0+4@106", "[E@106/116]:0+4+6@113", "[E@106/116]:0+4+6+5@113", "[E@106/116]:0+4+6+5+9@115",
			"[E@107/117]:0+6@113", "[E@107/117]:0+6+5@113", "[E@107/117]:0+6+5+9@115",
			"[E@111/121]:0+6@113", "[E@111/121]:0+6+9@115", "[E@114/124]:0+9@115")
	}},
	// KStreamSlidingWindowAggregateTest.java, testNoGracePeriodLargeInput, final.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testNoGracePeriodLargeInput/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		slidingNoGraceLarge(t, true, 100,
			"[E@90/100]:0+1@100", "[E@95/105]:0+1+3@105", "[E@96/106]:0+1+3+4+2@106",
			"[E@101/111]:0+3+4+2@106", "[E@103/113]:0+3+4+2+6+5+7@113", "[E@104/114]:0+3+4+6+5+7@113")
	}},
)

// slidingRandomExpected is what testAggregateRandomInput expects as the
// last result of each window start, emitting updates.
var slidingRandomExpected = []string{
	"0:ARSTU@10", "3:ASTU@10", "4:ATU@10", "5:ABTU@15", "6:ABCU@16", "8:ABCDU@18", "9:ABCD@18",
	"11:BCD@18", "16:CD@18", "17:D@18", "20:E@30", "30:EF@40", "31:F@40", "45:G@55", "46:GH@56",
	"48:GHIJ@58", "52:GHIJK@62", "53:GHIJKLMN@63", "56:HIJKLMN@63", "57:IJKLMN@63", "59:KLMN@63",
	"63:LMN@63", "66:O@76", "67:OP@77", "70:OPQ@80", "77:PQ@80", "78:Q@80", "171:V@181",
}

// slidingRandom is testAggregateRandomInput with the input shuffled by
// seed: windows of 10ms with 100ms of grace aggregating letters sorted,
// so that every order gives the same windows; the last record, V@181,
// closes them all.
func slidingRandom(t *testing.T, final bool, seed int64, cached bool) []string {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Sliding(10*windowsMs, 100*windowsMs)).Emit(windowsEmit(final)).
		Aggregate(func() (any, error) { return "", nil }, func(_, value, agg any) (any, error) {
			letters := []byte(kafkaString(agg) + kafkaString(value))
			slices.Sort(letters)
			return string(letters), nil
		}, windowsStore("", cached))
	w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
	in := []string{"A:A@10", "A:B@15", "A:C@16", "A:D@18", "A:E@30", "A:F@40", "A:G@55", "A:H@56",
		"A:I@58", "A:J@58", "A:K@62", "A:L@63", "A:M@63", "A:N@63", "A:O@76", "A:P@77", "A:Q@80",
		"A:R@2", "A:S@3", "A:T@5", "A:U@8"}
	rand.New(rand.NewSource(seed)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	w.in(append(in, "A:V@181")...)
	last := make(map[string]string)
	for _, line := range w.read(windowsOut, w.keySerde, w.valueSerde) {
		start, _, _ := strings.Cut(strings.TrimPrefix(line, "[A@"), "/")
		_, result, _ := strings.Cut(line, "]:")
		last[start] = start + ":" + result
	}
	got := slices.Collect(maps.Values(last))
	slices.SortFunc(got, func(a, b string) int { return cmp.Compare(slidingStartOf(a), slidingStartOf(b)) })
	return got
}

// slidingStartOf returns the window start a "start:value@ts" line begins
// with.
func slidingStartOf(line string) int64 {
	start, _, _ := strings.Cut(line, ":")
	n, _ := strconv.ParseInt(start, 10, 64)
	return n
}

// slidingRandomRun runs slidingRandom for a few fixed seeds (Kafka's test
// draws one at random), cached and not, and compares with want.
func slidingRandomRun(t *testing.T, final bool, want []string) {
	for seed := int64(1); seed <= 5; seed++ {
		windowsCaches(t, func(t *testing.T, cached bool) {
			if got := slidingRandom(t, final, seed, cached); !slices.Equal(got, want) {
				t.Errorf("seed %d: last result per window start:\n got  %s\n want %s", seed, kafkaLines(got), kafkaLines(want))
			}
		})
	}
}

var _ = port(
	// KStreamSlidingWindowAggregateTest.java, testAggregateRandomInput.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateRandomInput/emit-update", Area: "sliding", Run: func(t *testing.T) {
		slidingRandomRun(t, false, slidingRandomExpected)
	}},
	// KStreamSlidingWindowAggregateTest.java, testAggregateRandomInput,
	// final: the jump of stream time to 181 closes every window ending by
	// 80. Kafka Streams emits only those its store still holds (starts 52
	// to 70); Braid emits every window the jump closes, from 0.
	kafkaCase{Kafka: "KStreamSlidingWindowAggregateTest.testAggregateRandomInput/emit-final", Area: "emit-final", Differs: "Windows closed by a jump", Run: func(t *testing.T) {
		slidingRandomRun(t, true, slidingRandomExpected[:len(slidingRandomExpected)-3])
	}},
)
