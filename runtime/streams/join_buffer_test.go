package streams_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restoredCounter sums the changelog records the tasks replayed before
// their first record.
type restoredCounter struct{ n atomic.Int64 }

func (c *restoredCounter) OnTaskResumed(ev streams.TaskResumedEvent) { c.n.Add(ev.Restored) }

// TestExactlyOnceJoinReplaysOneRetention runs an inner join whose buffers
// keep 30 minutes (1 s windows, 30 min of grace) over three hours of
// event time, produced in phases of 10 minutes, each processed before the
// next is produced (so that no interleaving of the two inputs matters),
// and crashes it at each crash point of a commit in the 16th phase. The
// buffers live in memory, pebble holding neither them nor their commits:
// the restarted instance rebuilds them from the changelog, from the last
// commit before which every buffered record had expired, which is far
// less than the whole changelog. Read committed, every pair is joined
// exactly once.
func TestExactlyOnceJoinReplaysOneRetention(t *testing.T) {
	skipShort(t, "crashes an instance at every commit point")
	const (
		phases, crashPhase = 18, 15
		perPhase           = 60
		phaseMs            = 10 * 60_000
	)
	windows := streams.JoinWindows{Before: time.Second, After: time.Second, Grace: 30 * time.Minute}
	topology := func() *streams.Topology {
		b := streams.NewBuilder()
		b.Stream([]string{"jl"}).Join(b.Stream([]string{"jr"}), concat, windows).To("joined")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	for _, point := range []string{streams.CrashBeforeCommit, streams.CrashAfterCommit, streams.CrashDuringApply} {
		t.Run(point, func(t *testing.T) {
			b := startBroker(t)
			for _, topic := range []string{"jl", "jr", "joined"} {
				createTopic(t, b, topic, 2)
			}
			var want []string
			phase := func(p int) {
				var recs []*kgo.Record
				for i := range perPhase {
					key, ts := fmt.Sprintf("k%d", i%10), t0+int64(p*phaseMs+i*10_000)
					l, r := fmt.Sprintf("l%d_%d", p, i), fmt.Sprintf("r%d_%d", p, i)
					recs = append(recs,
						&kgo.Record{Topic: "jl", Key: []byte(key), Value: []byte(l), Timestamp: time.UnixMilli(ts)},
						&kgo.Record{Topic: "jr", Key: []byte(key), Value: []byte(r), Timestamp: time.UnixMilli(ts + 500)})
					want = append(want, fmt.Sprintf("%s=%s+%s", key, l, r))
				}
				produce(t, b, recs...)
			}
			dir := t.TempDir()
			first, err := streams.New(topology(), joinEOSConfig(b, dir))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			armed := false
			streams.SetCrashAt(first, func(p string) bool {
				mu.Lock()
				defer mu.Unlock()
				return armed && p == point
			})
			done := make(chan error, 1)
			go func() { done <- first.Run(context.Background()) }()
			for p := range crashPhase {
				phase(p)
				joinProcessedAll(t, b)
			}
			mu.Lock()
			armed = true
			mu.Unlock()
			phase(crashPhase)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("no crash within 60 s")
			}
			buffered := 2 * perPhase * (crashPhase + 1)

			restored := &restoredCounter{}
			cfg := joinEOSConfig(b, dir)
			cfg.Hooks = append(cfg.Hooks, restored)
			second, err := streams.New(topology(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, second)
			joinProcessedAll(t, b)
			for p := crashPhase + 1; p < phases; p++ {
				phase(p)
				joinProcessedAll(t, b)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range readCommitted(t, b, "joined") {
				got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				missing, extra := diffSorted(want, got)
				t.Errorf("%d results, want %d: missing %q, not expected or repeated %q", len(got), len(want), missing, extra)
			}
			t.Logf("the restart replayed %d changelog records; the buffers' changelogs held about %d", restored.n.Load(), buffered)
			if n := restored.n.Load(); n == 0 || n > int64(buffered)/2 {
				t.Errorf("the restart replayed %d changelog records, want some and at most half of the %d buffered", n, buffered)
			}
		})
	}
}
