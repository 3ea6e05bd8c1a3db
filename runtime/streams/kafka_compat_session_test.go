package streams_test

// The port of Kafka Streams' tests of session windows:
// SessionWindowedKStreamImplTest, KStreamSessionWindowAggregateProcessorTest
// (through the DSL, which builds the same processor) and the session
// tests of KGroupedStreamImplTest. A session's results carry its end as
// their timestamp, and a session a record replaces (merged into a larger
// one, or the one it falls inside of) is deleted with a tombstone first.

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

var sessionKeys = streams.SessionWindowedSerde(streams.String)

// sessionImplData is SessionWindowedKStreamImplTest.processData.
var sessionImplData = []string{"1:1@10", "1:2@15", "1:3@600", "2:1@600", "2:2@599"}

// sessionImpl runs one of SessionWindowedKStreamImplTest's aggregations
// over sessions of 500ms gap without grace, cached and not, and compares
// the results with want.
func sessionImpl(t *testing.T, final bool, valueSerde streams.Serde, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		ws := g.WindowedBy(streams.Sessions(500*windowsMs, 0)).Emit(windowsEmit(final)).MergeSessionsWith(windowsSessionMerger)
		w := newWindowsDriver(t, b, agg(ws, windowsStore("", cached)), sessionKeys, valueSerde)
		w.in(sessionImplData...)
		w.expectOut(want...)
	})
}

// sessionMaterialized runs an aggregation of SessionWindowedKStreamImplTest's
// shouldMaterialize* tests and fetches keys 1 and 2 from its store.
func sessionMaterialized(t *testing.T, agg func(*streams.WindowedStream, streams.Option) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	ws := g.WindowedBy(streams.Sessions(500*windowsMs, 0)).Emit(streams.EmitOnWindowClose).MergeSessionsWith(windowsSessionMerger)
	agg(ws, windowsStore("store", true))
	w := newWindowsDriver(t, b, nil, nil, nil)
	w.in(sessionImplData...)
	got := append(windowsFetch(w, "store", "1", 0, 1<<40), windowsFetch(w, "store", "2", 0, 1<<40)...)
	if !slices.Equal(got, want) {
		t.Errorf("store:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
	}
}

// sessionGap is KStreamSessionWindowAggregateProcessorTest's GAP_MS.
const sessionGap = 5 * time.Minute

// sessionGapMs is sessionGap in milliseconds, for timestamps.
const sessionGapMs = int64(sessionGap / time.Millisecond)

// sessionProcessor builds KStreamSessionWindowAggregateProcessorTest's
// processor: sessions of 5 minutes' gap without grace counting records
// with an initializer, aggregator and merger of its own, the store's
// logging off and its cache as given.
func sessionProcessor(t *testing.T, final, cached bool, gap, grace time.Duration, hooks ...streams.Hook) *windowsDriver {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Sessions(gap, grace)).Emit(windowsEmit(final)).
		MergeSessionsWith(func(_, a, b any) (any, error) { return a.(int64) + b.(int64), nil }).
		Aggregate(func() (any, error) { return int64(0), nil },
			func(_, _, agg any) (any, error) { return agg.(int64) + 1, nil },
			streams.Materialized(streams.StoreOptions{
				Name: "session-store", ValueSerde: streams.Int64, LoggingDisabled: true, CachingDisabled: !cached,
				Retention: 3 * gap,
			}))
	return newWindowsDriver(t, b, table, sessionKeys, streams.Int64, hooks...)
}

// sessionAt formats input key:value@ts for a timestamp in milliseconds.
func sessionAt(key, value string, ts int64) string {
	return key + ":" + value + "@" + windowsItoa(ts)
}

func windowsItoa(n int64) string { return strconv.FormatInt(n, 10) }

// sessionOut formats an output "[key@start/end]:value@end".
func sessionOut(key string, start, end int64, value string) string {
	return "[" + key + "@" + windowsItoa(start) + "/" + windowsItoa(end) + "]:" + value + "@" + windowsItoa(end)
}

