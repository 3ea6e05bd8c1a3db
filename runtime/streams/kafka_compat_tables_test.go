package streams_test

// The table part of the Kafka Streams port: table sources, Filter and
// MapValues of tables, table aggregations (GroupedTable) and table-table
// joins, with the row timestamps of Kafka Streams' timestamped key-value
// stores (KIP-258). Helpers are prefixed "tables".

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// tablesStrings are the serdes of most cases: string keys and values.
var tablesStrings = streams.WithSerdes(streams.String, streams.String)

// tablesConcat is Kafka's MockAggregator.TOSTRING_ADDER: agg+value.
func tablesConcat(_, value, agg any) (any, error) { return agg.(string) + "+" + value.(string), nil }

// tablesZero is Kafka's MockInitializer.STRING_INIT.
func tablesZero() (any, error) { return "0", nil }

// tablesNoCache is a store without a record cache, as Kafka's tests turn
// caching off, so that every update is forwarded.
func tablesNoCache(name string) streams.Option {
	return streams.Materialized(streams.StoreOptions{Name: name, CachingDisabled: true})
}

// tablesProcess is Kafka's toStream().process(supplier): the table's
// changes go to a stream named node, whose taps the case reads (a node
// shows its records as it forwards them, so it gets a child).
func tablesProcess(tb *streams.Table, node string) {
	tb.ToStream(streams.Named(node)).Peek(func(_, _ any) {})
}

// tablesTapsOf is expectTaps for node that keeps the other nodes' taps.
func (k *kafkaDriver) tablesTapsOf(node string, want ...string) {
	k.t.Helper()
	var others []string
	for _, line := range k.taps {
		if name, _, _ := strings.Cut(line, " "); name != node {
			others = append(others, line)
		}
	}
	k.expectTaps(node, want...)
	k.taps = others
}

// tablesStreamTaps is expectTaps for a stream node (ToStream), whose
// records Kafka's processors see without the old values: the "<-old"
// part of each tap is dropped.
func (k *kafkaDriver) tablesStreamTaps(node string, want ...string) {
	k.t.Helper()
	var kept []string
	for _, line := range k.taps {
		if name, _, _ := strings.Cut(line, " "); name == node {
			if i := strings.Index(line, "<-"); i >= 0 {
				line = line[:i]
			}
		}
		kept = append(kept, line)
	}
	k.taps = kept
	k.expectTaps(node, want...)
}

// tablesPipe pipes records given as key, value, timestamp triples (key
// and value a string or nil) and commits after each, as a
// TopologyTestDriver does: a cached store then forwards one update per
// key and piped record, as Kafka Streams' caches do.
func (k *kafkaDriver) tablesPipe(topic string, recs ...any) {
	k.t.Helper()
	for i := 0; i+2 < len(recs); i += 3 {
		k.pipe(topic, recs[i], recs[i+1], int64(recs[i+2].(int)))
		k.commit()
	}
}

// tablesCachedOrNot runs a case with the aggregation's store cached and
// not: an update that stays under its key gives one result either way,
// as in Kafka Streams.
func tablesCachedOrNot(t *testing.T, run func(t *testing.T, cachingDisabled bool)) {
	t.Run("cached", func(t *testing.T) { run(t, false) })
	t.Run("uncached", func(t *testing.T) { run(t, true) })
}

// tablesJoiner is Kafka's MockValueJoiner.TOSTRING_JOINER: left+right,
// a missing side printed as null.
func tablesJoiner(_, left, right any) (any, error) {
	return kafkaString(left) + "+" + kafkaString(right), nil
}

// tablesRemove is Kafka's MockAggregator.TOSTRING_REMOVER: agg-value.
func tablesRemove(_, value, agg any) (any, error) { return agg.(string) + "-" + value.(string), nil }

// tablesExpectRow asserts a store row and its timestamp, as Kafka's
// tests read driver.getTimestampedKeyValueStore.
func (k *kafkaDriver) tablesExpectRow(store string, key any, value any, ts int64) {
	k.t.Helper()
	row, found, err := k.d.GetWithTimestamp(store, key)
	if err != nil || !found {
		k.t.Fatalf("store %s, key %v: found %v, err %v", store, key, found, err)
	}
	if got, want := fmt.Sprintf("%v@%d", row.Value, row.Timestamp), fmt.Sprintf("%v@%d", value, ts); got != want {
		k.t.Errorf("store %s, key %v: got %s, want %s", store, key, got, want)
	}
	if v, _, _ := k.d.Get(store, key); v != row.Value {
		k.t.Errorf("store %s, key %v: Get gives %v, GetWithTimestamp %v", store, key, v, row.Value)
	}
}

