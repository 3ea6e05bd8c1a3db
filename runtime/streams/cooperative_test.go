package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCooperativeRebalanceNeverStopsStayingTasks adds a second instance
// to a stateful count and then stops it, under each protocol. The tasks
// that stay on the first instance through both rebalances are never
// suspended under the cooperative protocol, and are under the eager one,
// so that the test can fail; every count comes out complete either way.
func TestCooperativeRebalanceNeverStopsStayingTasks(t *testing.T) {
	for _, protocol := range []streams.RebalanceProtocol{streams.RebalanceCooperative, streams.RebalanceEager} {
		t.Run(protocol.String(), func(t *testing.T) { testStayingTasks(t, protocol) })
	}
}

func testStayingTasks(t *testing.T, protocol streams.RebalanceProtocol) {
	const partitions, users, clicks = 6, 30, 3000
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	newApp := func(instance string) *streams.App {
		cfg := testConfig(b, "coop")
		cfg.InstanceID = instance
		cfg.StateDir = t.TempDir()
		cfg.SessionTimeout = 3 * time.Second
		cfg.RebalanceProtocol = protocol
		app, err := streams.New(countTopology(t, true), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	tasksOf := func(app *streams.App) map[streams.TaskID]bool {
		out := map[streams.TaskID]bool{}
		for _, ts := range app.Stats().Tasks {
			out[ts.ID] = true
		}
		return out
	}
	running := func(app *streams.App, n int) func() bool {
		return func() bool { st := app.Stats(); return st.State == streams.Running && len(st.Tasks) == n }
	}

	app1 := newApp("app-1")
	runApp(t, app1)
	waitFor(t, 30*time.Second, "app 1 to run all tasks", running(app1, partitions))
	produceClicks(t, b, 0, clicks/2, users)

	app2 := newApp("app-2")
	stop2 := runApp(t, app2)
	waitFor(t, 60*time.Second, "the tasks split 3 and 3", func() bool {
		return running(app1, partitions/2)() && running(app2, partitions/2)()
	})
	staying := tasksOf(app1)
	produceClicks(t, b, clicks/2, clicks/2, users)
	if err := stop2(); err != nil {
		t.Fatalf("stopping app 2: %v", err)
	}
	waitFor(t, 60*time.Second, "app 1 to run all tasks again", running(app1, partitions))

	suspended := streams.Suspensions(app1)
	stopped := 0
	for id := range staying {
		stopped += suspended[id]
	}
	t.Logf("%s: the staying tasks %v were suspended %d times in all (per task: %v)", protocol, staying, stopped, suspended)
	switch protocol {
	case streams.RebalanceCooperative:
		if stopped != 0 {
			t.Errorf("cooperative: the tasks that stayed on app 1 were suspended %d times, want none: %v", stopped, suspended)
		}
	case streams.RebalanceEager:
		if stopped == 0 {
			t.Error("eager: the tasks that stayed on app 1 were never suspended; the test cannot tell the protocols apart")
		}
	}
	waitFor(t, 60*time.Second, "every count complete on app 1", func() bool {
		for u := range users {
			v, ok, err := app1.Get("clicks-per-user", fmt.Sprintf("user-%02d", u))
			if err != nil || !ok || v.(int64) != clicks/users {
				return false
			}
		}
		return true
	})
}