var _ = port(
	// SessionWindowedKStreamImplTest.java, shouldCountSessionWindowedWithCachingDisabled:
	// 1@15 replaces [10,10] (a tombstone, at the session's end) with
	// [10,15]; 2@599 replaces [600,600] with [599,600].
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingDisabled/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionCount(t, false, false)
	}},
	// SessionWindowedKStreamImplTest.java, shouldCountSessionWindowedWithCachingDisabled,
	// final: stream time 600 closes [10,15] (end + gap < 600).
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingDisabled/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionCount(t, true, false)
	}},
	// SessionWindowedKStreamImplTest.java, shouldCountSessionWindowedWithCachingEnabled:
	// the same, the tombstone and the new session being different rows.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingEnabled/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionCount(t, false, true)
	}},
	// SessionWindowedKStreamImplTest.java, shouldCountSessionWindowedWithCachingEnabled, final.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldCountSessionWindowedWithCachingEnabled/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionCount(t, true, true)
	}},
	// SessionWindowedKStreamImplTest.java, shouldReduceWindowed.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldReduceWindowed/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionImpl(t, false, streams.String, sessionReduce,
			"[1@10/10]:1@10", "[1@10/10]:null@10", "[1@10/15]:1+2@15", "[1@600/600]:3@600",
			"[2@600/600]:1@600", "[2@600/600]:null@600", "[2@599/600]:1+2@600")
	}},
	// SessionWindowedKStreamImplTest.java, shouldReduceWindowed, final.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldReduceWindowed/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionImpl(t, true, streams.String, sessionReduce, "[1@10/15]:1+2@15")
	}},
	// SessionWindowedKStreamImplTest.java, shouldAggregateSessionWindowed:
	// a merge starts from the initializer's aggregate, so "0" merged with
	// "0+1" before "+2" is added.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldAggregateSessionWindowed/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionImpl(t, false, streams.String, sessionAggregate,
			"[1@10/10]:0+1@10", "[1@10/10]:null@10", "[1@10/15]:0+0+1+2@15", "[1@600/600]:0+3@600",
			"[2@600/600]:0+1@600", "[2@600/600]:null@600", "[2@599/600]:0+0+1+2@600")
	}},
	// SessionWindowedKStreamImplTest.java, shouldAggregateSessionWindowed, final.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldAggregateSessionWindowed/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionImpl(t, true, streams.String, sessionAggregate, "[1@10/15]:0+0+1+2@15")
	}},
	// SessionWindowedKStreamImplTest.java, shouldMaterializeCount, final:
	// [10,15] is past the store's retention (gap + grace) at stream time
	// 600. (Kafka's store that emits updates keeps it until its segment
	// goes.)
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldMaterializeCount/emit-final", Area: "session", Run: func(t *testing.T) {
		sessionMaterialized(t, sessionCountAgg, "[1@600/600]:1@600", "[2@599/600]:2@600")
	}},
	// SessionWindowedKStreamImplTest.java, shouldMaterializeReduced, final.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldMaterializeReduced/emit-final", Area: "session", Run: func(t *testing.T) {
		sessionMaterialized(t, sessionReduce, "[1@600/600]:3@600", "[2@599/600]:1+2@600")
	}},
	// SessionWindowedKStreamImplTest.java, shouldMaterializeAggregated, final.
	kafkaCase{Kafka: "SessionWindowedKStreamImplTest.shouldMaterializeAggregated/emit-final", Area: "session", Run: func(t *testing.T) {
		sessionMaterialized(t, sessionAggregate, "[1@600/600]:0+3@600", "[2@599/600]:0+0+1+2@600")
	}},
)

func sessionCountAgg(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Count(store)
}

func sessionReduce(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Reduce(windowsStringAdd, store)
}

func sessionAggregate(ws *streams.WindowedStream, store streams.Option) *streams.Table {
	return ws.Aggregate(windowsStringInit, windowsToStringAdder("+"), store)
}