// tablesInts parses an int64 from the piped string values that stand for
// Kafka's Integer and Double values; mapped values are int64.
func tablesInt(v any) int64 {
	f, err := strconv.ParseFloat(v.(string), 64)
	if err != nil {
		panic(err)
	}
	return int64(f)
}

// tablesJoinCase is the testJoin of KTableKTable{Inner,Left,Outer}JoinTest:
// the same records through a join of two source tables, the results read
// from the output topic. want holds the results expected after each step.
func tablesJoinCase(t *testing.T, join func(a, b *streams.Table) *streams.Table, want [][]string) {
	b := streams.NewBuilder()
	t1 := b.Table("topic1", tablesStrings)
	t2 := b.Table("topic2", tablesStrings)
	join(t1, t2).To("output", tablesStrings)
	k := newKafkaDriver(t, b, streams.DriverConfig{})
	step := 0
	expect := func() {
		t.Helper()
		k.expect("output", streams.String, streams.String, want[step]...)
		step++
	}
	keys := []string{"0", "1", "2", "3"}
	k.tablesPipe("topic1", "0", "X0", 5, "1", "X1", 6, nil, "SomeVal", 42)
	expect()
	k.tablesPipe("topic2", "0", "Y0", 0, "1", "Y1", 10, nil, "AnotherVal", 73)
	expect()
	for _, key := range keys {
		k.tablesPipe("topic1", key, "XX"+key, 7)
	}
	expect()
	for i, key := range keys {
		k.tablesPipe("topic2", key, "YY"+key, 5*i)
	}
	expect()
	for _, key := range keys {
		k.tablesPipe("topic1", key, "XXX"+key, 6)
	}
	expect()
	k.tablesPipe("topic2", "0", nil, 5, "1", nil, 7)
	expect()
	for _, key := range keys {
		k.tablesPipe("topic1", key, "XXXX"+key, 13)
	}
	expect()
	k.tablesPipe("topic1", "0", nil, 0, "1", nil, 42, "2", nil, 5, "3", nil, 20)
	expect()
}

// tablesRefused is KGroupedTableImplTest's setup (a table grouped by
// value) and an aggregation Build must refuse, with an error that says
// want.
func tablesRefused(t *testing.T, want string, aggregate func(g *streams.GroupedTable)) {
	b := streams.NewBuilder()
	aggregate(b.Table("blah", tablesStrings).GroupBy(func(_, v any) (any, any, error) { return v, v, nil }))
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build = %v, want an error with %q", err, want)
	}
}

// tablesBadStore is Kafka's INVALID_STORE_NAME.
const tablesBadStore = "~foo bar~"

// tablesCountData is KTableAggregateTest's testCountHelper: colours
// counted as rows move between them.
func tablesCountData(t *testing.T, opts ...streams.Option) {
	b := streams.NewBuilder()
	counts := b.Table("count-test-input", tablesStrings).
		GroupBy(func(_, v any) (any, any, error) { return v, v, nil }, tablesStrings).Count(opts...)
	tablesProcess(counts, "out")
	k := newKafkaDriver(t, b, streams.DriverConfig{})
	k.tablesPipe("count-test-input", "A", "green", 10, "B", "green", 9, "A", "blue", 12, "C", "yellow", 15, "D", "green", 11)
	k.tablesStreamTaps("out", "green:1@10", "green:2@10", "green:1@12", "blue:1@12", "yellow:1@15", "green:2@12")
}

// tablesGroupedData is KGroupedTableImplTest's processData, through a
// re-grouping by value: it returns the driver for the store checks.
func tablesGroupedData(t *testing.T, last func(*streams.GroupedTable)) *kafkaDriver {
	b := streams.NewBuilder()
	last(b.Table("input", tablesStrings).GroupBy(func(_, v any) (any, any, error) { return v, v, nil }, tablesStrings))
	k := newKafkaDriver(t, b, streams.DriverConfig{})
	k.tablesPipe("input", "A", "1", 10, "B", "1", 50, "C", "1", 30, "D", "2", 40, "E", "2", 60)
	return k
}

