package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/braidstream/braid/runtime/streams"
)

// TestSupervisorEndToEnd monitors a real deployment: a broker (brokertest)
// and a Supervisor with two instances and one standby per task running a
// windowed count, with the monitor's hook in its config and the
// Supervisor as its Source. The snapshot shows both instances with their
// active and standby tasks, stream time and open windows; the log and a
// subscriber see assignments and window closes; a crash shows as a
// failover, and records late for a window closed before it are counted on
// the new owner.
func TestSupervisorEndToEnd(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "readings", 2)
	createTopic(t, b, "window-counts", 2)
	topo := windowTopology(t)

	const dep = "window-counts"
	m := New(Options{PublishInterval: 50 * time.Millisecond})
	src := &lateSource{}
	hook := m.AddDeployment(DeploymentInfo{ID: dep, Design: "design-1", DesignName: "Window counts", Revision: 3,
		ApplicationID: "mon-e2e", Instances: 2, Standbys: 1, Guarantee: "at-least-once",
		CommitInterval: 100 * time.Millisecond, Topology: topo}, src)
	sub := collect(t, m.Subscribe())

	cfg := streams.Config{ApplicationID: "mon-e2e", Brokers: b.Addrs(), CommitInterval: 100 * time.Millisecond,
		SessionTimeout: 3 * time.Second, StandbyReplicas: 1, StateDir: t.TempDir(), NodeMetrics: true,
		Logger: discardLogger(), Hooks: []streams.Hook{hook}}
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{Config: cfg, Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	src.sup.Store(sup)
	runMonitor(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})

	// Settled on empty changelogs first, so that the tasks spread over
	// both instances and stay.
	settled := func(d *Deployment) bool {
		if d == nil || len(d.Instances) != 2 {
			return false
		}
		for _, in := range d.Instances {
			if in.State != "running" || len(in.Tasks) != 2 || in.Tasks[0].Role != "active" || in.Tasks[1].Role != "standby" {
				return false
			}
		}
		return true
	}
	state := func() string {
		var sb strings.Builder
		sb.WriteString(describe(findDeployment(m.Snapshot(), dep)))
		for _, e := range m.Events(0) {
			sb.WriteString(e.Kind + " " + e.Instance + " " + e.Task + ": " + e.Message + "\n")
		}
		return sb.String()
	}
	waitForState(t, 60*time.Second, "one active and one standby task on each instance", func() bool {
		return settled(findDeployment(m.Snapshot(), dep))
	}, state)

	var offsets []int64
	for off := int64(0); off <= 24_000; off += 1000 {
		offsets = append(offsets, off)
	}
	produceReadings(t, b, offsets...)
	// [0,10 s) closes at 15 s on both tasks; [10,20 s) and [20,30 s) stay
	// open.
	var d *Deployment
	waitForState(t, 60*time.Second, "both active tasks at 24 s with every record processed, and their standbys caught up", func() bool {
		snap := m.Snapshot()
		d = findDeployment(snap, dep)
		if !settled(d) {
			return false
		}
		var processed int64
		for _, in := range d.Instances {
			a, s := in.Tasks[0], in.Tasks[1]
			// Windows are sampled after the stats: both must show the
			// records processed.
			if a.Role != "active" || a.State != "running" || a.StreamTime != t0+24_000 || a.Lag != 0 || len(a.Windows) != 2 {
				return false
			}
			if s.Role != "standby" || s.State != "standby" || s.StandbyLag == nil || s.StandbyLag.Records != 0 {
				return false
			}
			processed += a.Processed
		}
		return processed == int64(len(offsets)*readingKeys) && len(eventsOf(m.Events(0), kindWindowClosed)) >= 2
	}, state)
	keys := map[int64]int{}
	for _, in := range d.Instances {
		a := in.Tasks[0]
		if in.Tasks[0].ID == in.Tasks[1].ID {
			t.Errorf("%s holds the standby of its own active task %s", in.ID, a.ID)
		}
		for _, w := range a.Windows {
			if w.Store != "per-window" || w.End-w.Start != 10_000 || w.ClosesAt != w.End+5_000 || w.Keys <= 0 {
				t.Errorf("%s task %s: window %+v, want a 10 s window of per-window closing 5 s (the grace) after its end", in.ID, a.ID, w)
			}
			keys[w.Start-t0] += w.Keys
		}
	}
	if len(keys) != 2 || keys[10_000] != readingKeys || keys[20_000] != readingKeys {
		t.Errorf("open windows hold keys %v by start, want %d keys in each of [10 s, 20 s) and [20 s, 30 s)", keys, readingKeys)
	}
	if len(d.Nodes) == 0 {
		t.Error("no node rates with NodeMetrics on")
	}
	if d.CommitIntervalMs != 100 {
		t.Errorf("commitIntervalMs %d, want 100", d.CommitIntervalMs)
	}

	events := m.Events(0)
	if n := len(eventsOf(events, kindTaskAssigned)); n < 2 {
		t.Errorf("%d task-assigned events, want at least 2", n)
	}
	if n := len(eventsOf(events, kindDeploymentAdded)); n != 1 {
		t.Errorf("%d deployment-added events, want 1", n)
	}
	if n := len(eventsOf(events, kindStandbyStarted)); n < 2 {
		t.Errorf("%d standby-started events, want at least 2", n)
	}
	if n := len(eventsOf(events, kindRebalance)); n < 2 {
		t.Errorf("%d rebalance events, want at least one per instance", n)
	}
	wantClose := fmt.Sprintf("window [%s, %s) of per-window closed at stream time %s", clock(t0), clock(t0+10_000), clock(t0+15_000))
	for _, e := range eventsOf(events, kindWindowClosed) {
		if !strings.HasPrefix(e.Message, wantClose) || e.Task == "" || e.Instance == "" || e.Detail.(WindowClosedDetail).ClosesAt != t0+15_000 {
			t.Errorf("window-closed event %+v, want message %q...", e, wantClose)
		}
	}
	for i := 1; i < len(events); i++ {
		if events[i].Seq != events[i-1].Seq+1 {
			t.Fatalf("event seqs %d then %d", events[i-1].Seq, events[i].Seq)
		}
	}
	waitFor(t, 5*time.Second, "the subscriber's window-closed events", func() bool { return len(sub.events(kindWindowClosed)) >= 2 })
	if msgs := sub.messages(); msgs[0].Type != "snapshot" || msgs[0].Snapshot == nil {
		t.Errorf("the subscriber's first message is %+v, want a snapshot", msgs[0])
	}

	// The standbys catch up as soon as the changelog records are written,
	// a moment before the input offsets are committed: a crash in between
	// would replay the victim's task from its last commit, and count its
	// replayed records late too.
	adm := kadm.NewClient(newClient(t, b))
	waitForState(t, 60*time.Second, "the group's commit of every reading", func() bool {
		return readingsCommitted(adm, "mon-e2e")
	}, state)

	// Crash the instance running the first task.
	victim := d.Instances[0].ID
	moved := d.Instances[0].Tasks[0].ID
	if err := sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	m.InstanceEvent(dep, victim, "crashed")
	// Late for the closed [0,10 s) on both tasks, then on to 26 s.
	produceReadings(t, b, 1000, 26_000)
	var f Failover
	waitForState(t, 60*time.Second, "the failover in the snapshot and 6 late records counted", func() bool {
		d = findDeployment(m.Snapshot(), dep)
		if len(d.Failovers) == 0 {
			return false
		}
		f = d.Failovers[len(d.Failovers)-1]
		var late int64
		for _, in := range d.Instances {
			for _, task := range in.Tasks {
				late += task.LateDrops
			}
		}
		return late == readingKeys
	}, state)
	t.Logf("failover %+v", f)
	if f.Task != moved || f.From != victim || f.To == victim || f.Cause != "crash" || f.Replica != "standby" || f.At == 0 ||
		f.DetectedBy != streams.DetectedBySupervisor {
		t.Errorf("failover %+v, want task %s from %s to the other instance, caused by a crash the supervisor detected, onto its standby",
			f, moved, victim)
	}
	if tls := d.Timelines; len(tls) != 1 || tls[0].Cause != "crash" || tls[0].Instance != victim || len(tls[0].Tasks) != 1 ||
		tls[0].Tasks[0].Task != f.Task || tls[0].Tasks[0].To != f.To || tls[0].Tasks[0].DetectionMs != f.DetectionMs ||
		tls[0].Tasks[0].RecoveryMs != f.RecoveryMs || tls[0].Tasks[0].DowntimeMs != f.DowntimeMs {
		t.Errorf("timelines %+v, want one of the crash of %s with a lane for %s whose numbers are the failover's", tls, victim, moved)
	}
	if in := findInstance(d, victim); in == nil || in.State != "crashed" || len(in.Tasks) != 0 {
		t.Errorf("crashed instance %+v", in)
	}
	var countNode NodeRate
	for _, st := range topo.Stores() {
		countNode = d.Nodes[st.Processor]
	}
	if countNode.LateDrops != readingKeys {
		t.Errorf("the counting node shows %d late drops, want %d (nodes %v)", countNode.LateDrops, readingKeys, d.Nodes)
	}
	events = m.Events(0)
	fo := eventsOf(events, kindTaskFailedOver)
	if len(fo) != 1 || fo[0].Task != moved || fo[0].Instance != f.To || !strings.Contains(fo[0].Message, "after a crash") {
		t.Errorf("task-failed-over events %+v, want one for task %s", fo, moved)
	}
	if n := len(eventsOf(events, "instance-crashed")); n != 1 {
		t.Errorf("%d instance-crashed events, want 1", n)
	}
	if late := eventsOf(events, kindLateDrop); len(late) == 0 || late[0].Detail.(LateDropDetail).Timestamp != t0+1000 {
		t.Errorf("late-drop events %+v, want the reading at 1 s", late)
	} else {
		t.Logf("late drop: %s", late[0].Message)
	}
	waitFor(t, 5*time.Second, "the subscriber's failover event", func() bool { return len(sub.events(kindTaskFailedOver)) == 1 })
	if len(d.Throughput) == 0 {
		t.Error("no throughput points")
	}

	type want struct {
		name string
		kv   []string
		// value is the series' value, or -1 for any.
		value float64
	}
	wants := []want{
		{"braid_failovers_total", []string{"instance", victim, "task", moved}, 1},
		{"braid_stream_time_ms", []string{"instance", f.To, "task", moved}, float64(t0 + 26_000)},
		{"braid_records_dropped_late_total", []string{"instance", f.To, "task", moved, "store", "per-window"}, readingKeys / 2},
		{"braid_commit_latency_ms", []string{"instance", f.To}, -1},
	}
	var text string
	waitForState(t, 10*time.Second, "the metrics of the moved task", func() bool {
		var fams map[string]*dto.MetricFamily
		fams, text = scrape(t, m)
		for _, w := range wants {
			mf := fams[w.name]
			if mf == nil {
				return false
			}
			v, ok := seriesValue(mf, append([]string{"deployment", dep}, w.kv...)...)
			if !ok || w.value >= 0 && v != w.value {
				return false
			}
		}
		return true
	}, func() string { return text })

	js, err := json.Marshal(Message{Type: "snapshot", Snapshot: &Snapshot{Deployments: []Deployment{*d}}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Snapshot struct {
			Deployments []struct {
				ID               string            `json:"id"`
				CommitIntervalMs int64             `json:"commitIntervalMs"`
				Instances        []json.RawMessage `json:"instances"`
			} `json:"deployments"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.Snapshot.Deployments) != 1 || len(back.Snapshot.Deployments[0].Instances) != 2 {
		t.Errorf("snapshot JSON %s: %v", js, err)
	}
}
