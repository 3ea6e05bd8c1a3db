package streams_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCooperativeJoinHoldsNoCommit keeps a cooperative rebalance's join
// open: app-2's processing goroutine is held inside a Peek, so that app-2
// cannot rejoin when app-3 arrives, and the group waits for it. app-1's
// tasks must go on processing throughout, for many commit intervals:
// franz-go holds every offset commit while its member joins, so a
// periodic commit that waited for the join would stop all of them until
// app-2 rejoined. Once app-2 is let go, the three share the tasks and
// every click is counted.
func TestCooperativeJoinHoldsNoCommit(t *testing.T) {
	const partitions, users = 6, 30
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)

	var holding atomic.Bool
	held := make(chan struct{})
	release := make(chan struct{})
	var heldOnce, releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { holding.Store(false); close(release) }) }
	newApp := func(instance string, peek streams.Action) *streams.App {
		cfg := testConfig(b, "join-gate")
		cfg.InstanceID = instance
		cfg.StateDir = t.TempDir()
		cfg.SessionTimeout = 10 * time.Second
		bld := streams.NewBuilder()
		bld.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
			Peek(peek).
			GroupByKey().
			Count(streams.Materialized(streams.StoreOptions{Name: "clicks-per-user"})).
			To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
		topo, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		app, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	running := func(app *streams.App, n int) bool {
		st := app.Stats()
		return st.State == streams.Running && len(st.Tasks) == n
	}
	processed := func(app *streams.App) (n int64) {
		for _, ts := range app.Stats().Tasks {
			n += ts.Processed
		}
		return n
	}

	app1 := newApp("app-1", func(any, any) {})
	app2 := newApp("app-2", func(any, any) {
		if holding.Load() {
			heldOnce.Do(func() { close(held) })
			<-release
		}
	})
	runApp(t, app1)
	runApp(t, app2)
	t.Cleanup(letGo) // before app 2 is stopped: cleanups run last first
	waitFor(t, 60*time.Second, "the tasks split 3 and 3", func() bool { return running(app1, 3) && running(app2, 3) })

	clicks := 0
	wave := func() {
		produceClicks(t, b, clicks, 2*users, users)
		clicks += 2 * users
	}
	holding.Store(true)
	wave()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("app 2 never processed a click of the first wave")
	}

	runApp(t, newApp("app-3", func(any, any) {}))
	waitFor(t, 30*time.Second, "app 1 to join the rebalance app 3 began", func() bool { return app1.State() == streams.Rebalancing })
	joinBegan := time.Now()
	for waves := 0; waves < 3 || time.Since(joinBegan) < 5*100*time.Millisecond; waves++ {
		before := processed(app1)
		wave()
		waitFor(t, 5*time.Second, fmt.Sprintf("app 1 to process clicks of wave %d while the join is open", waves+1), func() bool {
			return processed(app1) > before
		})
	}
	if st := app1.State(); st != streams.Rebalancing {
		t.Fatalf("app 1 is %v after the waves: the join ended while app 2 was held, and the test shows nothing", st)
	}

	letGo()
	waitFor(t, 60*time.Second, "the tasks split 2, 2 and 2", func() bool { return running(app1, 2) && running(app2, 2) })
	consumeUntil(t, b, "click-counts", "every user's count to reach its clicks", 60*time.Second, func(recs []*kgo.Record) bool {
		counts := lastCounts(recs)
		for u := range users {
			if counts[fmt.Sprintf("user-%02d", u)] < int64(clicks/users) {
				return false
			}
		}
		return true
	})
}