// tablesReduced is KGroupedTableImplTest's assertReduced: numbers read as
// a table, re-grouped with their integer part and summed; it checks the
// last result per key, with its timestamp, twice.
func tablesReduced(t *testing.T, opts ...streams.Option) *kafkaDriver {
	b := streams.NewBuilder()
	add := func(agg, v any) (any, error) { return agg.(int64) + v.(int64), nil }
	sub := func(agg, v any) (any, error) { return agg.(int64) - v.(int64), nil }
	reduced := b.Table("input", tablesStrings).
		GroupBy(func(k, v any) (any, any, error) { return k, tablesInt(v), nil }, streams.WithSerdes(streams.String, streams.Int64)).
		Reduce(add, sub, opts...)
	tablesProcess(reduced, "out")
	k := newKafkaDriver(t, b, streams.DriverConfig{})
	lastPerKey := func(want ...string) {
		t.Helper()
		last := map[string]string{}
		var order []string
		for _, line := range k.taps {
			if name, rest, _ := strings.Cut(line, " "); name == "out" {
				key, _, _ := strings.Cut(rest, ":")
				if _, seen := last[key]; !seen {
					order = append(order, key)
				}
				last[key], _, _ = strings.Cut(rest, "<-")
			}
		}
		k.taps = nil
		var got []string
		for _, key := range order {
			got = append(got, last[key])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("last result per key:\n got  %v\n want %v", got, want)
		}
	}
	k.tablesPipe("input", "A", "1.1", 10, "B", "2.2", 11)
	lastPerKey("A:1@10", "B:2@11")
	k.tablesPipe("input", "A", "2.6", 30, "B", "1.3", 30, "A", "5.7", 50, "B", "6.2", 20)
	lastPerKey("A:5@50", "B:6@30")
	return k
}

