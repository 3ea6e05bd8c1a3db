package streams_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStatelessPipeline runs filter and map-values over JSON records in
// four partitions and checks the output record for record.
func TestStatelessPipeline(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "orders", 4)
	createTopic(t, b, "big-orders", 4)

	const n = 1000
	var recs []*kgo.Record
	want := map[string]float64{}
	base := time.UnixMilli(1_700_000_000_000)
	for i := range n {
		amount := float64(i % 200)
		v, _ := json.Marshal(map[string]any{"id": i, "amount": amount})
		recs = append(recs, &kgo.Record{Topic: "orders", Key: key(i % 50), Value: v, Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
		if amount >= 100 {
			want[fmt.Sprint(i)] = amount * 2
		}
	}
	produce(t, b, recs...)

	builder := streams.NewBuilder()
	builder.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
		Filter(func(_, v any) (bool, error) { return v.(map[string]any)["amount"].(float64) >= 100, nil }).
		MapValues(func(v any) (any, error) {
			m := v.(map[string]any)
			return map[string]any{"id": m["id"], "doubled": m["amount"].(float64) * 2}, nil
		}).
		To("big-orders", streams.WithSerdes(streams.String, streams.JSON))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	hooks := &recorder{}
	cfg := testConfig(b, "stateless")
	cfg.Hooks = []streams.Hook{hooks}
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runApp(t, app)

	out := consumeN(t, b, "big-orders", len(want), 30*time.Second)
	got := map[string]float64{}
	for _, r := range out {
		var v struct {
			ID      json.Number
			Doubled float64
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("output %s: %v", r.Value, err)
		}
		got[v.ID.String()] = v.Doubled
		id, _ := v.ID.Int64()
		if wantTS := base.Add(time.Duration(id) * time.Millisecond); !r.Timestamp.Equal(wantTS) {
			t.Errorf("record %d: timestamp %v, want the input's %v", id, r.Timestamp, wantTS)
		}
		if string(r.Key) != string(key(int(id)%50)) {
			t.Errorf("record %d: key %q, want %q", id, r.Key, key(int(id)%50))
		}
	}
	if len(got) != len(want) || len(out) != len(want) {
		t.Fatalf("got %d output records (%d distinct), want %d", len(out), len(got), len(want))
	}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("record %s: doubled = %v, want %v", id, got[id], v)
		}
	}

	waitFor(t, 10*time.Second, "all records committed", func() bool {
		st := app.Stats()
		var committed int64
		for _, task := range st.Tasks {
			for _, p := range task.Partitions {
				committed += p.Committed
			}
		}
		return committed == n
	})
	st := app.Stats()
	if len(st.Tasks) != 4 {
		t.Fatalf("Stats has %d tasks, want 4: %+v", len(st.Tasks), st.Tasks)
	}
	var processed int64
	for i, task := range st.Tasks {
		if want := (streams.TaskID{Subtopology: 0, Partition: int32(i)}); task.ID != want {
			t.Errorf("task %d is %v, want %v", i, task.ID, want)
		}
		processed += task.Processed
		if task.StreamTime < base.UnixMilli() || task.StreamTime >= base.UnixMilli()+n {
			t.Errorf("task %v: stream time %d outside the input's range", task.ID, task.StreamTime)
		}
	}
	if processed != n {
		t.Errorf("processed %d records, want %d", processed, n)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := hooks.stateNames(), []string{"REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING"}; !slices.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	if len(hooks.assigned) != 4 || len(hooks.revoked) != 4 {
		t.Errorf("%d tasks assigned and %d revoked, want 4 and 4", len(hooks.assigned), len(hooks.revoked))
	}
	if len(hooks.commits) == 0 {
		t.Error("no commit hook was called")
	}
}
