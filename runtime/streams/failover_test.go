package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestStatefulFailover: two instances with their own state dirs share a
// count; when one leaves, the other restores the moved tasks' stores from
// their changelogs before processing, and the counts carry on exactly.
func TestStatefulFailover(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 4)
	createTopic(t, b, "click-counts", 4)
	const users = 20
	produceClicks(t, b, 0, 2000, users)
	topo := countTopology(t, true)

	newApp := func(instance string, hooks ...streams.Hook) *streams.App {
		cfg := testConfig(b, "failover")
		cfg.InstanceID = instance
		cfg.StateDir = t.TempDir()
		cfg.Hooks = hooks
		app, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	countIs := func(app *streams.App, want int64) func() bool {
		return func() bool {
			for u := range users {
				v, ok, err := app.Get("clicks-per-user", fmt.Sprintf("user-%02d", u))
				if err != nil || !ok || v.(int64) != want {
					return false
				}
			}
			return true
		}
	}
	// Across both instances each user is on exactly one of them.
	spreadCountIs := func(apps []*streams.App, want int64) func() bool {
		return func() bool {
			for u := range users {
				found := 0
				for _, app := range apps {
					v, ok, err := app.Get("clicks-per-user", fmt.Sprintf("user-%02d", u))
					if err == nil && ok && v.(int64) == want {
						found++
					}
				}
				if found != 1 {
					return false
				}
			}
			return true
		}
	}

	first := newApp("first")
	stopFirst := runApp(t, first)
	rec := &restoreLog{}
	second := newApp("second", rec)
	runApp(t, second)
	waitFor(t, 30*time.Second, "both instances running two tasks each", func() bool {
		return len(first.Stats().Tasks) == 2 && len(second.Stats().Tasks) == 2
	})
	waitFor(t, 30*time.Second, "100 clicks per user across both", spreadCountIs([]*streams.App{first, second}, 100))
	// Both instances now change their stores, so whichever leaves has
	// written changelog records the other has not seen.
	produceClicks(t, b, 2000, 1000, users)
	waitFor(t, 30*time.Second, "150 clicks per user across both", spreadCountIs([]*streams.App{first, second}, 150))

	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the second instance owning all four tasks", func() bool {
		st := second.Stats()
		if len(st.Tasks) != 4 {
			return false
		}
		for _, task := range st.Tasks {
			if task.Restoring {
				return false
			}
		}
		return true
	})
	produceClicks(t, b, 3000, 1000, users)
	waitFor(t, 30*time.Second, "200 clicks per user on the second instance", countIs(second, 200))
	if rec.restored() == 0 {
		t.Error("the second instance took over stateful tasks without restoring anything")
	}
}
