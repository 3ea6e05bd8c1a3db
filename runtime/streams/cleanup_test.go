package streams_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestStateDirOfAMovedTaskIsDeletedAfterTheDelay runs one instance alone,
// then adds two: the tasks a neither runs nor keeps a standby of any more
// lose their state dir on a once StateCleanupDelay passed, while the dirs
// of the tasks it still owns, active or standby, stay.
func TestStateDirOfAMovedTaskIsDeletedAfterTheDelay(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 4)
	createTopic(t, b, "click-counts", 4)
	const app = "tidy"
	dirA := t.TempDir()
	start := func(id string) *streams.App {
		cfg := testConfig(b, app)
		cfg.InstanceID = id
		cfg.StateDir = t.TempDir()
		if id == "a" {
			cfg.StateDir = dirA
		}
		cfg.StandbyReplicas = 1
		cfg.StateCleanupDelay = 200 * time.Millisecond
		a, err := streams.New(countTopology(t, true), cfg)
		if err != nil {
			t.Fatal(err)
		}
		runApp(t, a)
		return a
	}
	a := start("a")
	waitFor(t, 60*time.Second, "a running all four tasks", func() bool { return len(a.Stats().Tasks) == 4 })
	produceClicks(t, b, 0, 40, 8)
	waitFor(t, 60*time.Second, "every click committed", func() bool { return allCommitted(t, b, app, "clicks") })
	root := filepath.Join(dirA, app)
	all := taskDirs(t, root)
	if len(all) != 4 {
		t.Fatalf("a holds task dirs %v, want four", all)
	}

	start("b")
	start("c")
	// 8 replicas (4 actives, 4 standbys) over 3 instances: a owns at most
	// 3 tasks, so at least one task's dir must go. Which of a's tasks
	// are actives and which standbys is the assignor's choice; every one
	// must keep its dir.
	var kept, removed, standbys []string
	waitFor(t, 90*time.Second, "a's dirs: those of its tasks kept, at least one other deleted", func() bool {
		st := a.Stats()
		if st.State != streams.Running || st.StateDirsCleaned == 0 {
			return false
		}
		owned := map[string]bool{}
		for _, ts := range st.Tasks {
			owned[ts.ID.String()] = true
		}
		standbys = nil
		for _, sb := range st.Standbys {
			owned[sb.ID.String()] = true
			standbys = append(standbys, sb.ID.String())
		}
		if !settled(a, 3, owned) {
			return false
		}
		on := taskDirs(t, root)
		kept, removed = nil, nil
		for _, id := range all {
			switch {
			case owned[id] && !slices.Contains(on, id):
				return false // an owned task without its dir: not settled yet
			case !owned[id] && !slices.Contains(on, id):
				removed = append(removed, id)
			case owned[id]:
				kept = append(kept, id)
			}
		}
		return len(kept) > 0 && len(removed) > 0 && int64(len(removed)) <= st.StateDirsCleaned
	})
	t.Logf("a kept the dirs of its tasks %v (standbys %v) and deleted those of %v", kept, standbys, removed)
}

// settled reports whether the last rebalance had members in the group
// and gave a exactly the tasks in owned, actives and replicas, all of
// them started.
func settled(a *streams.App, members int, owned map[string]bool) bool {
	ms := a.Members()
	if len(ms) != members {
		return false
	}
	for _, m := range ms {
		if m.InstanceID != a.Stats().InstanceID {
			continue
		}
		planned := slices.Concat(m.Active, m.Standby, m.Warmup)
		if len(planned) != len(owned) {
			return false
		}
		for _, id := range planned {
			if !owned[id.String()] {
				return false
			}
		}
		return true
	}
	return false
}

// taskDirs lists the task directories under an application's state dir.
func taskDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
