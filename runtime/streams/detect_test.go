package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSupervisedCrashIsDetectedAtOnce crashes one of three instances with
// a 30 s session timeout: the Supervisor removes the dead member, so every
// task it ran fails over long before the session could have timed out.
func TestSupervisedCrashIsDetectedAtOnce(t *testing.T) {
	g := startHAGroup(t, "detect-crash", 1, func(c *streams.Config) { c.SessionTimeout = 30 * time.Second })
	victim := "instance-1"
	moved := g.activeOn(victim)
	if len(moved) == 0 {
		t.Fatalf("%s runs no task", victim)
	}
	if err := g.sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	// Half the session timeout: only the removal can move the tasks
	// within it.
	events := g.failovers(moved, 15*time.Second)
	for _, id := range moved {
		ev := events[id]
		logFailover(t, ev)
		if ev.To == victim || ev.Cause != "crash" {
			t.Errorf("task %s moved %s -> %s for %q, want a crash moving it off %s", id, ev.From, ev.To, ev.Cause, victim)
		}
		if ev.DetectedBy != streams.DetectedBySupervisor {
			t.Errorf("task %s: detected by %q, want %q", id, ev.DetectedBy, streams.DetectedBySupervisor)
		}
	}
	g.checkNoLoss()
}

// TestExactlyOnceSupervisedCrashFencesTransaction crashes an instance
// under exactly-once with a 60 s transaction timeout: the Supervisor
// fences its transactional id, which aborts the transaction it left open,
// so read-committed readers of the output see records that arrive after
// the crash, on the crashed instance's partitions too, well before the
// broker would have aborted the transaction on its own.
func TestExactlyOnceSupervisedCrashFencesTransaction(t *testing.T) {
	g := startHAGroup(t, "detect-eos", 1, func(c *streams.Config) {
		c.ProcessingGuarantee = streams.ExactlyOnce
		c.SessionTimeout = 30 * time.Second
		c.TransactionTimeout = 60 * time.Second
		c.Logger = failureLog(t)
	})
	victim := "instance-2"
	moved := g.activeOn(victim)
	if len(moved) == 0 {
		t.Fatalf("%s runs no task", victim)
	}
	victimParts := map[int32]bool{}
	for _, id := range moved {
		victimParts[id.Partition] = true
	}
	if err := g.sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	g.stopInput() // the probes are all the input from here on
	// Keys new to the topology, enough to land on every partition: each
	// one's first count is a record written after the crash.
	var probes []*kgo.Record
	want := map[string]bool{}
	for i := range 6 * haPartitions {
		k := fmt.Sprintf("probe-%02d", i)
		want[k] = true
		probes = append(probes, &kgo.Record{Topic: "clicks", Key: []byte(k), Value: []byte("click")})
	}
	produce(t, g.b, probes...)

	cl := newClient(t, g.b, kgo.ConsumeTopics("click-counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	// Well under the transaction timeout: only the fence can release the
	// crashed instance's partitions in time.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seenOn := map[int32]bool{}
	for len(want) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("a read-committed reader of the output still waits for %d probe counts (of partitions %v, the crashed instance's %v) after 20 s; failovers so far: %+v",
				len(want), seenOn, victimParts, g.events.failoversOf(moved))
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if want[string(r.Key)] {
				delete(want, string(r.Key))
				seenOn[r.Partition] = true
			}
		})
	}
	for p := range victimParts {
		if !seenOn[p] {
			t.Errorf("no probe landed on partition %d of the crashed instance: the test proves nothing there", p)
		}
	}
	for _, ev := range g.failovers(moved, 15*time.Second) {
		logFailover(t, ev)
		if ev.DetectedBy != streams.DetectedBySupervisor {
			t.Errorf("task %s: detected by %q, want %q", ev.Task, ev.DetectedBy, streams.DetectedBySupervisor)
		}
	}
}
