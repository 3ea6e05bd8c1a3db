package streams_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// staticEvents counts one instance's task moves and keeps its restores.
type staticEvents struct {
	mu       sync.Mutex
	assigned int
	revoked  int
	restores []streams.RestoreEvent
}

func (e *staticEvents) OnTaskAssigned(streams.TaskEvent)       { e.mu.Lock(); e.assigned++; e.mu.Unlock() }
func (e *staticEvents) OnTaskRevoked(streams.TaskEvent)        { e.mu.Lock(); e.revoked++; e.mu.Unlock() }
func (e *staticEvents) OnRestoreStart(streams.RestoreEvent)    {}
func (e *staticEvents) OnRestoreProgress(streams.RestoreEvent) {}
func (e *staticEvents) OnRestoreEnd(ev streams.RestoreEvent) {
	e.mu.Lock()
	e.restores = append(e.restores, ev)
	e.mu.Unlock()
}

func (e *staticEvents) moves() (assigned, revoked int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.assigned, e.revoked
}

// staticInstance is one static member of TestStaticMemberRestartKeepsItsTasks.
type staticInstance struct {
	id     string
	dir    string
	events *staticEvents
	app    *streams.App
	stop   func() error
}

// TestStaticMemberRestartKeepsItsTasks closes a static member, which
// keeps its membership, and starts it again with the same InstanceID and
// state dir within the session timeout: it gets back exactly the tasks it
// had, in the same group generation (no rebalance), the other members see
// no task move, its stores restore nothing before the checkpoints its
// close committed, and every click is counted exactly once. It restarts
// the first member to join, the group's leader (whose client balances
// again and compares, KIP-814), and the last.
func TestStaticMemberRestartKeepsItsTasks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim int
	}{{"leader", 0}, {"follower", 2}} {
		t.Run(tc.name, func(t *testing.T) { testStaticRestart(t, tc.victim) })
	}
}

func testStaticRestart(t *testing.T, victim int) {
	const (
		partitions = 6
		users      = 60
		first      = 3000
		second     = 1200
		changelog  = "static-restart-clicks-per-user-changelog"
	)
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	root := t.TempDir()
	start := func(in *staticInstance) {
		cfg := testConfig(b, "static-restart")
		cfg.StaticMembership = true
		cfg.InstanceID = in.id
		cfg.StateDir = in.dir
		// Far longer than the test: the group moves nothing unless
		// a rebalance does.
		cfg.SessionTimeout = 30 * time.Second
		cfg.Hooks = []streams.Hook{in.events}
		app, err := streams.New(countTopology(t, false), cfg)
		if err != nil {
			t.Fatal(err)
		}
		in.app, in.stop = app, runApp(t, app)
	}
	var group []*staticInstance
	for i := range 3 {
		in := &staticInstance{id: fmt.Sprintf("static-%d", i+1), dir: fmt.Sprintf("%s/%d", root, i+1), events: &staticEvents{}}
		group = append(group, in)
		start(in)
		// One at a time, so that the first is the leader.
		waitFor(t, time.Minute, in.id+" running", func() bool { return in.app.State() == streams.Running })
	}
	tasksOf := func(in *staticInstance) []string { return taskIDs(in.app.Stats()) }
	total := func() int64 {
		var n int64
		for u := range users {
			for _, in := range group {
				if v, ok, err := in.app.Get("clicks-per-user", fmt.Sprintf("user-%02d", u)); err == nil && ok {
					n += v.(int64)
				}
			}
		}
		return n
	}
	settled := func() bool {
		n := 0
		for _, in := range group {
			if in.app.State() != streams.Running {
				return false
			}
			n += len(tasksOf(in))
		}
		return n == partitions
	}
	waitFor(t, time.Minute, "every task running, spread over the group", func() bool {
		if !settled() {
			return false
		}
		for _, in := range group {
			if len(tasksOf(in)) == 0 {
				return false
			}
		}
		return true
	})
	produceClicks(t, b, 0, first, users)
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d clicks counted", first), func() bool { return total() == first })

	v := group[victim]
	had := tasksOf(v)
	gens := make([]int32, len(group))
	moves := make([][2]int, len(group))
	for i, in := range group {
		gens[i] = streams.GroupGeneration(in.app)
		moves[i][0], moves[i][1] = in.events.moves()
	}
	if err := v.stop(); err != nil {
		t.Fatalf("closing %s: %v", v.id, err)
	}
	// The close committed the victim's state: its checkpoints are at the
	// changelog's end, and a restore must start there.
	atClose := endOffsets(t, b, changelog)
	// Clicks arrive while the victim is away; its partitions wait.
	produceClicks(t, b, first, second, users)

	restarted := &staticInstance{id: v.id, dir: v.dir, events: &staticEvents{}}
	start(restarted)
	group[victim] = restarted
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d clicks counted", first+second), func() bool { return total() == first+second })

	if got := tasksOf(restarted); !slices.Equal(got, had) {
		t.Errorf("%s came back with tasks %v, want the %v it had", v.id, got, had)
	}
	if got := streams.GroupGeneration(restarted.app); got != gens[victim] {
		t.Errorf("%s came back in generation %d, want %d: the group rebalanced", v.id, got, gens[victim])
	}
	for i, in := range group {
		if i == victim {
			continue
		}
		if got := streams.GroupGeneration(in.app); got != gens[i] {
			t.Errorf("%s is in generation %d, want %d: the group rebalanced", in.id, got, gens[i])
		}
		if a, r := in.events.moves(); a != moves[i][0] || r != moves[i][1] {
			t.Errorf("%s saw %d assignments and %d revocations during the restart, want none", in.id, a-moves[i][0], r-moves[i][1])
		}
	}
	restarted.events.mu.Lock()
	restores := slices.Clone(restarted.events.restores)
	restarted.events.mu.Unlock()
	for _, r := range restores {
		if r.StartOffset < atClose[r.Partition] {
			t.Errorf("task %s restored %s/%d from offset %d, before the checkpoint at %d its close committed",
				r.Task, r.Changelog, r.Partition, r.StartOffset, atClose[r.Partition])
		}
	}
	// Exactly once: the close committed everything it processed.
	if got := total(); got != first+second {
		t.Errorf("%d clicks counted, want %d", got, first+second)
	}
}
