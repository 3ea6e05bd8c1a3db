package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCachedValuesHandedOutStay checks what the record cache's in-place
// updates (cache_box.go) must keep: a value that left a cached row, sent
// downstream as a result or an old value, or read by a stream-table join,
// never changes when the row is updated again. Every value an operator
// forwards is kept as it was when forwarded and compared at the end, after
// more updates of the same rows, dirty and clean, across commits.
func TestCachedValuesHandedOutStay(t *testing.T) {
	b := streams.NewBuilder()
	in := b.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String))
	counts := in.GroupByKey().Count(streams.Materialized(streams.StoreOptions{Name: "counts"}))
	counts.ToStream().To("counts-out", streams.WithSerdes(streams.String, streams.Int64))
	in.GroupByKey().WindowedBy(streams.Tumbling(10*time.Second, time.Second)).
		Count(streams.Materialized(streams.StoreOptions{Name: "windows"})).
		ToStream().To("windows-out", streams.WithSerdes(streams.TimeWindowedSerde(streams.String, 10_000), streams.Int64))
	in.GroupByKey().WindowedBy(streams.Tumbling(10*time.Second, time.Second)).Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "final-windows"})).
		ToStream().To("final-windows-out", streams.WithSerdes(streams.TimeWindowedSerde(streams.String, 10_000), streams.Int64))
	b.Stream([]string{"probe"}, streams.WithSerdes(streams.String, streams.String)).
		JoinTable(counts, func(_, _, n any) (any, error) { return n, nil }).
		To("probe-out", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		rec  streams.TapRecord
		then string
	}
	var kept []seen
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{
		ApplicationID: "app",
		Partitions:    map[string]int{"in": 1, "probe": 1},
		Tap: func(r streams.TapRecord) {
			kept = append(kept, seen{r, fmt.Sprint(r.Value, r.Old)})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ts := int64(0)
	for round := range 4 {
		for i := range 300 {
			key := fmt.Sprint("k", i%3)
			if err := d.Pipe("in", []byte(key), []byte("v"), ts); err != nil {
				t.Fatal(err)
			}
			ts += 10
			if i%50 == 0 {
				if err := d.Pipe("probe", []byte(key), []byte("p"), ts); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := d.Commit(); err != nil {
			t.Fatalf("commit %d: %v", round, err)
		}
	}
	if len(kept) == 0 {
		t.Fatal("no record was forwarded")
	}
	for i, s := range kept {
		if now := fmt.Sprint(s.rec.Value, s.rec.Old); now != s.then {
			t.Errorf("forwarded record %d (%s) changed from %s to %s", i, s.rec.Node, s.then, now)
		}
	}
}

// TestCachedRowKeepsItsOwnKey checks that a cached row of the bytes serde
// keeps a key of its own, not the piped (fetched) record's bytes: a
// fetched key lies in its fetched batch, which a row kept cached would
// keep alive. The piped buffer is written over before the commit; the
// count's result must still carry the key it was counted under.
func TestCachedRowKeepsItsOwnKey(t *testing.T) {
	b := streams.NewBuilder()
	b.Stream([]string{"in"}, streams.WithSerdes(streams.Bytes, streams.Bytes)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		ToStream().To("out", streams.WithSerdes(streams.Bytes, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{ApplicationID: "app", Partitions: map[string]int{"in": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf := []byte("key-a")
	if err := d.Pipe("in", buf, []byte("v"), 1); err != nil {
		t.Fatal(err)
	}
	copy(buf, "key-b")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"out", "app-counts-changelog"} {
		out := d.ReadOutput(topic)
		if len(out) != 1 || string(out[0].Key) != "key-a" {
			var keys []string
			for _, r := range out {
				keys = append(keys, string(r.Key))
			}
			t.Errorf("%s: keys %q, want [key-a]", topic, keys)
		}
	}
}
