package monitor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// allHooks is every hook interface AddDeployment's hook implements.
type allHooks interface {
	streams.TaskAssignedHook
	streams.TaskRevokedHook
	streams.CommitHook
	streams.StateChangeHook
	streams.ErrorHook
	streams.RestoreHook
	streams.WindowClosedHook
	streams.LateRecordHook
	streams.StreamTimeHook
	streams.StandbyHook
	streams.TaskResumedHook
	streams.FailoverHook
	streams.BrokerHook
	streams.SnapshotHook
}

func hooksOf(t testing.TB, h streams.Hook) allHooks {
	t.Helper()
	all, ok := h.(allHooks)
	if !ok {
		t.Fatalf("the hook %T does not implement every hook interface", h)
	}
	return all
}

const hookCalls = 1_000_000

// fire calls the hooks n times as fast as it can, in a goroutine, the way
// a busy App would: mostly window closes (each one logged), late records
// (rate-limited) and stream-time moves, over 8 tasks. It fails the test
// if the calls do not finish within the timeout, and returns their time.
func fire(t *testing.T, h allHooks, n int) time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for i := range n {
			task := streams.TaskID{Partition: int32(i % 8)}
			ts := t0 + int64(i)
			switch i % 4 {
			case 0, 1:
				h.OnWindowClosed(streams.WindowClosedEvent{InstanceID: "instance-1", Task: task, Store: "per-window",
					Start: ts - 10_000, End: ts, ClosesAt: ts + 5_000, StreamTime: ts + 5_000, Keys: 3, Emitted: true})
			case 2:
				h.OnLateRecordDropped(streams.LateRecordEvent{InstanceID: "instance-1", Task: task, Store: "per-window",
					Topic: "readings", Offset: int64(i), Timestamp: ts - 20_000, StreamTime: ts, WindowStart: ts - 30_000, WindowEnd: ts - 20_000})
			case 3:
				h.OnStreamTime(streams.StreamTimeEvent{InstanceID: "instance-1", Task: task, StreamTime: ts})
			}
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d hook calls did not complete in 2 minutes: the hooks block", n)
		return 0
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestStalledSubscriber fires a million hook events while a subscriber
// never reads: the hooks complete, its queue stays within
// SubscriberEvents, memory stays bounded, and when it finally reads it
// gets a snapshot saying how many events it missed, then the newest
// events.
func TestStalledSubscriber(t *testing.T) {
	m := New(Options{PublishInterval: 5 * time.Millisecond})
	runMonitor(t, m) // publishing snapshots all along
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "busy"}, &fakeSource{}))

	fire(t, h, hookCalls/10) // warm-up: the tasks' state, the log's entries
	alone := fire(t, h, hookCalls)
	t.Logf("%d hook calls without subscribers: %v (%v per call)", hookCalls, alone, alone/hookCalls)

	sub := m.Subscribe()
	defer sub.Close()
	before := heapInUse()
	stalled := fire(t, h, hookCalls)
	after := heapInUse()
	t.Logf("%d hook calls with a stalled subscriber: %v (%v per call)", hookCalls, stalled, stalled/hookCalls)
	growth := int64(after) - int64(before)
	t.Logf("heap %d KiB before, %d KiB after: %+d KiB", before>>10, after>>10, growth>>10)
	if growth > 64<<20 {
		t.Errorf("the heap grew by %d MiB with a stalled subscriber", growth>>20)
	}
	events, snaps := sub.pending()
	if events > m.opts.SubscriberEvents || snaps > 1 {
		t.Errorf("the stalled subscriber holds %d events and %d snapshots, want at most %d and 1", events, snaps, m.opts.SubscriberEvents)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Type != "snapshot" || msg.Snapshot == nil || msg.Snapshot.MissedEvents <= 0 {
		t.Fatalf("first message after the stall: %+v, want a snapshot with MissedEvents > 0", msg)
	}
	t.Logf("missed %d events", msg.Snapshot.MissedEvents)
	msg, err = sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Type != "event" || msg.Event.Kind != kindWindowClosed && msg.Event.Kind != kindLateDrop {
		t.Fatalf("second message %+v, want one of the newest events", msg)
	}
	last := m.Events(0)
	if newest := last[len(last)-1].Seq; newest-msg.Event.Seq >= uint64(m.opts.SubscriberEvents) {
		t.Errorf("after the snapshot came event %d, more than %d behind the newest, %d", msg.Event.Seq, m.opts.SubscriberEvents, newest)
	}
	sub.Close()
	if _, err := sub.Next(ctx); err == nil {
		t.Error("Next after Close returned no error")
	}
}

