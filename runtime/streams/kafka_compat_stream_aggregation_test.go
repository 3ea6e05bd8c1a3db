package streams_test

// The port of Kafka Streams' KGroupedStreamImplTest: aggregations of a
// grouped stream, plain and over session windows (its time and sliding
// window tests are in the tumbling and sliding files). A plain Count,
// Reduce or Aggregate skips a record with a null key or value, counts it
// as skipped and reports it, as Kafka Streams logs it and meters it.

import (
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// streamAggData is KGroupedStreamImplTest.processData: its last
// record, at offset 6, has a null value.
var streamAggData = []string{"1:A@5", "2:B@1", "1:C@3", "1:D@10", "3:E@8", "3:F@9", "3:null@9"}

// streamAggSessionData is the input of KGroupedStreamImplTest's session
// tests: 1@90 falls inside the session [70,100].
var streamAggSessionData = []string{"1:1@10", "2:2@15", "1:1@30", "1:1@70", "1:1@100", "1:1@90"}

// streamAggSession runs an aggregation over sessions of 30ms gap without
// grace and compares the last result of each session with want.
func streamAggSession(t *testing.T, valueSerde streams.Serde, in []string, agg func(*streams.WindowedStream) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	w := newWindowsDriver(t, b, agg(g.WindowedBy(streams.Sessions(30*windowsMs, 0))), sessionKeys, valueSerde)
	w.in(in...)
	w.expectLast(want...)
}

// streamAggMaterialized runs a plain aggregation into store "store" and
// compares its rows for keys 1, 2 and 3, and the last change of each
// key with its timestamp, with want ("key:value@ts").
func streamAggMaterialized(t *testing.T, valueSerde streams.Serde, agg func(*streams.GroupedStream, streams.Option) *streams.Table, want ...string) {
	b, g := windowsGrouped()
	table := agg(g, windowsStore("store", true))
	w := newWindowsDriver(t, b, table, streams.String, valueSerde)
	w.in(streamAggData...)
	w.expectLast(want...)
	var got []string
	for _, key := range []string{"1", "2", "3"} {
		v, ok, err := w.d.Get("store", key)
		if err != nil || !ok {
			t.Fatalf("getting %q from the store: %v, found %v", key, err, ok)
		}
		got = append(got, key+":"+kafkaString(v))
	}
	for i, line := range want {
		if kv := line[:strings.LastIndex(line, "@")]; got[i] != kv {
			t.Errorf("store row %s, want %s", got[i], kv)
		}
	}
}

// streamAggSessionAggregate is KGroupedStreamImplTest's session
// aggregate into store ("" generates a name).
func streamAggSessionAggregate(t *testing.T, store string) {
	streamAggSession(t, streams.Int64, streamAggSessionData, func(ws *streams.WindowedStream) *streams.Table {
		return ws.MergeSessionsWith(func(_, a, b any) (any, error) { return a.(int64) + b.(int64), nil }).
			Aggregate(func() (any, error) { return int64(0), nil },
				func(_, _, agg any) (any, error) { return agg.(int64) + 1, nil },
				streams.Materialized(streams.StoreOptions{Name: store, ValueSerde: streams.Int64}))
	}, "[1@10/30]:2@30", "[2@15/15]:1@15", "[1@70/100]:3@100")
}

// streamAggSessionCount is KGroupedStreamImplTest's session count.
func streamAggSessionCount(t *testing.T, store string) {
	streamAggSession(t, streams.Int64, streamAggSessionData, func(ws *streams.WindowedStream) *streams.Table {
		return ws.Count(windowsStore(store, true))
	}, "[1@10/30]:2@30", "[2@15/15]:1@15", "[1@70/100]:3@100")
}

// streamAggSessionReduce is KGroupedStreamImplTest's session reduce.
func streamAggSessionReduce(t *testing.T, store string) {
	streamAggSession(t, streams.String, []string{"1:A@10", "2:Z@15", "1:B@30", "1:A@70", "1:B@100", "1:C@90"},
		func(ws *streams.WindowedStream) *streams.Table {
			return ws.Reduce(func(a, b any) (any, error) { return a.(string) + ":" + b.(string), nil },
				windowsStore(store, true))
		}, "[1@10/30]:A:B@30", "[2@15/15]:Z@15", "[1@70/100]:A:B:C@100")
}

func streamAggCount(g *streams.GroupedStream, store streams.Option) *streams.Table {
	return g.Count(store)
}

func streamAggReduce(g *streams.GroupedStream, store streams.Option) *streams.Table {
	return g.Reduce(windowsStringAdd, store)
}

func streamAggAggregate(g *streams.GroupedStream, store streams.Option) *streams.Table {
	return g.Aggregate(windowsStringInit, windowsToStringAdder("+"), store)
}

// streamAggSkips runs agg over KGroupedStreamImplTest.processData and checks
// that exactly the record with the null value, offset 6, was skipped.
func streamAggSkips(t *testing.T, agg func(*streams.GroupedStream, streams.Option) *streams.Table) {
	b, g := windowsGrouped()
	agg(g, windowsStore("store", true))
	skips := &windowsSkips{}
	w := newWindowsDriver(t, b, nil, nil, nil, skips)
	w.in(streamAggData...)
	w.expectSkips(skips, streams.ErrNullValue, 6)
}

var _ = port(
	// KGroupedStreamImplTest.java, shouldAggregateSessionWindows.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldAggregateSessionWindows", Area: "session", Run: func(t *testing.T) {
		streamAggSessionAggregate(t, "session-store")
	}},
	// KGroupedStreamImplTest.java, shouldAggregateSessionWindowsWithInternalStoreName.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldAggregateSessionWindowsWithInternalStoreName", Area: "session", Run: func(t *testing.T) {
		streamAggSessionAggregate(t, "")
	}},
	// KGroupedStreamImplTest.java, shouldCountSessionWindows.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountSessionWindows", Area: "session", Run: func(t *testing.T) {
		streamAggSessionCount(t, "session-store")
	}},
	// KGroupedStreamImplTest.java, shouldCountSessionWindowsWithInternalStoreName.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountSessionWindowsWithInternalStoreName", Area: "session", Run: func(t *testing.T) {
		streamAggSessionCount(t, "")
	}},
	// KGroupedStreamImplTest.java, shouldReduceSessionWindows: merging
	// [70,70] and [100,100] for 1:C@90 reduces their values in time order.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldReduceSessionWindows", Area: "session", Run: func(t *testing.T) {
		streamAggSessionReduce(t, "session-store")
	}},
	// KGroupedStreamImplTest.java, shouldReduceSessionWindowsWithInternalStoreName.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldReduceSessionWindowsWithInternalStoreName", Area: "session", Run: func(t *testing.T) {
		streamAggSessionReduce(t, "")
	}},
	// KGroupedStreamImplTest.java, shouldCountAndMaterializeResults: the
	// null value is not counted.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldCountAndMaterializeResults", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggMaterialized(t, streams.Int64, streamAggCount, "1:3@10", "2:1@1", "3:2@9")
	}},
	// KGroupedStreamImplTest.java, shouldLogAndMeasureSkipsInAggregate.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldLogAndMeasureSkipsInAggregate", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggSkips(t, streamAggCount)
	}},
	// KGroupedStreamImplTest.java, shouldReduceAndMaterializeResults.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldReduceAndMaterializeResults", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggMaterialized(t, streams.String, streamAggReduce, "1:A+C+D@10", "2:B@1", "3:E+F@9")
	}},
	// KGroupedStreamImplTest.java, shouldLogAndMeasureSkipsInReduce.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldLogAndMeasureSkipsInReduce", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggSkips(t, streamAggReduce)
	}},
	// KGroupedStreamImplTest.java, shouldAggregateAndMaterializeResults.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldAggregateAndMaterializeResults", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggMaterialized(t, streams.String, streamAggAggregate, "1:0+A+C+D@10", "2:0+B@1", "3:0+E+F@9")
	}},
	// KGroupedStreamImplTest.java, shouldAggregateWithDefaultSerdes: the
	// store's value serde is the configured default.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldAggregateWithDefaultSerdes", Area: "stream-aggregation", Run: func(t *testing.T) {
		b, g := windowsGrouped()
		g.Aggregate(windowsStringInit, windowsToStringAdder("+")).ToStream().To(windowsOut)
		k := newKafkaDriver(t, b, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
		w := &windowsDriver{kafkaDriver: k, keySerde: streams.String, valueSerde: streams.String}
		w.in(streamAggData...)
		w.expectLast("1:0+A+C+D@10", "2:0+B@1", "3:0+E+F@9")
	}},
)

