package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestartResumesFromCommit runs an App, closes it, and runs a new one
// with the same ApplicationID over more input: a graceful close commits
// everything, so the second App starts exactly where the first stopped and
// the output holds every record once.
func TestRestartResumesFromCommit(t *testing.T) {
	const (
		first  = 1000
		second = 500
		appID  = "restart"
	)
	b := startBroker(t)
	createTopic(t, b, "in", 3)
	createTopic(t, b, "out", 3)
	records := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: "in", Key: key(i % 20), Value: fmt.Appendf(nil, "%d", i)})
		}
		return recs
	}
	newApp := func() *streams.App {
		builder := streams.NewBuilder()
		builder.Stream([]string{"in"}).
			MapValues(func(v any) (any, error) { return v, nil }).
			To("out")
		topo, err := builder.Build()
		if err != nil {
			t.Fatal(err)
		}
		app, err := streams.New(topo, testConfig(b, appID))
		if err != nil {
			t.Fatal(err)
		}
		return app
	}

	produce(t, b, records(0, first)...)
	app := newApp()
	stop := runApp(t, app)
	waitFor(t, 20*time.Second, fmt.Sprintf("%d output records", first), func() bool {
		return sum(endOffsets(t, b, "out")) >= first
	})
	if err := stop(); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if got := sum(committedOffsets(t, b, appID, "in")); got != first {
		t.Fatalf("after a graceful close %d input records are committed, want %d", got, first)
	}

	produce(t, b, records(first, first+second)...)
	app = newApp()
	stop = runApp(t, app)
	waitFor(t, 20*time.Second, fmt.Sprintf("%d input records committed", first+second), func() bool {
		return sum(committedOffsets(t, b, appID, "in")) == first+second
	})
	if err := stop(); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	// Outputs are flushed before their inputs are committed, so the
	// output is complete now; any replay would have come out before.
	out := consumeN(t, b, "out", first+second, 10*time.Second)
	if got := sum(endOffsets(t, b, "out")); got != first+second || len(out) != first+second {
		t.Fatalf("the output holds %d records (consumed %d), want exactly %d", got, len(out), first+second)
	}
	seen := make(map[string]int)
	for _, r := range out {
		seen[string(r.Value)]++
	}
	for i := range first + second {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("record %d came out %d times, want once", i, c)
		}
	}
}

// TestIdleRestartKeepsCommittedOffsets restarts an App over input it has
// fully processed and committed, with nothing new to read: stopping it
// again must leave the committed offsets where they were. A task that
// processed nothing has nothing to commit; committing offset 0 for it
// would make the next owner reprocess the whole partition.
func TestIdleRestartKeepsCommittedOffsets(t *testing.T) {
	const (
		n     = 300
		appID = "idle-restart"
	)
	b := startBroker(t)
	createTopic(t, b, "in", 3)
	createTopic(t, b, "out", 3)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "in", Key: key(i % 20), Value: fmt.Appendf(nil, "%d", i)})
	}
	produce(t, b, recs...)
	newApp := func(hooks *recorder) *streams.App {
		builder := streams.NewBuilder()
		builder.Stream([]string{"in"}).To("out")
		topo, err := builder.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(b, appID)
		cfg.Hooks = []streams.Hook{hooks}
		app, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}

	stop := runApp(t, newApp(&recorder{}))
	waitFor(t, 20*time.Second, fmt.Sprintf("%d input records committed", n), func() bool {
		return sum(committedOffsets(t, b, appID, "in")) == n
	})
	if err := stop(); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	before := committedOffsets(t, b, appID, "in")

	hooks := &recorder{}
	app := newApp(hooks)
	stop = runApp(t, app)
	waitFor(t, 20*time.Second, "the restarted App to run 3 tasks", func() bool {
		st := app.Stats()
		return st.State == streams.Running && len(st.Tasks) == 3
	})
	if err := stop(); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	after := committedOffsets(t, b, appID, "in")
	for p, off := range before {
		if after[p] != off {
			t.Errorf("in/%d: committed offset %d before the idle restart, %d after; an App that processed nothing "+
				"must not commit (task.go addPartition leaves partitionQueue.next at offset 0, and App.commit commits it "+
				"because 0 > committed -1)", p, off, after[p])
		}
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	for _, c := range hooks.commits {
		t.Errorf("the idle App committed %v", c.Offsets)
	}
}