// TestSnapshotsCoalesce: a subscriber that reads slowly while snapshots
// are published every 5 ms never holds more than one, and the one it
// reads is the newest.
func TestSnapshotsCoalesce(t *testing.T) {
	m := New(Options{PublishInterval: 5 * time.Millisecond})
	m.AddDeployment(DeploymentInfo{ID: "quiet"}, &fakeSource{})
	sub := m.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The deployment-added event came before the subscription: first
	// the full snapshot, then nothing but snapshots.
	msg, err := sub.Next(ctx)
	if err != nil || msg.Type != "snapshot" || len(msg.Snapshot.Deployments) != 1 {
		t.Fatalf("first message %+v (%v), want a snapshot of the deployment", msg, err)
	}
	stop := runMonitor(t, m)
	published := 0
	var seen *Snapshot
	for range 40 {
		time.Sleep(5 * time.Millisecond)
		if events, snaps := sub.pending(); events != 0 || snaps > 1 {
			t.Fatalf("the slow subscriber holds %d events and %d snapshots, want one snapshot at most", events, snaps)
		}
		if l := m.latest.Load(); l != seen {
			seen = l
			published++
		}
	}
	stop()
	if published < 5 {
		t.Fatalf("only %d snapshots published in 200 ms", published)
	}
	msg, err = sub.Next(ctx)
	if err != nil || msg.Type != "snapshot" {
		t.Fatalf("slow read: %+v (%v), want a snapshot", msg, err)
	}
	if msg.Snapshot != m.latest.Load() {
		t.Errorf("the slow subscriber got a snapshot of %d, not the newest, of %d", msg.Snapshot.Time, m.latest.Load().Time)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if msg, err := sub.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the newest snapshot Next returned %+v (%v), want nothing pending", msg, err)
	}
}

