package streams_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCooperativeRebalanceNeverStopsStayingTasks adds a second instance
// to a stateful count and then stops it, under each protocol and each
// guarantee. The tasks that stay on the first instance through both
// rebalances are never suspended under the cooperative protocol, and are
// under the eager one, so that the test can fail: and so the state changes
// that end the rebalances tell them kept (StateChange.Kept) under eager
// alone. Every count comes out
// complete either way, and exact under exactly-once.
func TestCooperativeRebalanceNeverStopsStayingTasks(t *testing.T) {
	for _, guarantee := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		for _, protocol := range []streams.RebalanceProtocol{streams.RebalanceCooperative, streams.RebalanceEager} {
			t.Run(guarantee.String()+"/"+protocol.String(), func(t *testing.T) { testStayingTasks(t, guarantee, protocol) })
		}
	}
}

func testStayingTasks(t *testing.T, guarantee streams.Guarantee, protocol streams.RebalanceProtocol) {
	const partitions, users, clicks = 6, 30, 3000
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	kept := &keptTasks{}
	newApp := func(instance string) *streams.App {
		cfg := testConfig(b, "coop")
		cfg.InstanceID = instance
		if instance == "app-1" {
			cfg.Hooks = append(cfg.Hooks, kept)
		}
		cfg.StateDir = t.TempDir()
		cfg.SessionTimeout = 3 * time.Second
		cfg.RebalanceProtocol = protocol
		cfg.ProcessingGuarantee = guarantee
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

	// Told before counted: every task told kept was suspended first.
	told := kept.count(staying)
	suspended := streams.Suspensions(app1)
	stopped := 0
	for id := range staying {
		stopped += suspended[id]
	}
	t.Logf("%s: the staying tasks %v were suspended %d times in all (per task: %v)", protocol, staying, stopped, suspended)
	switch protocol {
	case streams.RebalanceCooperative:
		if stopped != 0 || told != 0 {
			t.Errorf("cooperative: the tasks that stayed on app 1 were suspended %d times, told kept %d times, want none: %v", stopped, told, suspended)
		}
	case streams.RebalanceEager:
		if stopped == 0 {
			t.Error("eager: the tasks that stayed on app 1 were never suspended; the test cannot tell the protocols apart")
		}
		if told == 0 || told > stopped {
			t.Errorf("eager: the tasks that stayed on app 1 were suspended %d times, told kept by the changes to Running %d times", stopped, told)
		}
	}
	waitFor(t, 60*time.Second, "every count complete on app 1", func() bool {
		for u := range users {
			v, ok, err := app1.Get("clicks-per-user", fmt.Sprintf("user-%02d", u))
			if err != nil || !ok || v.(int64) < clicks/users {
				return false
			}
		}
		return true
	})
	if guarantee != streams.ExactlyOnce {
		return
	}
	for u := range users {
		user := fmt.Sprintf("user-%02d", u)
		if v, _, _ := app1.Get("clicks-per-user", user); v.(int64) != clicks/users {
			t.Errorf("exactly-once: %s counted %d clicks, want %d", user, v, clicks/users)
		}
	}
}

// TestCooperativeStayingTasksRunThroughScaleProbeAndCrash runs the
// high-availability group through an added instance, which has no state
// and so gets its tasks only through warm-ups and a probing rebalance, and
// then through a crash. In each step, a task that was never revoked from
// its instance was never suspended there either, and no click is lost.
func TestCooperativeStayingTasksRunThroughScaleProbeAndCrash(t *testing.T) {
	g := startHAGroup(t, "ha-coop", 1, func(c *streams.Config) { c.ProbingRebalanceInterval = time.Second })
	staying := 0
	snap := g.snapshotTasks() // after the group's start, whose joins moved tasks
	added, err := g.sup.Add()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, added+" running tasks, every task with its standby", func() bool {
		return len(g.activeOn(added)) > 0 && g.settled(1)
	})
	staying += g.checkStaying("the scale-out and the probe", snap, "")
	snap = g.snapshotTasks()
	const victim = "instance-1"
	if err := g.sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the survivors settled", func() bool { return g.settled(1) })
	staying += g.checkStaying("the crash", snap, victim)
	if staying == 0 {
		t.Error("no task stayed on its instance in any step: the test checked nothing")
	}
	g.checkNoLoss()
}

// taskSnapshot is, per instance, its active tasks with how often each was
// suspended and revoked there so far.
type taskSnapshot map[string]map[streams.TaskID][2]int

func (g *haGroup) snapshotTasks() taskSnapshot {
	out := taskSnapshot{}
	for _, in := range g.sup.Instances() {
		suspended := streams.SupervisedSuspensions(g.sup, in.ID)
		out[in.ID] = map[streams.TaskID][2]int{}
		for _, task := range g.activeOn(in.ID) {
			out[in.ID][task] = [2]int{suspended[task], len(g.events.revocationsOf(in.ID, task))}
		}
	}
	return out
}

// checkStaying checks that the tasks that stayed on their instance since
// before were never suspended, and returns how many stayed.
func (g *haGroup) checkStaying(step string, before taskSnapshot, skip string) int {
	g.t.Helper()
	staying := 0
	for id, now := range g.snapshotTasks() {
		if id == skip {
			continue
		}
		for task, counts := range now {
			was, ok := before[id][task]
			if !ok || counts[1] > was[1] {
				continue // arrived, or left and came back
			}
			staying++
			if n := counts[0] - was[0]; n != 0 {
				g.t.Errorf("%s: task %s stayed on %s but was suspended %d times", step, task, id, n)
			}
		}
	}
	g.t.Logf("%s: %d tasks stayed on their instance", step, staying)
	return staying
}

// keptTasks records the tasks the changes to Running say a rebalance kept.
type keptTasks struct {
	mu   sync.Mutex
	kept map[streams.TaskID]int
}

func (k *keptTasks) OnStateChange(ev streams.StateChange) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[streams.TaskID]int{}
	}
	for _, id := range ev.Kept {
		k.kept[id]++
	}
}

// count is how many times the tasks were told kept.
func (k *keptTasks) count(tasks map[streams.TaskID]bool) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for id := range tasks {
		n += k.kept[id]
	}
	return n
}