// streamAggBuildFails builds what topology makes and wants Build to refuse
// it with an error containing want: Kafka's DSL throws at once for a null
// function or windows, Braid's Builder reports them at Build.
func streamAggBuildFails(t *testing.T, want string, topology func(g *streams.GroupedStream)) {
	t.Helper()
	b, g := windowsGrouped()
	topology(g)
	_, err := b.Build()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build: %v, want an error saying %q", err, want)
	}
}

// The nil functions of each kind, as the Java tests pass null.
var (
	streamAggNilInit    streams.Initializer
	streamAggNilAgg     streams.Aggregator
	streamAggNilReducer streams.Reducer
	streamAggNilMerger  streams.Merger
)

var _ = port(
	// KGroupedStreamImplTest.java, shouldNotHaveNullReducerOnReduce.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullReducerOnReduce", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Reduce: the function is nil", func(g *streams.GroupedStream) { g.Reduce(streamAggNilReducer) })
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullInitializerOnAggregate.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullInitializerOnAggregate", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Aggregate: the function is nil", func(g *streams.GroupedStream) { g.Aggregate(streamAggNilInit, windowsToStringAdder("+")) })
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullAdderOnAggregate.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullAdderOnAggregate", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Aggregate: the function is nil", func(g *streams.GroupedStream) { g.Aggregate(windowsStringInit, streamAggNilAgg) })
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullWindowsWithWindowedReduce.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullWindowsWithWindowedReduce", Area: "stream-aggregation", Run: func(t *testing.T) {
		streamAggBuildFails(t, "WindowedBy: the windows are nil", func(g *streams.GroupedStream) { g.WindowedBy(nil).Reduce(windowsStringAdd) })
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullReducerWithWindowedReduce.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullReducerWithWindowedReduce", Area: "tumbling", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Reduce: the function is nil", func(g *streams.GroupedStream) {
			g.WindowedBy(streams.Tumbling(10*windowsMs, 0)).Reduce(streamAggNilReducer)
		})
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullInitializerOnWindowedAggregate.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullInitializerOnWindowedAggregate", Area: "tumbling", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Aggregate: the function is nil", func(g *streams.GroupedStream) {
			g.WindowedBy(streams.Tumbling(10*windowsMs, 0)).Aggregate(streamAggNilInit, windowsToStringAdder("+"))
		})
	}},
	// KGroupedStreamImplTest.java, shouldNotHaveNullAdderOnSlidingWindowedAggregate.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotHaveNullAdderOnSlidingWindowedAggregate", Area: "sliding", Run: func(t *testing.T) {
		streamAggBuildFails(t, "Aggregate: the function is nil", func(g *streams.GroupedStream) {
			g.WindowedBy(streams.Sliding(10*windowsMs, 0)).Aggregate(windowsStringInit, streamAggNilAgg)
		})
	}},
	// KGroupedStreamImplTest.java, shouldNotAcceptNullSessionMergerWhenAggregatingSessionWindows.
	kafkaCase{Kafka: "KGroupedStreamImplTest.shouldNotAcceptNullSessionMergerWhenAggregatingSessionWindows", Area: "session", Run: func(t *testing.T) {
		streamAggBuildFails(t, "no Merger", func(g *streams.GroupedStream) {
			g.WindowedBy(streams.Sessions(10*windowsMs, 0)).MergeSessionsWith(streamAggNilMerger).Aggregate(windowsStringInit, windowsToStringAdder("+"))
		})
	}},
	// SlidingWindowedKStreamImplTest.java, shouldThrowIllegalArgumentWhenRetentionIsTooSmall:
	// a retention of 1ms is shorter than windows of 100ms with 1s of grace
	// stay open.
	kafkaCase{Kafka: "SlidingWindowedKStreamImplTest.shouldThrowIllegalArgumentWhenRetentionIsTooSmall", Area: "sliding", Run: func(t *testing.T) {
		streamAggBuildFails(t, "is shorter than the windows stay open", func(g *streams.GroupedStream) {
			g.WindowedBy(streams.Sliding(100*windowsMs, 1000*windowsMs)).Aggregate(windowsStringInit, windowsToStringAdder("+"),
				streams.Materialized(streams.StoreOptions{Name: "aggregated", Retention: 1 * windowsMs}))
		})
	}},
)
