package difftest

import (
	"context"
	"testing"
	"time"
)

// TestDifferentialUnmaterializedTables pins the difference named in
// docs/differences.md, "Unmaterialized tables keep a store": a table
// source or table filter that names no store keeps none in Kafka Streams
// and sends a deletion for every tombstone it reads and every row it
// rejects, and so does a table source whose store is not cached; Braid
// sends one only for a row the table held. Without those needless
// deletions the two are the same.
func TestDifferentialUnmaterializedTables(t *testing.T) {
	cp := peerClasspath(t)
	cases := []Case{
		{Name: "table source", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table source, caching off", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers", "store", "customers", "caching", "off"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table filter and map-values", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers"),
			n("gold", "filter", "predicate", `value.tier == "gold"`),
			n("m", "map-values", "value", `{who: value.name, credit: value.credit * 2}`),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peer, err := RunPeer(ctx, cp, t.TempDir(), cases)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka Streams' needless deletions: c9, never held, in each; in the
	// filter's, also c2 (silver), c2's deletion and c1 (silver again).
	extra := []int{1, 1, 4}
	for i, c := range cases {
		braid, err := RunBraid(c)
		if err != nil {
			t.Fatal(err)
		}
		needless := withoutNeedlessDeletions(peer[i])
		if len(peer[i])-len(needless) != extra[i] {
			t.Errorf("%s: Kafka Streams sent %d needless deletions, want %d:\n%s", c.Name, len(peer[i])-len(needless), extra[i], Diff(braid, peer[i]))
		}
		if d := Diff(braid, needless); d != "" {
			t.Errorf("%s: without Kafka Streams' needless deletions:\n%s", c.Name, d)
		}
	}
}

// withoutNeedlessDeletions drops the deletions of keys that the output
// holds no row for (never sent, or already deleted).
func withoutNeedlessDeletions(out []Output) []Output {
	held := map[string]bool{}
	var kept []Output
	for _, o := range out {
		k := string(o.Key)
		if o.Value == nil && !held[k] {
			continue
		}
		held[k] = o.Value != nil
		kept = append(kept, o)
	}
	return kept
}

// customers are updates of a table of customers by id: changes, a
// tombstone, a delete of a key never seen and a key that comes back.
var customers = []Input{
	rec("customers", "c1", `{"name":"alice","region":"eu","tier":"gold","credit":50}`, 1000),
	rec("customers", "c2", `{"name":"bob","region":"us","tier":"silver","credit":20}`, 2000),
	rec("customers", "c3", `{"name":"carol","region":"eu","tier":"gold","credit":70}`, 3000),
	rec("customers", "c1", `{"name":"alice","region":"us","tier":"silver","credit":55}`, 4000),
	rec("customers", "c2", "", 5000),
	rec("customers", "c9", "", 5500),
	rec("customers", "c2", `{"name":"bob","region":"eu","tier":"gold","credit":10}`, 6000),
	rec("customers", "c3", `{"name":"carol","region":"eu","tier":"gold","credit":70}`, 7000),
	rec("customers", "c1", `{"name":"alice","region":"us","tier":"silver","credit":56}`, 3500),
}

// TestDifferentialTables runs hand-written designs of tables: a table
// source, table filters and map-values with a store, and aggregations of
// a table grouped by a field (which materialize the table they group in
// both).
func TestDifferentialTables(t *testing.T) {
	runBoth(t, []Case{
		{Name: "table source", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers", "store", "customers"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table filter and map-values with stores", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers", "store", "customers"),
			n("gold", "filter", "predicate", `value.tier == "gold"`, "store", "gold"),
			n("m", "map-values", "value", `{who: value.name, credit: value.credit * 2}`, "store", "gold-credit"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table counted by region", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers"),
			n("g", "group-by", "key", "value.region"),
			n("c", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table credit summed by region, caching off", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers"),
			n("g", "group-by", "key", "value.region", "value", "value.credit"),
			n("r", "reduce", "reducer", "aggregate + value", "subtractor", "aggregate - value", "caching", "off"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "table aggregated by tier", Input: customers, Design: chain(
			n("src", "source-table", "topic", "customers"),
			n("g", "group-by", "key", "value.tier"),
			n("a", "aggregate", "initializer", "{n: 0, credit: 0}",
				"aggregator", "{n: aggregate.n + 1, credit: aggregate.credit + value.credit}",
				"subtractor", "{n: aggregate.n - 1, credit: aggregate.credit - value.credit}"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
	})
}
