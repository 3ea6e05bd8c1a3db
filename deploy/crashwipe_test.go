package deploy_test

import (
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/monitor"
)

// TestCrashWipeRestoresFromTheChangelog deploys the orders-windowed design
// on one instance, feeds it, and crashes the instance with its disk: the
// timeline says instance-crash-wiped, the instance runs again, and its
// store restores from offset 0 of the changelog, which a crash that keeps
// the disk never does.
func TestCrashWipeRestoresFromTheChangelog(t *testing.T) {
	h := start(t)
	info, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 1, Standbys: new(0)})
	if err != nil {
		t.Fatal(err)
	}
	topic := info.SourceTopics[0]
	if err := h.m.StartGenerator(h.design, deploy.GeneratorSpec{Topic: topic, Rate: 500, Keys: 20, KeyPrefix: "customer", Template: orderTemplate}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "customer-1's windows committed", func() bool {
		r, err := h.m.Query(h.design, deploy.Query{Store: "big-orders-per-10s", Key: "customer-1"})
		return err == nil && r.Found
	})
	if err := h.m.StopGenerator(h.design, topic); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for _, ev := range h.mon.Events(0) {
		seq = ev.Seq
	}
	if err := h.m.CrashWipe(h.design, "instance-1"); err != nil {
		t.Fatal(err)
	}
	var started, progress []monitor.Event
	finished := map[string]monitor.Event{}
	wiped := false
	waitFor(t, time.Minute, "the wiped instance's restore finished", func() bool {
		for _, ev := range h.mon.Events(seq) {
			seq = ev.Seq
			switch ev.Kind {
			case "instance-crash-wiped":
				wiped = ev.Instance == "instance-1"
			case "restore-started":
				started = append(started, ev)
			case "restore-progress":
				progress = append(progress, ev)
			case "restore-finished":
				finished[ev.Task] = ev
			}
		}
		return len(started) > 0 && len(finished) == len(started)
	})
	if !wiped {
		t.Error("no instance-crash-wiped event for instance-1")
	}
	for _, ev := range started {
		if d, _ := ev.Detail.(monitor.RestoreStartedDetail); d.StartOffset != 0 || d.EndOffset <= 0 {
			t.Errorf("restore %s: from %v to %v, want from 0 to the changelog's end", ev.Message, d.StartOffset, d.EndOffset)
		}
		// Records of windows past the store's retention are read, not
		// applied: some, not all, are restored.
		if d, _ := finished[ev.Task].Detail.(monitor.RestoreFinishedDetail); d.Restored <= 0 {
			t.Errorf("restore %s ended with %v records restored, want some", ev.Message, d.Restored)
		}
	}
	// Each restore tells its progress at least once, with its task's
	// totals, between start and finish.
	if len(progress) < len(started) {
		t.Errorf("%d restore-progress events for %d restores, want one each at least", len(progress), len(started))
	}
	for _, ev := range progress {
		if d, ok := ev.Detail.(monitor.RestoreProgressDetail); !ok || d.Total <= 0 {
			t.Errorf("restore-progress %s: detail %+v, want the task's restored, total, rate and etaMs", ev.Message, ev.Detail)
		}
	}
	// The restore's end is not the rebalance's: the instance may still
	// say rebalancing for a moment after.
	waitFor(t, 30*time.Second, "instance-1 running after the crash-wipe", func() bool {
		d, _ := h.deployment(h.design)
		return len(d.Instances) == 1 && d.Instances[0].State == "running"
	})
}