// sessionCount is SessionWindowedKStreamImplTest.shouldCountSessionWindowed
// with the cache as given.
func sessionCount(t *testing.T, final, cached bool) {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Sessions(500*windowsMs, 0)).Emit(windowsEmit(final)).Count(windowsStore("", cached))
	w := newWindowsDriver(t, b, table, sessionKeys, streams.Int64)
	w.in(sessionImplData...)
	if final {
		w.expectOut("[1@10/15]:2@15")
		return
	}
	w.expectOut("[1@10/10]:1@10", "[1@10/10]:null@10", "[1@10/15]:2@15", "[1@600/600]:1@600",
		"[2@600/600]:1@600", "[2@600/600]:null@600", "[2@599/600]:2@600")
}

var _ = port(
	// KStreamSessionWindowAggregateProcessorTest.java, shouldCreateSingleSessionWhenWithinGap.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldCreateSingleSessionWhenWithinGap", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, true, sessionGap, 0)
		w.inNoCommit("john:first@0", "john:second@500")
		w.expectWindows("session-store", "john", 0, 2000, sessionOut("john", 0, 500, "2"))
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldMergeSessions:
	// a record between two sessions within the gap of both merges them.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldMergeSessions", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, true, sessionGap, 0)
		w.inNoCommit(sessionAt("mel", "first", 0), sessionAt("mel", "second", sessionGapMs+1))
		w.expectWindows("session-store", "mel", 0, sessionGapMs+1,
			sessionOut("mel", 0, 0, "1"), sessionOut("mel", sessionGapMs+1, sessionGapMs+1, "1"))
		w.inNoCommit(sessionAt("mel", "third", sessionGapMs/2))
		w.expectWindows("session-store", "mel", 0, sessionGapMs+1, sessionOut("mel", 0, sessionGapMs+1, "3"))
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldUpdateSessionIfTheSameTime.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldUpdateSessionIfTheSameTime", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, true, sessionGap, 0)
		w.inNoCommit("mel:first@0", "mel:second@0")
		w.expectWindows("session-store", "mel", 0, 0, sessionOut("mel", 0, 0, "2"))
	}},
	// KStreamSessionWindowAggregateProcessorTest.java,
	// shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap: the
	// cache flushed once, at the end, sends each session's last value.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionApartByGap(t, false)
	}},
	// KStreamSessionWindowAggregateProcessorTest.java,
	// shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap,
	// final: the last session is still open.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionApartByGap(t, true)
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldRemoveMergedSessionsFromStateStore.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldRemoveMergedSessionsFromStateStore", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, true, sessionGap, 0)
		w.inNoCommit("a:1@0")
		w.expectWindows("session-store", "a", 0, 0, sessionOut("a", 0, 0, "1"))
		w.inNoCommit("a:2@100")
		w.expectWindows("session-store", "a", 0, 100, sessionOut("a", 0, 100, "2"))
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldHandleMultipleSessionsAndMerging:
	// sessions created and merged away between two flushes of the cache
	// are never sent, nor their tombstones.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging/emit-update", Area: "session", Run: func(t *testing.T) {
		sessionMultipleMerging(t, false)
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldHandleMultipleSessionsAndMerging, final.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		sessionMultipleMerging(t, true)
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldGetAggregatedValuesFromValueGetter
	// (the value getter reads the store, as FetchWindows does).
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldGetAggregatedValuesFromValueGetter", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, true, sessionGap, 0)
		g := sessionGapMs + 1
		w.inNoCommit("a:1@0", sessionAt("a", "1", g), sessionAt("a", "2", g))
		w.expectWindows("session-store", "a", 0, g, sessionOut("a", 0, 0, "1"), sessionOut("a", g, g, "2"))
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldImmediatelyForwardNewSessionWhenNonCachedStore.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldImmediatelyForwardNewSessionWhenNonCachedStore", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, false, sessionGap, 0)
		w.inNoCommit("a:1@0", "b:1@0", "c:1@0")
		w.expectOut("[a@0/0]:1@0", "[b@0/0]:1@0", "[c@0/0]:1@0")
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldImmediatelyForwardRemovedSessionsWhenMerging.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldImmediatelyForwardRemovedSessionsWhenMerging", Area: "session", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, false, sessionGap, 0)
		w.inNoCommit("a:1@0", "a:1@5")
		w.expectOut("[a@0/0]:1@0", "[a@0/0]:null@0", "[a@0/5]:2@5")
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldLogAndMeterWhenSkippingNullKeyWithBuiltInMetrics.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingNullKeyWithBuiltInMetrics", Area: "session", Run: func(t *testing.T) {
		for _, final := range []bool{false, true} {
			t.Run(windowsEmit(final).String(), func(t *testing.T) {
				skips := &windowsSkips{}
				w := sessionProcessor(t, final, false, sessionGap, 0, skips)
				w.inNoCommit("null:1@0")
				w.expectSkips(skips, streams.ErrNullKey, 0)
			})
		}
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldLogAndMeterWhenSkippingLateRecordWithZeroGrace:
	// gap 10ms, no grace: at stream time 11 the session [0,0] has closed.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingLateRecordWithZeroGrace", Area: "grace", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, false, 10*windowsMs, 0)
		w.inNoCommit("dummy:dummy@0", "OnTime1:1@0", "dummy:dummy@11", "Late1:1@0")
		if n := w.lateDrops(); n != 1 {
			t.Errorf("late drops: %d, want 1", n)
		}
	}},
	// KStreamSessionWindowAggregateProcessorTest.java, shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace:
	// 1ms of grace keeps [0,0] open at stream time 11, not at 12.
	kafkaCase{Kafka: "KStreamSessionWindowAggregateProcessorTest.shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace", Area: "grace", Run: func(t *testing.T) {
		w := sessionProcessor(t, false, false, 10*windowsMs, 1*windowsMs)
		w.inNoCommit("dummy:dummy@0", "OnTime1:1@0", "dummy:dummy@11", "OnTime2:1@0", "dummy:dummy@12", "Late1:1@0")
		if n := w.lateDrops(); n != 1 {
			t.Errorf("late drops: %d, want 1", n)
		}
	}},
)