var _ = port(
	// KStreamWindowAggregateTest.java, testJoin (emit on update, caching
	// off): two hopping-window aggregations joined as tables. The
	// joiner gets both windows' aggregates, and a result carries the
	// larger of the two windows' timestamps.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.testJoin", Area: "table-table-join", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		hopping := streams.Hopping(10*time.Millisecond, 5*time.Millisecond, 100*time.Millisecond)
		windowed := func(topic, store, out string) *streams.Table {
			tb := b.Stream([]string{topic}, tablesStrings).GroupByKey().WindowedBy(hopping).
				Aggregate(tablesZero, tablesConcat, streams.Materialized(streams.StoreOptions{Name: store, CachingDisabled: true, ValueSerde: streams.String}))
			tablesProcess(tb, out)
			return tb
		}
		t1 := windowed("topic1", "topic1-Canonized", "out1")
		t2 := windowed("topic2", "topic2-Canonized", "out2")
		tablesProcess(t1.Join(t2, func(_, l, r any) (any, error) { return l.(string) + "%" + r.(string), nil }), "joined")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		pipe := func(topic string, recs ...any) {
			for i := 0; i < len(recs); i += 3 {
				k.pipe(topic, recs[i], recs[i+1], int64(recs[i+2].(int)))
			}
		}
		pipe("topic1", "A", "1", 0, "B", "2", 1, "C", "3", 2, "D", "4", 3, "A", "1", 9)
		k.tablesStreamTaps("out1", "[A@0/10]:0+1@0", "[B@0/10]:0+2@1", "[C@0/10]:0+3@2", "[D@0/10]:0+4@3",
			"[A@0/10]:0+1+1@9", "[A@5/15]:0+1@9")
		pipe("topic1", "A", "1", 5, "B", "2", 6, "D", "4", 7, "B", "2", 8, "C", "3", 9)
		k.tablesStreamTaps("out1", "[A@0/10]:0+1+1+1@9", "[A@5/15]:0+1+1@9", "[B@0/10]:0+2+2@6", "[B@5/15]:0+2@6",
			"[D@0/10]:0+4+4@7", "[D@5/15]:0+4@7", "[B@0/10]:0+2+2+2@8", "[B@5/15]:0+2+2@8",
			"[C@0/10]:0+3+3@9", "[C@5/15]:0+3@9")
		pipe("topic2", "A", "a", 0, "B", "b", 1, "C", "c", 2, "D", "d", 20, "A", "a", 20)
		taps := k.taps
		k.tablesStreamTaps("out2", "[A@0/10]:0+a@0", "[B@0/10]:0+b@1", "[C@0/10]:0+c@2", "[D@15/25]:0+d@20",
			"[D@20/30]:0+d@20", "[A@15/25]:0+a@20", "[A@20/30]:0+a@20")
		k.taps = taps
		k.tablesStreamTaps("joined", "[A@0/10]:0+1+1+1%0+a@9", "[B@0/10]:0+2+2+2%0+b@8", "[C@0/10]:0+3+3%0+c@9")
		pipe("topic2", "A", "a", 5, "B", "b", 6, "D", "d", 7, "D", "d", 18, "A", "a", 21)
		taps = k.taps
		k.tablesStreamTaps("out2", "[A@0/10]:0+a+a@5", "[A@5/15]:0+a@5", "[B@0/10]:0+b+b@6", "[B@5/15]:0+b@6",
			"[D@0/10]:0+d@7", "[D@5/15]:0+d@7", "[D@10/20]:0+d@18", "[D@15/25]:0+d+d@20",
			"[A@15/25]:0+a+a@21", "[A@20/30]:0+a+a@21")
		k.taps = taps
		k.tablesStreamTaps("joined", "[A@0/10]:0+1+1+1%0+a+a@9", "[A@5/15]:0+1+1%0+a@9", "[B@0/10]:0+2+2+2%0+b+b@8",
			"[B@5/15]:0+2+2%0+b@8", "[D@0/10]:0+4+4%0+d@7", "[D@5/15]:0+4%0+d@7")
	}},

	// KTableSourceTest.java, testKTable: a table's changes, deletions
	// included, at their records' timestamps.
	kafkaCase{Kafka: "KTableSourceTest.testKTable", Area: "table", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		tablesProcess(b.Table("topic1", tablesStrings), "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "1", 10, "B", "2", 11, "C", "3", 12, "D", "4", 13, "A", nil, 14, "B", nil, 15)
		k.tablesStreamTaps("out", "A:1@10", "B:2@11", "C:3@12", "D:4@13", "A:null@14", "B:null@15")
	}},
	// KTableSourceTest.java, testSendingOldValue: what a table source
	// forwards, with old values; an out-of-order update keeps its own
	// timestamp.
	kafkaCase{Kafka: "KTableSourceTest.testSendingOldValue", Area: "table", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		tablesProcess(b.Table("topic1", tablesStrings, streams.Named("table1")), "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "01", 10, "B", "01", 20, "C", "01", 15)
		k.expectTaps("table1", "A:01@10", "B:01@20", "C:01@15")
		k.tablesPipe("topic1", "A", "02", 8, "B", "02", 22)
		k.expectTaps("table1", "A:02@8<-01", "B:02@22<-01")
		k.tablesPipe("topic1", "A", "03", 12)
		k.expectTaps("table1", "A:03@12<-02")
		k.tablesPipe("topic1", "A", nil, 15, "B", nil, 20)
		k.expectTaps("table1", "A:null@15<-03", "B:null@20<-02")
	}},
	// KTableFilterTest.java, shouldEnableSendOldValuesWhenNotMaterializedAlreadyButForcedToMaterialize:
	// a filter of a table, with old values; a row that stops passing
	// becomes a deletion, one that never passed is not forwarded.
	kafkaCase{Kafka: "KTableFilterTest.shouldEnableSendOldValuesWhenNotMaterializedAlreadyButForcedToMaterialize", Area: "table", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		even := func(_, v any) (bool, error) { return tablesInt(v)%2 == 0, nil }
		tablesProcess(b.Table("topic1", tablesStrings, streams.Named("table1")).Filter(even, streams.Named("filter")), "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "1", 5, "B", "1", 10, "C", "1", 15)
		k.tablesTapsOf("table1", "A:1@5", "B:1@10", "C:1@15")
		k.expectTaps("filter")
		k.tablesPipe("topic1", "A", "2", 15, "B", "2", 8)
		k.tablesTapsOf("table1", "A:2@15<-1", "B:2@8<-1")
		k.expectTaps("filter", "A:2@15", "B:2@8")
		k.tablesPipe("topic1", "A", "3", 20)
		k.tablesTapsOf("table1", "A:3@20<-2")
		k.expectTaps("filter", "A:null@20<-2")
		k.tablesPipe("topic1", "A", nil, 10, "B", nil, 20)
		k.tablesTapsOf("table1", "A:null@10<-3", "B:null@20<-2")
		k.expectTaps("filter", "B:null@20<-2")
	}},
	// KTableFilterTest.java, shouldPassThroughOnMaterialization: Filter
	// (materialized) and its negation. Kafka's filter, not sending old
	// values, forwards a deletion for every update that fails the
	// predicate; Braid's knows the old value and forwards one only for a
	// row that passed before.
	kafkaCase{Kafka: "KTableFilterTest.shouldPassThroughOnMaterialization", Area: "table", Differs: "Unmaterialized tables keep a store", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		even := func(_, v any) (bool, error) { return tablesInt(v)%2 == 0, nil }
		odd := func(_, v any) (bool, error) { return tablesInt(v)%2 != 0, nil }
		table1 := b.Table("topic1", tablesStrings)
		table2 := table1.Filter(even, tablesNoCache("store2"))
		if table2.StoreName() != "store2" {
			t.Errorf("StoreName = %q, want store2", table2.StoreName())
		}
		tablesProcess(table2, "out2")
		tablesProcess(table1.Filter(odd), "out3")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "1", 10, "B", "2", 5, "C", "3", 8, "D", "4", 14, "A", nil, 18, "B", nil, 15)
		taps := k.taps
		// Kafka: A:null@10 B:2@5 C:null@8 D:4@14 A:null@18 B:null@15.
		k.tablesStreamTaps("out2", "B:2@5", "D:4@14", "B:null@15")
		k.taps = taps
		// Kafka: A:1@10 B:null@5 C:3@8 D:null@14 A:null@18 B:null@15.
		k.tablesStreamTaps("out3", "A:1@10", "C:3@8", "A:null@18")
	}},
	// KTableMapValuesTest.java, testQueryableKTable: a materialized
	// MapValues of a table.
	kafkaCase{Kafka: "KTableMapValuesTest.testQueryableKTable", Area: "table", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		digit := func(v any) (any, error) { return int64(v.(string)[0] - '0'), nil }
		mapped := b.Table("topic1", tablesStrings).MapValues(digit, streams.Materialized(streams.StoreOptions{Name: "anyName", ValueSerde: streams.Int64}))
		tablesProcess(mapped, "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "1", 5, "B", "2", 25, "C", "3", 20, "D", "4", 10)
		k.tablesStreamTaps("out", "A:1@5", "B:2@25", "C:3@20", "D:4@10")
		k.tablesExpectRow("anyName", "B", int64(2), 25)
	}},
	// KTableMapValuesTest.java, shouldNotEnableSendingOldValuesOnParentIfMapValuesMaterialized:
	// what a materialized MapValues forwards, old values included.
	kafkaCase{Kafka: "KTableMapValuesTest.shouldNotEnableSendingOldValuesOnParentIfMapValuesMaterialized", Area: "table", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		parse := func(v any) (any, error) { return tablesInt(v), nil }
		mapped := b.Table("topic1", tablesStrings).MapValues(parse, streams.Named("mapped"), streams.Materialized(streams.StoreOptions{Name: "bob", ValueSerde: streams.Int64}))
		tablesProcess(mapped, "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "01", 5, "B", "01", 10, "C", "01", 15)
		k.expectTaps("mapped", "A:1@5", "B:1@10", "C:1@15")
		k.tablesPipe("topic1", "A", "02", 10, "B", "02", 8)
		k.expectTaps("mapped", "A:2@10<-1", "B:2@8<-1")
		k.tablesPipe("topic1", "A", "03", 20)
		k.expectTaps("mapped", "A:3@20<-2")
		k.tablesPipe("topic1", "A", nil, 30)
		k.expectTaps("mapped", "A:null@30<-3")
	}},

	// KTableAggregateTest.java, testAggBasic: a table aggregated under
	// its own keys; each result is as new as the newest row in it.
	kafkaCase{Kafka: "KTableAggregateTest.testAggBasic", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesCachedOrNot(t, func(t *testing.T, cachingDisabled bool) {
			b := streams.NewBuilder()
			agg := b.Table("topic1", tablesStrings).
				GroupBy(func(k, v any) (any, any, error) { return k, v, nil }, tablesStrings).
				Aggregate(tablesZero, tablesConcat, tablesRemove, streams.Materialized(streams.StoreOptions{Name: "topic1-Canonized", ValueSerde: streams.String, CachingDisabled: cachingDisabled}))
			tablesProcess(agg, "out")
			k := newKafkaDriver(t, b, streams.DriverConfig{})
			k.tablesPipe("topic1", "A", "1", 10, "B", "2", 15, "A", "3", 20, "B", "4", 18, "C", "5", 5, "D", "6", 25, "B", "7", 15, "C", "8", 10)
			k.tablesStreamTaps("out", "A:0+1@10", "B:0+2@15", "A:0+1-1+3@20", "B:0+2-2+4@18", "C:0+5@5", "D:0+6@25",
				"B:0+2-2+4-4+7@18", "C:0+5-5+8@10")
		})
	}},
	// KTableAggregateTest.java, testAggRepartition: rows re-grouped by
	// value (a null key or a null pair is dropped), so that an update
	// moves a row from one aggregate to another.
	kafkaCase{Kafka: "KTableAggregateTest.testAggRepartition", Area: "table-aggregation", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		regroup := func(k, v any) (any, any, error) {
			switch k {
			case "null", "NULL":
				return nil, v, nil
			}
			return v, v, nil
		}
		agg := b.Table("topic1", tablesStrings).GroupBy(regroup, tablesStrings).
			Aggregate(tablesZero, tablesConcat, tablesRemove, streams.Materialized(streams.StoreOptions{Name: "topic1-Canonized", ValueSerde: streams.String}))
		tablesProcess(agg, "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("topic1", "A", "1", 10, "A", nil, 15, "A", "1", 12, "B", "2", 20, "null", "3", 25, "B", "4", 23, "NULL", "5", 24, "B", "7", 22)
		k.tablesStreamTaps("out", "1:0+1@10", "1:0+1-1@15", "1:0+1-1+1@15", "2:0+2@20", "2:0+2-2@23", "4:0+4@23", "4:0+4-4@23", "7:0+7@22")
	}},
	// KTableAggregateTest.java, testCount: rows counted by value, in a
	// named store.
	kafkaCase{Kafka: "KTableAggregateTest.testCount", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesCountData(t, streams.Materialized(streams.StoreOptions{Name: "count"}))
	}},
	// KTableAggregateTest.java, testCountWithInternalStore: the same with
	// a generated store.
	kafkaCase{Kafka: "KTableAggregateTest.testCountWithInternalStore", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesCountData(t)
	}},
	// KTableAggregateTest.java, testRemoveOldBeforeAddNew: an update
	// that stays in its group subtracts the old value before it adds the
	// new one, and one record gives one result.
	kafkaCase{Kafka: "KTableAggregateTest.testRemoveOldBeforeAddNew", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesCachedOrNot(t, func(t *testing.T, cachingDisabled bool) {
			b := streams.NewBuilder()
			agg := b.Table("count-test-input", tablesStrings).
				GroupBy(func(k, _ any) (any, any, error) { return k.(string)[:1], k.(string)[1:2], nil }, tablesStrings).
				Aggregate(func() (any, error) { return "", nil },
					func(_, v, agg any) (any, error) { return agg.(string) + v.(string), nil },
					func(_, v, agg any) (any, error) { return strings.ReplaceAll(agg.(string), v.(string), ""), nil },
					streams.Materialized(streams.StoreOptions{Name: "someStore", ValueSerde: streams.String, CachingDisabled: cachingDisabled}))
			tablesProcess(agg, "out")
			k := newKafkaDriver(t, b, streams.DriverConfig{})
			k.tablesPipe("count-test-input", "11", "A", 10, "12", "B", 8, "11", nil, 12, "12", "C", 6)
			k.tablesStreamTaps("out", "1:1@10", "1:12@10", "1:2@12", "1:2@12")
		})
	}},
	// KTableReduceTest.java, shouldAddAndSubtract: a table reduce of sets
	// (sorted strings here), read back from its store with the row's
	// timestamp, which an older record does not move back.
	kafkaCase{Kafka: "KTableReduceTest.shouldAddAndSubtract", Area: "table-aggregation", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		set := func(v any) map[string]bool {
			m := map[string]bool{}
			for _, e := range strings.Split(v.(string), ",") {
				if e != "" {
					m[e] = true
				}
			}
			return m
		}
		join := func(m map[string]bool) string {
			var out []string
			for e := range m {
				out = append(out, e)
			}
			slices.Sort(out)
			return strings.Join(out, ",")
		}
		union := func(agg, v any) (any, error) {
			m := set(agg)
			for e := range set(v) {
				m[e] = true
			}
			return join(m), nil
		}
		difference := func(agg, v any) (any, error) {
			m := set(agg)
			for e := range set(v) {
				delete(m, e)
			}
			return join(m), nil
		}
		b.Table("input", tablesStrings).GroupBy(func(k, v any) (any, any, error) { return k, v, nil }, tablesStrings).
			Reduce(union, difference, streams.Materialized(streams.StoreOptions{Name: "myStore"}))
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		k.tablesPipe("input", "A", "a", 10)
		k.tablesExpectRow("myStore", "A", "a", 10)
		k.tablesPipe("input", "A", "b", 15)
		k.tablesExpectRow("myStore", "A", "b", 15)
		k.tablesPipe("input", "A", nil, 12)
		k.tablesExpectRow("myStore", "A", "", 15)
	}},
	// KGroupedTableImplTest.java, shouldReduce: a table reduce in a named
	// store; each key's last result carries its newest row's timestamp.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldReduce", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesReduced(t, streams.Materialized(streams.StoreOptions{Name: "reduced"}))
	}},
	// KGroupedTableImplTest.java, shouldReduceWithInternalStoreName: the
	// same with a generated store.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldReduceWithInternalStoreName", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesReduced(t)
	}},
	// KGroupedTableImplTest.java, shouldReduceAndMaterializeResults: the
	// reduce's store, with and without timestamps.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldReduceAndMaterializeResults", Area: "table-aggregation", Run: func(t *testing.T) {
		k := tablesReduced(t, streams.Materialized(streams.StoreOptions{Name: "reduce", KeySerde: streams.String, ValueSerde: streams.Int64}))
		k.tablesExpectRow("reduce", "A", int64(5), 50)
		k.tablesExpectRow("reduce", "B", int64(6), 30)
	}},
	// KGroupedTableImplTest.java, shouldCountAndMaterializeResults.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldCountAndMaterializeResults", Area: "table-aggregation", Run: func(t *testing.T) {
		k := tablesGroupedData(t, func(g *streams.GroupedTable) {
			g.Count(streams.Materialized(streams.StoreOptions{Name: "count", KeySerde: streams.String, ValueSerde: streams.Int64}))
		})
		k.tablesExpectRow("count", "1", int64(3), 50)
		k.tablesExpectRow("count", "2", int64(2), 60)
	}},
	// KGroupedTableImplTest.java, shouldAggregateAndMaterializeResults.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldAggregateAndMaterializeResults", Area: "table-aggregation", Run: func(t *testing.T) {
		k := tablesGroupedData(t, func(g *streams.GroupedTable) {
			g.Aggregate(tablesZero, tablesConcat, tablesRemove, streams.Materialized(streams.StoreOptions{Name: "aggregate", KeySerde: streams.String, ValueSerde: streams.String}))
		})
		k.tablesExpectRow("aggregate", "1", "0+1+1+1", 50)
		k.tablesExpectRow("aggregate", "2", "0+2+2", 60)
	}},

	// KTableKTableInnerJoinTest.java, testJoin: results where both
	// tables have the key, as new as the newer of the two rows.
	kafkaCase{Kafka: "KTableKTableInnerJoinTest.testJoin", Area: "table-table-join", Run: func(t *testing.T) {
		tablesJoinCase(t, func(a, b *streams.Table) *streams.Table { return a.Join(b, tablesJoiner) }, [][]string{
			nil,
			{"0:X0+Y0@5", "1:X1+Y1@10"},
			{"0:XX0+Y0@7", "1:XX1+Y1@10"},
			{"0:XX0+YY0@7", "1:XX1+YY1@7", "2:XX2+YY2@10", "3:XX3+YY3@15"},
			{"0:XXX0+YY0@6", "1:XXX1+YY1@6", "2:XXX2+YY2@10", "3:XXX3+YY3@15"},
			{"0:null@6", "1:null@7"},
			{"2:XXXX2+YY2@13", "3:XXXX3+YY3@15"},
			{"2:null@10", "3:null@20"},
		})
	}},
	// KTableKTableLeftJoinTest.java, testJoin.
	kafkaCase{Kafka: "KTableKTableLeftJoinTest.testJoin", Area: "table-table-join", Run: func(t *testing.T) {
		tablesJoinCase(t, func(a, b *streams.Table) *streams.Table { return a.LeftJoin(b, tablesJoiner) }, [][]string{
			{"0:X0+null@5", "1:X1+null@6"},
			{"0:X0+Y0@5", "1:X1+Y1@10"},
			{"0:XX0+Y0@7", "1:XX1+Y1@10", "2:XX2+null@7", "3:XX3+null@7"},
			{"0:XX0+YY0@7", "1:XX1+YY1@7", "2:XX2+YY2@10", "3:XX3+YY3@15"},
			{"0:XXX0+YY0@6", "1:XXX1+YY1@6", "2:XXX2+YY2@10", "3:XXX3+YY3@15"},
			{"0:XXX0+null@6", "1:XXX1+null@7"},
			{"0:XXXX0+null@13", "1:XXXX1+null@13", "2:XXXX2+YY2@13", "3:XXXX3+YY3@15"},
			{"0:null@0", "1:null@42", "2:null@10", "3:null@20"},
		})
	}},
	// KTableKTableOuterJoinTest.java, testJoin.
	kafkaCase{Kafka: "KTableKTableOuterJoinTest.testJoin", Area: "table-table-join", Run: func(t *testing.T) {
		tablesJoinCase(t, func(a, b *streams.Table) *streams.Table { return a.OuterJoin(b, tablesJoiner) }, [][]string{
			{"0:X0+null@5", "1:X1+null@6"},
			{"0:X0+Y0@5", "1:X1+Y1@10"},
			{"0:XX0+Y0@7", "1:XX1+Y1@10", "2:XX2+null@7", "3:XX3+null@7"},
			{"0:XX0+YY0@7", "1:XX1+YY1@7", "2:XX2+YY2@10", "3:XX3+YY3@15"},
			{"0:XXX0+YY0@6", "1:XXX1+YY1@6", "2:XXX2+YY2@10", "3:XXX3+YY3@15"},
			{"0:XXX0+null@6", "1:XXX1+null@7"},
			{"0:XXXX0+null@13", "1:XXXX1+null@13", "2:XXXX2+YY2@13", "3:XXXX3+YY3@15"},
			{"0:null@0", "1:null@42", "2:null+YY2@10", "3:null+YY3@20"},
		})
	}},

	// KTableKTableInnerJoinTest.java, testSendingOldValues: what the join
	// forwards, each result with the one it replaces.
	kafkaCase{Kafka: "KTableKTableInnerJoinTest.testSendingOldValues", Area: "table-table-join", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		t1 := b.Table("topic1", tablesStrings)
		t2 := b.Table("topic2", tablesStrings)
		tablesProcess(t1.Join(t2, tablesJoiner, streams.Named("joined")), "out")
		k := newKafkaDriver(t, b, streams.DriverConfig{})
		keys := []string{"0", "1", "2", "3"}
		k.tablesPipe("topic1", "0", "X0", 5, "1", "X1", 6, nil, "SomeVal", 42)
		k.expectTaps("joined")
		k.tablesPipe("topic2", "0", "Y0", 0, "1", "Y1", 10, nil, "AnotherVal", 73)
		k.expectTaps("joined", "0:X0+Y0@5", "1:X1+Y1@10")
		for _, key := range keys {
			k.tablesPipe("topic1", key, "XX"+key, 7)
		}
		k.expectTaps("joined", "0:XX0+Y0@7<-X0+Y0", "1:XX1+Y1@10<-X1+Y1")
		for i, key := range keys {
			k.tablesPipe("topic2", key, "YY"+key, 5*i)
		}
		k.expectTaps("joined", "0:XX0+YY0@7<-XX0+Y0", "1:XX1+YY1@7<-XX1+Y1", "2:XX2+YY2@10", "3:XX3+YY3@15")
		for _, key := range keys {
			k.tablesPipe("topic1", key, "XXX"+key, 6)
		}
		k.expectTaps("joined", "0:XXX0+YY0@6<-XX0+YY0", "1:XXX1+YY1@6<-XX1+YY1", "2:XXX2+YY2@10<-XX2+YY2", "3:XXX3+YY3@15<-XX3+YY3")
		k.tablesPipe("topic2", "0", nil, 5, "1", nil, 7)
		k.expectTaps("joined", "0:null@6<-XXX0+YY0", "1:null@7<-XXX1+YY1")
		for _, key := range keys {
			k.tablesPipe("topic1", key, "XXXX"+key, 13)
		}
		k.expectTaps("joined", "2:XXXX2+YY2@13<-XXX2+YY2", "3:XXXX3+YY3@15<-XXX3+YY3")
		k.tablesPipe("topic1", "0", nil, 0, "1", nil, 42, "2", nil, 5, "3", nil, 20)
		k.expectTaps("joined", "2:null@10<-XXXX2+YY2", "3:null@20<-XXXX3+YY3")
	}},

	// KGroupedTableImplTest.java: aggregations Build refuses.
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowInvalidStoreNameOnAggregate", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, tablesBadStore, func(g *streams.GroupedTable) {
			g.Aggregate(tablesZero, tablesConcat, tablesRemove, streams.Materialized(streams.StoreOptions{Name: tablesBadStore}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowNullInitializerOnAggregate", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, "GroupedTable.Aggregate: the function is nil", func(g *streams.GroupedTable) {
			g.Aggregate(nil, tablesConcat, tablesRemove, streams.Materialized(streams.StoreOptions{Name: "store"}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowNullAdderOnAggregate", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, "GroupedTable.Aggregate: the function is nil", func(g *streams.GroupedTable) {
			g.Aggregate(tablesZero, nil, tablesRemove, streams.Materialized(streams.StoreOptions{Name: "store"}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowNullSubtractorOnAggregate", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, "GroupedTable.Aggregate: the function is nil", func(g *streams.GroupedTable) {
			g.Aggregate(tablesZero, tablesConcat, nil, streams.Materialized(streams.StoreOptions{Name: "store"}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowNullAdderOnReduce", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, "GroupedTable.Reduce: the function is nil", func(g *streams.GroupedTable) {
			g.Reduce(nil, func(agg, _ any) (any, error) { return agg, nil }, streams.Materialized(streams.StoreOptions{Name: "store"}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowNullSubtractorOnReduce", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, "GroupedTable.Reduce: the function is nil", func(g *streams.GroupedTable) {
			g.Reduce(func(agg, _ any) (any, error) { return agg, nil }, nil, streams.Materialized(streams.StoreOptions{Name: "store"}))
		})
	}},
	kafkaCase{Kafka: "KGroupedTableImplTest.shouldNotAllowInvalidStoreNameOnReduce", Area: "table-aggregation", Run: func(t *testing.T) {
		tablesRefused(t, tablesBadStore, func(g *streams.GroupedTable) {
			g.Reduce(func(agg, _ any) (any, error) { return agg, nil }, func(agg, _ any) (any, error) { return agg, nil },
				streams.Materialized(streams.StoreOptions{Name: tablesBadStore}))
		})
	}},
)
