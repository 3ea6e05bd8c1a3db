package monitor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/streams"
)

// TestFailoverShowsProjection runs a Supervisor of two instances with one
// standby per task on the embedded broker, under steady input, and
// crashes one once the monitor says losing it is safe: the failover keeps
// the projection made before the crash, safe, and the measured downtime is
// within it.
func TestFailoverShowsProjection(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "readings", 2)
	createTopic(t, b, "window-counts", 2)
	topo := windowTopology(t)

	const dep = "projection"
	m := New(Options{PublishInterval: 50 * time.Millisecond})
	src := &lateSource{}
	cfg := streams.Config{ApplicationID: "mon-projection", Brokers: b.Addrs(), CommitInterval: 100 * time.Millisecond,
		SessionTimeout: 3 * time.Second, StandbyReplicas: 1, StateDir: t.TempDir(), Logger: discardLogger()}
	hook := m.AddDeployment(DeploymentInfo{ID: dep, ApplicationID: cfg.ApplicationID, Instances: 2, Standbys: 1,
		Guarantee: "at-least-once", CommitInterval: cfg.CommitInterval, Topology: topo}.
		WithFailureSettings(cfg, streams.DetectedBySupervisor), src)
	cfg.Hooks = []streams.Hook{hook}
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
	stopInput := steadyReadings(t, b)
	defer stopInput()

	state := func() string { return describe(findDeployment(m.Snapshot(), dep)) }
	var d *Deployment
	waitForState(t, 60*time.Second, "each instance running one active task, with a caught-up standby of the other's, and said safe to lose", func() bool {
		d = findDeployment(m.Snapshot(), dep)
		if d == nil || len(d.Instances) != 2 {
			return false
		}
		for _, in := range d.Instances {
			if in.State != "running" || len(in.Tasks) != 2 || in.Tasks[0].Role != "active" || in.Tasks[1].Role != "standby" ||
				in.Risk == nil || !in.Risk.Safe {
				return false
			}
		}
		return true
	}, state)
	victim := d.Instances[0]
	r := victim.Risk
	t.Logf("risk of %s before the crash: %+v", victim.ID, *r)
	if len(r.Tasks) != 1 || r.Tasks[0].Task != victim.Tasks[0].ID || r.Tasks[0].Replica != d.Instances[1].ID ||
		r.DetectedBy != streams.DetectedBySupervisor || r.ProjectedDowntimeMs <= 0 {
		t.Fatalf("risk %+v, want task %s covered by the standby on %s, detected by the supervisor", *r, victim.Tasks[0].ID, d.Instances[1].ID)
	}

	if err := sup.Crash(victim.ID); err != nil {
		t.Fatal(err)
	}
	var f Failover
	waitForState(t, 60*time.Second, "the failover", func() bool {
		d = findDeployment(m.Snapshot(), dep)
		if len(d.Failovers) == 0 {
			return false
		}
		f = d.Failovers[0]
		return true
	}, state)
	t.Logf("failover %+v", f)
	if f.From != victim.ID || f.Replica != "standby" || f.DetectedBy != streams.DetectedBySupervisor {
		t.Errorf("failover %+v, want one from %s onto its standby, detected by the supervisor", f, victim.ID)
	}
	if !f.ProjectedSafe || f.ProjectedDowntimeMs <= 0 {
		t.Errorf("failover %+v: the projection before the crash should say safe, with a downtime", f)
	}
	if f.DowntimeMs > f.ProjectedDowntimeMs {
		t.Errorf("measured downtime %d ms is beyond the projected %d ms", f.DowntimeMs, f.ProjectedDowntimeMs)
	}
	fo := eventsOf(m.Events(0), kindTaskFailedOver)
	if len(fo) != 1 || !projected(fo[0].Detail, f.ProjectedDowntimeMs) {
		t.Errorf("task-failed-over events %+v, want one with the projection", fo)
	}
}

// steadyReadings writes a reading per key every 20 ms, a tenth of a
// second of event time apart, until stopped: a task is down only while
// the failover lasts.
func steadyReadings(t *testing.T, b interface{ Addrs() []string }) (stop func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for off := int64(0); ; off += 100 {
			var recs []*kgo.Record
			for k := range readingKeys {
				recs = append(recs, &kgo.Record{Topic: "readings", Key: []byte(fmt.Sprintf("sensor-%d", k)),
					Value: []byte("r"), Timestamp: time.UnixMilli(t0 + off)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil && ctx.Err() == nil {
				t.Errorf("producing: %v", err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { cancel(); <-done; cl.Close() })
	}
	t.Cleanup(stop)
	return stop
}

// projected reports whether a task-failed-over event's detail carries a
// safe projection of ms.
func projected(d EventDetail, ms int64) bool {
	fo, ok := d.(TaskFailedOverDetail)
	return ok && fo.ProjectedDowntimeMs != nil && *fo.ProjectedDowntimeMs == ms && fo.ProjectedSafe != nil && *fo.ProjectedSafe
}