// sessionApartByGap is shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap.
func sessionApartByGap(t *testing.T, final bool) {
	w := sessionProcessor(t, final, !final, sessionGap, 0)
	g := sessionGapMs + 1
	w.inNoCommit(sessionAt("mel", "first", 0),
		sessionAt("mel", "second", g), sessionAt("mel", "second", g),
		sessionAt("mel", "third", 2*g), sessionAt("mel", "third", 2*g), sessionAt("mel", "third", 2*g))
	w.commit()
	want := []string{sessionOut("mel", 0, 0, "1"), sessionOut("mel", g, g, "2")}
	if !final {
		want = append(want, sessionOut("mel", 2*g, 2*g, "3"))
	}
	w.expectOut(want...)
}

// sessionMultipleMerging is shouldHandleMultipleSessionsAndMerging.
func sessionMultipleMerging(t *testing.T, final bool) {
	w := sessionProcessor(t, final, !final, sessionGap, 0)
	g, half := sessionGapMs+1, sessionGapMs/2
	w.inNoCommit("a:1@0", "b:1@0", "c:1@0", "d:1@0", sessionAt("d", "2", half),
		sessionAt("a", "2", g), sessionAt("b", "2", g), sessionAt("a", "3", g+half), sessionAt("c", "3", g+half))
	w.commit()
	want := []string{sessionOut("a", 0, 0, "1"), sessionOut("b", 0, 0, "1"), sessionOut("c", 0, 0, "1"), sessionOut("d", 0, half, "2")}
	if !final {
		want = append(want, sessionOut("b", g, g, "1"), sessionOut("a", g, g+half, "2"), sessionOut("c", g+half, g+half, "1"))
	}
	w.expectOut(want...)
}
