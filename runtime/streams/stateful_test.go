package streams_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

func countTopology(t *testing.T, cached bool) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "clicks-per-user", CachingDisabled: !cached})).
		To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func produceClicks(t *testing.T, b *brokertest.Cluster, from, n, users int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(fmt.Sprintf("user-%02d", i%users)), Value: []byte("click")})
	}
	produce(t, b, recs...)
}

// lastCounts reads the output and returns each key's last count.
func lastCounts(recs []*kgo.Record) map[string]int64 {
	out := map[string]int64{}
	for _, r := range recs {
		out[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	}
	return out
}

// TestCountRestartReplaysOnlyTheTail counts, restarts with the state dir
// kept and checks the counts continue and that the restore read only what
// the checkpoint had not seen.
func TestCountRestartReplaysOnlyTheTail(t *testing.T) {
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			b := startBroker(t)
			createTopic(t, b, "clicks", 2)
			createTopic(t, b, "click-counts", 2)
			const users = 10
			produceClicks(t, b, 0, 1000, users)
			stateDir := t.TempDir()
			topo := countTopology(t, cached)

			cfg := testConfig(b, fmt.Sprintf("counts-%v", cached))
			cfg.StateDir = stateDir
			app, err := streams.New(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, app)
			waitFor(t, 20*time.Second, "counts of 1000 clicks", func() bool {
				v, ok, err := app.Get("clicks-per-user", "user-03")
				return err == nil && ok && v.(int64) == 100
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}

			produceClicks(t, b, 1000, 500, users)
			rec := &restoreLog{}
			cfg.Hooks = []streams.Hook{rec}
			app2, err := streams.New(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop2 := runApp(t, app2)
			waitFor(t, 20*time.Second, "counts of 1500 clicks", func() bool {
				v, ok, err := app2.Get("clicks-per-user", "user-03")
				return err == nil && ok && v.(int64) == 150
			})
			for u := range users {
				v, ok, err := app2.Get("clicks-per-user", fmt.Sprintf("user-%02d", u))
				if err != nil || !ok || v.(int64) != 150 {
					t.Errorf("user-%02d: count %v (found %v, err %v), want 150", u, v, ok, err)
				}
			}
			if n := rec.restored(); n != 0 {
				t.Errorf("restored %d changelog records after a clean restart; the checkpoint covers them all", n)
			}
			if err := stop2(); err != nil {
				t.Fatal(err)
			}

			// A new state dir restores the whole (uncompacted) changelog.
			rec3 := &restoreLog{}
			cfg.Hooks = []streams.Hook{rec3}
			cfg.StateDir = t.TempDir()
			app3, err := streams.New(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			runApp(t, app3)
			waitFor(t, 20*time.Second, "restored counts", func() bool {
				v, ok, err := app3.Get("clicks-per-user", "user-07")
				return err == nil && ok && v.(int64) == 150
			})
			if rec3.restored() == 0 {
				t.Error("an empty state dir restored nothing")
			}
			// Both runs flushed their output before they stopped: the
			// last count of every user there is 150. Uncached, the output
			// holds every update, so read until the last ones arrive.
			allCounted := func(recs []*kgo.Record) bool {
				out := lastCounts(recs)
				for u := range users {
					if out[fmt.Sprintf("user-%02d", u)] != 150 {
						return false
					}
				}
				return true
			}
			consumeUntil(t, b, "click-counts", fmt.Sprintf("a last count of 150 for each of %d users", users), 10*time.Second, allCounted)
		})
	}
}
