package streams_test

// The table part of the Kafka Streams port: table sources, Filter and
// MapValues of tables, table aggregations (GroupedTable) and table-table
// joins, with the row timestamps of Kafka Streams' timestamped key-value
// stores (KIP-258). Helpers are prefixed "tables".

import (
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
)
