package streams_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCachedUpdatesAcrossCommits updates keys several times between
// commits, each aggregation through its own serde: the rows the record
// cache holds typed (Int64, String) are encoded only at the flush, JSON's
// at every update. Every flush must send the latest value with its row's
// timestamp (the largest of its records') to the sink and the changelog,
// and queries must read it after the commit.
func TestCachedUpdatesAcrossCommits(t *testing.T) {
	type piped struct {
		key, value string
		ts         int64
	}
	// Three commits: keys updated again while dirty, again after a flush
	// (clean in the cache), new keys, and a record older than its row.
	batches := [][]piped{
		{{"a", "x", 10}, {"b", "y", 11}, {"a", "z", 12}, {"a", "x", 13}},
		{{"a", "y", 20}, {"c", "x", 21}, {"c", "y", 22}},
		{{"b", "z", 5}, {"a", "x", 30}},
	}
	cases := []struct {
		name  string
		build func(g *streams.GroupedStream) *streams.Table
		fold  func(old any, found bool, v string) any
		serde streams.Serde
	}{
		{"count", func(g *streams.GroupedStream) *streams.Table {
			return g.Count(streams.Materialized(streams.StoreOptions{Name: "agg"}))
		}, func(old any, found bool, _ string) any {
			if !found {
				return int64(1)
			}
			return old.(int64) + 1
		}, streams.Int64},
		{"reduce string", func(g *streams.GroupedStream) *streams.Table {
			return g.Reduce(func(a, b any) (any, error) { return a.(string) + b.(string), nil },
				streams.Materialized(streams.StoreOptions{Name: "agg"}))
		}, func(old any, found bool, v string) any {
			if !found {
				return v
			}
			return old.(string) + v
		}, streams.String},
		{"aggregate json", func(g *streams.GroupedStream) *streams.Table {
			return g.Aggregate(func() (any, error) { return map[string]any{"n": float64(0)}, nil },
				func(_, v, agg any) (any, error) {
					return map[string]any{"n": agg.(map[string]any)["n"].(float64) + float64(len(v.(string)))}, nil
				},
				streams.Materialized(streams.StoreOptions{Name: "agg", ValueSerde: streams.JSON}))
		}, func(old any, found bool, v string) any {
			n := float64(0)
			if found {
				n = old.(map[string]any)["n"].(float64)
			}
			return map[string]any{"n": n + float64(len(v))}
		}, streams.JSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := streams.NewBuilder()
			c.build(b.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String)).GroupByKey()).
				ToStream().To("out", streams.WithSerdes(streams.String, c.serde))
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			d, err := streams.NewTestDriver(topo, streams.DriverConfig{ApplicationID: "app", Partitions: map[string]int{"in": 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			rows := map[string]streams.ValueAndTimestamp{}
			for i, batch := range batches {
				dirty := map[string]bool{}
				for _, p := range batch {
					old, found := rows[p.key]
					rows[p.key] = streams.ValueAndTimestamp{Value: c.fold(old.Value, found, p.value), Timestamp: max(old.Timestamp, p.ts)}
					dirty[p.key] = true
					if err := d.Pipe("in", []byte(p.key), []byte(p.value), p.ts); err != nil {
						t.Fatal(err)
					}
				}
				if err := d.Commit(); err != nil {
					t.Fatal(err)
				}
				for _, topic := range []string{"out", "app-agg-changelog"} {
					got := map[string]string{}
					for _, r := range d.ReadOutput(topic) {
						got[string(r.Key)] = fmt.Sprintf("%x@%d", r.Value, r.Timestamp)
					}
					want := map[string]string{}
					for k := range dirty {
						want[k] = fmt.Sprintf("%x@%d", encodeRow(t, c.serde, rows[k].Value), rows[k].Timestamp)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("commit %d: %s got %v, want %v", i, topic, got, want)
					}
				}
				for k, row := range rows {
					got, found, err := d.GetWithTimestamp("agg", k)
					if err != nil || !found || fmt.Sprint(got) != fmt.Sprint(row) {
						t.Errorf("commit %d: GetWithTimestamp(%q) = %v, %v, %v, want %v", i, k, got, found, err, row)
					}
				}
			}
		})
	}
}

// TestCachedCountForwardsOldValues sums a count table's rows in a
// re-grouped table, which subtracts each row's old value: the sum is the
// number of records only if every update of a cached row, dirty or clean,
// forwards the value the row had at the last flush.
func TestCachedCountForwardsOldValues(t *testing.T) {
	b := streams.NewBuilder()
	b.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		GroupBy(func(_, n any) (any, any, error) { return "all", n, nil }, streams.WithSerdes(streams.String, streams.Int64)).
		Reduce(func(a, b any) (any, error) { return a.(int64) + b.(int64), nil },
			func(a, b any) (any, error) { return a.(int64) - b.(int64), nil },
			streams.Materialized(streams.StoreOptions{Name: "total"}))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{Partitions: map[string]int{"in": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	piped := 0
	for i, keys := range []string{"aab", "abca", "c", "aaaa"} {
		for _, k := range keys {
			if err := d.Pipe("in", []byte{byte(k)}, []byte("v"), int64(piped)); err != nil {
				t.Fatal(err)
			}
			piped++
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		got, found, err := d.Get("total", "all")
		if err != nil || !found || got != int64(piped) {
			t.Errorf("commit %d: total = %v, %v, %v, want %d", i, got, found, err, piped)
		}
	}
}

func encodeRow(t *testing.T, serde streams.Serde, v any) []byte {
	t.Helper()
	switch serde {
	case streams.Int64:
		return binary.BigEndian.AppendUint64(nil, uint64(v.(int64)))
	case streams.String:
		return []byte(v.(string))
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
