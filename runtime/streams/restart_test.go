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
