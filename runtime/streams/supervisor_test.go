package streams_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

func TestSupervisorConfigErrors(t *testing.T) {
	topo := countTopology(t, true)
	if _, err := streams.NewSupervisor(nil, streams.SupervisorConfig{}); err == nil || !strings.Contains(err.Error(), "topology is nil") {
		t.Errorf("nil topology: %v", err)
	}
	_, err := streams.NewSupervisor(topo, streams.SupervisorConfig{Instances: -1})
	if err == nil || !strings.Contains(err.Error(), "Instances: -1 is negative") {
		t.Errorf("negative instances: %v", err)
	}
	_, err = streams.NewSupervisor(topo, streams.SupervisorConfig{Config: streams.Config{StandbyReplicas: -1}})
	for _, want := range []string{"ApplicationID", "Brokers", "StandbyReplicas"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad config: %v, want it to name %s", err, want)
		}
	}
	// Every problem at once: the supervisor's own and the Config's.
	_, err = streams.NewSupervisor(topo, streams.SupervisorConfig{Instances: 2, InstanceIDs: []string{"a", "", "a/b", "a"}})
	for _, want := range []string{
		"Instances: 2 does not match the 4 InstanceIDs", "InstanceIDs: id 1 is empty",
		`InstanceIDs: id "a/b" names no directory`, `InstanceIDs: id "a" is given twice`, "ApplicationID",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad instance ids: %v, want it to say %s", err, want)
		}
	}
}