// TestMessagesInOrder: events and snapshots reach a subscriber in the
// order they happened.
func TestMessagesInOrder(t *testing.T) {
	m := New(Options{})
	m.AddDeployment(DeploymentInfo{ID: "d"}, &fakeSource{})
	sub := m.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if msg, err := sub.Next(ctx); err != nil || msg.Type != "snapshot" {
		t.Fatalf("first message %+v (%v), want a snapshot", msg, err)
	}
	m.InstanceEvent("d", "instance-1", "started")
	m.publish()
	m.InstanceEvent("d", "instance-1", "stopped")
	var got []string
	for range 3 {
		msg, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Type == "event" {
			got = append(got, msg.Event.Kind)
		} else {
			got = append(got, msg.Type)
		}
	}
	want := "instance-started snapshot instance-stopped"
	if strings.Join(got, " ") != want {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// TestEventLogBounded: the log keeps the newest EventLogSize events and
// Events(since) returns those after since, oldest first.
func TestEventLogBounded(t *testing.T) {
	m := New(Options{EventLogSize: 100})
	for i := range 250 {
		m.InstanceEvent("d", fmt.Sprintf("instance-%d", i+1), "added")
	}
	check := func(since uint64, from, to uint64) {
		t.Helper()
		evs := m.Events(since)
		if want := int(to - from + 1); from > to && len(evs) != 0 || from <= to && len(evs) != want {
			t.Fatalf("Events(%d): %d events, want %d..%d", since, len(evs), from, to)
		}
		for i, e := range evs {
			if e.Seq != from+uint64(i) || e.Kind != "instance-added" || e.Instance != fmt.Sprintf("instance-%d", e.Seq) ||
				e.Message != "instance "+e.Instance+" added" || e.Time == 0 {
				t.Fatalf("Events(%d)[%d] = %+v", since, i, e)
			}
		}
	}
	check(0, 151, 250)
	check(10, 151, 250)
	check(150, 151, 250)
	check(200, 201, 250)
	check(249, 250, 250)
	check(250, 1, 0)
	check(1000, 1, 0)
}

// TestLateDropsRateLimited: a burst of late records logs at most 5
// events a second per task and counts every record; the next event
// logged says how many were not.
func TestLateDropsRateLimited(t *testing.T) {
	m := New(Options{})
	src := &fakeSource{}
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "d"}, src))
	task := streams.TaskID{Subtopology: 1, Partition: 2}
	src.set([]streams.InstanceInfo{{ID: "instance-1", State: streams.InstanceRunning,
		Stats: streams.Stats{State: streams.Running, Tasks: []streams.TaskStats{{ID: task, StreamTime: t0}}}}})
	late := func() {
		h.OnLateRecordDropped(streams.LateRecordEvent{InstanceID: "instance-1", Task: task, Store: "per-window",
			Timestamp: t0 - 20_000, StreamTime: t0, WindowStart: t0 - 30_000, WindowEnd: t0 - 20_000, Offset: -1})
	}
	for range 100 {
		late()
	}
	if n := len(m.Events(0)) - 1; n > lateEventsPerSec { // -1: deployment-added
		t.Errorf("%d late-drop events for a burst of 100, want at most %d", n, lateEventsPerSec)
	}
	m.publish()
	if got := m.Snapshot().Deployments[0].Instances[0].Tasks[0]; got.LateDrops != 100 || got.ID != "1_2" {
		t.Errorf("task %+v, want 100 late drops", got)
	}
	logged := len(eventsOf(m.Events(0), kindLateDrop))
	time.Sleep(1100 * time.Millisecond)
	late()
	evs := eventsOf(m.Events(0), kindLateDrop)
	if len(evs) != logged+1 {
		t.Fatalf("%d late-drop events after a second's pause, want %d", len(evs), logged+1)
	}
	e := evs[len(evs)-1]
	if e.Detail.(LateDropDetail).Suppressed != int64(100-logged) || !strings.Contains(e.Message, fmt.Sprintf("and %d more", 100-logged)) {
		t.Errorf("event %+v, want %d suppressed", e, 100-logged)
	}
	if e.Task != "1_2" || e.Instance != "instance-1" || e.Deployment != "d" {
		t.Errorf("event %+v names the wrong task", e)
	}
}

// TestSuspendedTasks: a task a rebalance suspended stays on its instance's
// list, active and "suspended", and the task that keeps running while its
// instance rebalances (cooperatively) is "running", with its suspensions.
func TestSuspendedTasks(t *testing.T) {
	m := New(Options{})
	src := &fakeSource{}
	m.AddDeployment(DeploymentInfo{ID: "d"}, src)
	staying, revoked := streams.TaskID{Subtopology: 0, Partition: 1}, streams.TaskID{Subtopology: 0, Partition: 2}
	src.set([]streams.InstanceInfo{{ID: "instance-1", State: streams.InstanceRunning, Stats: streams.Stats{State: streams.Rebalancing,
		Tasks:     []streams.TaskStats{{ID: staying, StreamTime: t0, Processed: 10, Suspensions: 1}},
		Suspended: []streams.TaskStats{{ID: revoked, StreamTime: t0 - 5, Processed: 7, Suspensions: 2}}}}})
	m.publish()
	in := m.Snapshot().Deployments[0].Instances[0]
	if in.State != "rebalancing" {
		t.Errorf("instance state %q, want rebalancing", in.State)
	}
	want := []Task{
		{ID: "0_1", Role: "active", State: "running", StreamTime: t0, Processed: 10, Lag: -1, Suspensions: 1},
		{ID: "0_2", Role: "active", State: "suspended", StreamTime: t0 - 5, Processed: 7, Lag: -1, Suspensions: 2},
	}
	if len(in.Tasks) != len(want) {
		t.Fatalf("tasks %+v, want %+v", in.Tasks, want)
	}
	for i, got := range in.Tasks {
		got.InPerSec, got.OutPerSec = 0, 0
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("task %d: %+v, want %+v", i, got, want[i])
		}
	}
}