// TestSupervisorInstanceIDs: InstanceIDs name the instances Run starts,
// and Add names the next ones after InstancePrefix, skipping ids taken.
func TestSupervisorInstanceIDs(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	cfg := testConfig(b, "named")
	cfg.StateDir = t.TempDir()
	sup, err := streams.NewSupervisor(countTopology(t, true), streams.SupervisorConfig{Config: cfg, InstancePrefix: "node", InstanceIDs: []string{"node-2"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	waitFor(t, 30*time.Second, "node-2 running both tasks", func() bool {
		in := sup.Instances()
		return len(in) == 1 && in[0].ID == "node-2" && len(in[0].Stats.Tasks) == 2
	})
	for _, want := range []string{"node-1", "node-3"} {
		if id, err := sup.Add(); err != nil || id != want {
			t.Errorf("Add = %q, %v; want %s", id, err, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestParseGuarantee(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		if got, err := streams.ParseGuarantee(g.String()); err != nil || got != g {
			t.Errorf("ParseGuarantee(%q) = %v, %v", g.String(), got, err)
		}
	}
	if _, err := streams.ParseGuarantee("at-most-once"); err == nil || err.Error() != `"at-most-once" is not at-least-once or exactly-once` {
		t.Errorf("ParseGuarantee(at-most-once) = %v", err)
	}
}

// TestSupervisorOperations walks one instance through every operation and
// checks that operations not allowed in its state are refused with typed
// errors.
func TestSupervisorOperations(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	cfg := testConfig(b, "supervised")
	cfg.StateDir = t.TempDir()
	sup, err := streams.NewSupervisor(countTopology(t, true), streams.SupervisorConfig{Config: cfg, InstancePrefix: "node"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Crash("node-1"); !errors.Is(err, streams.ErrSupervisorNotRunning) {
		t.Errorf("Crash before Run = %v, want ErrSupervisorNotRunning", err)
	}
	if _, err := sup.Add(); !errors.Is(err, streams.ErrSupervisorNotRunning) {
		t.Errorf("Add before Run = %v, want ErrSupervisorNotRunning", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	state := func(id string) streams.InstanceState {
		for _, in := range sup.Instances() {
			if in.ID == id {
				return in.State
			}
		}
		t.Fatalf("no instance %s", id)
		return 0
	}
	waitFor(t, 30*time.Second, "node-1 running both tasks", func() bool {
		in := sup.Instances()
		return len(in) == 1 && len(in[0].Stats.Tasks) == 2
	})

	var unknown *streams.UnknownInstanceError
	if err := sup.Stop("node-9"); !errors.As(err, &unknown) || unknown.ID != "node-9" {
		t.Errorf("Stop(node-9) = %v, want an UnknownInstanceError", err)
	}
	var wrong *streams.InstanceStateError
	if err := sup.Start("node-1"); !errors.As(err, &wrong) || wrong.State != streams.InstanceRunning || wrong.Op != "start" {
		t.Errorf("Start of a running instance = %v, want an InstanceStateError", err)
	}
	id, err := sup.Add()
	if err != nil || id != "node-2" {
		t.Fatalf("Add = %q, %v; want node-2", id, err)
	}
	waitFor(t, 30*time.Second, "one task on each node", func() bool {
		in := sup.Instances()
		return len(in) == 2 && len(in[0].Stats.Tasks) == 1 && len(in[1].Stats.Tasks) == 1
	})
	// Queries across the instances: every user's count, from the
	// instance that holds it.
	produceClicks(t, b, 0, 40, 4)
	waitFor(t, 30*time.Second, "every user counted", func() bool {
		rows := map[string]int64{}
		err := sup.Range("clicks-per-user", nil, nil, func(instance string, k, v any) bool {
			rows[k.(string)] = v.(int64)
			return true
		})
		return err == nil && len(rows) == 4 && rows["user-00"] == 10 && rows["user-03"] == 10
	})
	if r, err := sup.Lookup("clicks-per-user", "user-02"); err != nil || !r.Found || r.Value.(int64) != 10 || !strings.HasPrefix(r.Instance, "node-") {
		t.Errorf("Lookup(user-02) = %+v, %v", r, err)
	}
	if r, err := sup.Lookup("clicks-per-user", "nobody"); err != nil || r.Found {
		t.Errorf("Lookup(nobody) = %+v, %v", r, err)
	}
	members := sup.Members()
	if len(members) != 2 || members[0].InstanceID != "node-1" || members[1].InstanceID != "node-2" ||
		len(members[0].Active) != 1 || len(members[1].Active) != 1 || members[0].Active[0] == members[1].Active[0] {
		t.Errorf("Members() = %+v, want node-1 and node-2 with one task each", members)
	}
	if err := sup.Stop("node-2"); err != nil {
		t.Fatal(err)
	}
	if got := state("node-2"); got != streams.InstanceStopped {
		t.Errorf("node-2 is %v after Stop, want stopped", got)
	}
	if err := sup.Crash("node-2"); !errors.As(err, &wrong) || wrong.State != streams.InstanceStopped {
		t.Errorf("Crash of a stopped instance = %v, want an InstanceStateError", err)
	}
	if err := sup.Crash("node-1"); err != nil {
		t.Fatal(err)
	}
	if got := state("node-1"); got != streams.InstanceCrashed {
		t.Errorf("node-1 is %v after Crash, want crashed", got)
	}
	for _, id := range []string{"node-1", "node-2"} {
		if err := sup.Start(id); err != nil {
			t.Fatalf("Start(%s): %v", id, err)
		}
	}
	waitFor(t, 30*time.Second, "both nodes running a task again", func() bool {
		in := sup.Instances()
		return in[0].State == streams.InstanceRunning && in[1].State == streams.InstanceRunning &&
			len(in[0].Stats.Tasks) == 1 && len(in[1].Stats.Tasks) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, in := range sup.Instances() {
		if in.State != streams.InstanceStopped {
			t.Errorf("%s is %v after Run returned, want stopped", in.ID, in.State)
		}
	}
}

// TestNodeMetricsAndLag checks the counts Config.NodeMetrics adds and the
// consumer lag of input partitions.
func TestNodeMetricsAndLag(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	cfg := testConfig(b, "metered")
	cfg.StateDir, cfg.NodeMetrics = t.TempDir(), true
	app, err := streams.New(countTopology(t, false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	produceClicks(t, b, 0, 300, 3)
	var task streams.TaskStats
	waitFor(t, 30*time.Second, "300 clicks processed", func() bool {
		st := app.Stats()
		if len(st.Tasks) != 1 {
			return false
		}
		task = st.Tasks[0]
		return task.Processed == 300
	})
	nodes := map[string]streams.NodeStats{}
	for _, n := range task.Nodes {
		nodes[n.Name] = n
	}
	if len(nodes) != 4 {
		t.Fatalf("nodes %+v, want source, count, to-stream and sink", task.Nodes)
	}
	for name, n := range nodes {
		if n.In != 300 || (!strings.Contains(name, "SINK") && n.Out != 300) {
			t.Errorf("node %s: in %d, out %d; want 300 each (uncached count: one update per click)", name, n.In, n.Out)
		}
	}
	if p := task.Partitions[0]; p.EndOffset != 300 || p.Lag != 0 {
		t.Errorf("partition %+v: want end offset 300 and lag 0", p)
	}
}
