package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// recorder is a hook that writes down every call it gets.
type recorder struct{ calls []string }

func (r *recorder) note(method string, ev any) {
	r.calls = append(r.calls, fmt.Sprintf("%s %+v", method, ev))
}

func (r *recorder) OnTaskAssigned(ev streams.TaskEvent)                     { r.note("assigned", ev) }
func (r *recorder) OnTaskRevoked(ev streams.TaskEvent)                      { r.note("revoked", ev) }
func (r *recorder) OnTaskResumed(ev streams.TaskResumedEvent)               { r.note("resumed", ev) }
func (r *recorder) OnTaskFailedOver(ev streams.FailoverEvent)               { r.note("failover", ev) }
func (r *recorder) OnCommit(ev streams.CommitEvent)                         { r.note("commit", ev) }
func (r *recorder) OnStateChange(ev streams.StateChange)                    { r.note("state", ev) }
func (r *recorder) OnError(ev streams.ErrorEvent)                           { r.note("error", ev) }
func (r *recorder) OnRecordSkipped(ev streams.SkippedRecord)                { r.note("skipped", ev) }
func (r *recorder) OnRestoreStart(ev streams.RestoreEvent)                  { r.noteRestore("restore-start", ev) }
func (r *recorder) OnRestoreProgress(ev streams.RestoreEvent)               { r.noteRestore("restore-progress", ev) }
func (r *recorder) OnRestoreEnd(ev streams.RestoreEvent)                    { r.noteRestore("restore-end", ev) }
func (r *recorder) OnSnapshotTaken(ev streams.SnapshotEvent)                { r.note("snapshot", ev) }
func (r *recorder) OnWindowClosed(ev streams.WindowClosedEvent)             { r.note("window-closed", ev) }
func (r *recorder) OnLateRecordDropped(ev streams.LateRecordEvent)          { r.note("late", ev) }
func (r *recorder) OnStreamTime(ev streams.StreamTimeEvent)                 { r.note("stream-time", ev) }
func (r *recorder) OnStandbyStarted(ev streams.StandbyEvent)                { r.note("standby-started", ev) }
func (r *recorder) OnStandbyApplied(ev streams.StandbyEvent)                { r.note("standby-applied", ev) }
func (r *recorder) OnStandbySuspended(ev streams.StandbyEvent)              { r.note("standby-suspended", ev) }
func (r *recorder) OnBrokerReachability(ev streams.BrokerReachabilityEvent) { r.note("broker", ev) }

// noteRestore writes down a restore event with the snapshot it points
// to, not the pointer.
func (r *recorder) noteRestore(method string, ev streams.RestoreEvent) {
	snap := ev.Snapshot
	ev.Snapshot = nil
	if snap != nil {
		r.note(method, fmt.Sprintf("%+v from snapshot %+v", ev, *snap))
		return
	}
	r.note(method, ev)
}

// TestEveryEventSurvivesTheTopic: each hook call the Publisher queues
// reaches a Reader's hook as the same call with the same event, once
// encoded as a report carries it; and every kind the Reader knows is
// covered here.
func TestEveryEventSurvivesTheTopic(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	task := streams.TaskID{Subtopology: 1, Partition: 2}
	tp := streams.TopicPartition{Topic: "orders", Partition: 2}
	restore := streams.RestoreEvent{ApplicationID: "app", InstanceID: "i1", Task: task, Store: "counts", Changelog: "app-counts-changelog",
		Partition: 2, StartOffset: 10, EndOffset: 500, Restored: 90, Rate: 1234.5, Took: 1500 * time.Millisecond,
		Snapshot: &streams.SnapshotRestore{ID: "s-9", TakenAt: at.Add(-2 * time.Minute), Offset: 10, Bytes: 96 << 20, Files: 4,
			Took: 1200 * time.Millisecond},
		Skipped: []streams.SnapshotSkip{{ID: "s-10", Reason: "checksum differs"}}}
	standby := streams.StandbyEvent{ApplicationID: "app", InstanceID: "i2", Task: task, Warmup: true, Store: "counts",
		Changelog: "app-counts-changelog", Partition: 2, Offset: 40, EndOffset: 50, Lag: 10, Applied: 7}
	calls := map[string]func(h streams.Hook){
		KindAssigned: func(h streams.Hook) {
			h.(streams.TaskAssignedHook).OnTaskAssigned(streams.TaskEvent{ApplicationID: "app", InstanceID: "i1", Task: task,
				Partitions: []streams.TopicPartition{tp}, Clean: true, FromReplica: "standby"})
		},
		KindRevoked: func(h streams.Hook) {
			h.(streams.TaskRevokedHook).OnTaskRevoked(streams.TaskEvent{ApplicationID: "app", InstanceID: "i1", Task: task,
				Partitions: []streams.TopicPartition{tp}, LastRecord: at})
		},
		KindResumed: func(h streams.Hook) {
			h.(streams.TaskResumedHook).OnTaskResumed(streams.TaskResumedEvent{ApplicationID: "app", InstanceID: "i1", Task: task,
				AssignedAt: at, FirstRecordAt: at.Add(15 * time.Millisecond), Restored: 3, FromReplica: "warm-up"})
		},
		KindFailover: func(h streams.Hook) {
			h.(streams.FailoverHook).OnTaskFailedOver(streams.FailoverEvent{ApplicationID: "app", Task: task, From: "i1", To: "i2",
				Cause: "crash", DetectedBy: streams.DetectedBySupervisor, FailedAt: at, LastRecordAt: at, AssignedAt: at.Add(time.Second),
				ResumedAt: at.Add(2 * time.Second), Detection: time.Second, Recovery: time.Second, Downtime: 2 * time.Second,
				Restored: 5, FromReplica: "standby", StandbyLag: 4, StandbyOffset: 99})
		},
		KindCommit: func(h streams.Hook) {
			h.(streams.CommitHook).OnCommit(streams.CommitEvent{ApplicationID: "app", InstanceID: "i1",
				Offsets: map[streams.TopicPartition]int64{tp: 42, {Topic: "orders", Partition: 0}: 7}, Took: 3 * time.Millisecond})
		},
		KindState: func(h streams.Hook) {
			h.(streams.StateChangeHook).OnStateChange(streams.StateChange{ApplicationID: "app", InstanceID: "i1", From: streams.Rebalancing, To: streams.Running})
		},
		KindError: func(h streams.Hook) {
			h.(streams.ErrorHook).OnError(streams.ErrorEvent{ApplicationID: "app", InstanceID: "i1", Task: task, Err: errors.New("boom"), Fatal: true})
		},
		KindSkipped: func(h streams.Hook) {
			h.(streams.RecordSkippedHook).OnRecordSkipped(streams.SkippedRecord{Task: task, Topic: "orders", Partition: 2, Offset: 8, Err: errors.New("bad json")})
		},
		KindRestoreStart:    func(h streams.Hook) { h.(streams.RestoreHook).OnRestoreStart(restore) },
		KindRestoreProgress: func(h streams.Hook) { h.(streams.RestoreHook).OnRestoreProgress(restore) },
		KindRestoreEnd:      func(h streams.Hook) { h.(streams.RestoreHook).OnRestoreEnd(restore) },
		KindWindowClosed: func(h streams.Hook) {
			h.(streams.WindowClosedHook).OnWindowClosed(streams.WindowClosedEvent{ApplicationID: "app", InstanceID: "i1", Task: task, Store: "w",
				Start: 1000, End: 2000, Grace: time.Second, ClosesAt: 3000, StreamTime: 3001, Keys: 4, Emitted: true})
		},
		KindLate: func(h streams.Hook) {
			h.(streams.LateRecordHook).OnLateRecordDropped(streams.LateRecordEvent{ApplicationID: "app", InstanceID: "i1", Task: task, Store: "w",
				Topic: "orders", Partition: 2, Offset: 9, Timestamp: 500, StreamTime: 4000, WindowStart: 0, WindowEnd: 1000})
		},
		KindStreamTime: func(h streams.Hook) {
			h.(streams.StreamTimeHook).OnStreamTime(streams.StreamTimeEvent{ApplicationID: "app", InstanceID: "i1", Task: task, StreamTime: 4000})
		},
		KindStandbyStarted:   func(h streams.Hook) { h.(streams.StandbyHook).OnStandbyStarted(standby) },
		KindStandbyApplied:   func(h streams.Hook) { h.(streams.StandbyHook).OnStandbyApplied(standby) },
		KindStandbySuspended: func(h streams.Hook) { h.(streams.StandbyHook).OnStandbySuspended(standby) },
		KindSnapshot: func(h streams.Hook) {
			h.(streams.SnapshotHook).OnSnapshotTaken(streams.SnapshotEvent{ApplicationID: "app", InstanceID: "i1", Task: task, Store: "counts",
				ID: "s-11", ChangelogOffset: 500, StreamTime: 4000, Bytes: 1 << 20, Files: 3, Took: 80 * time.Millisecond,
				Pruned: []string{"s-8"}, Err: errors.New("upload: disk full")})
		},
		KindBroker: func(h streams.Hook) {
			h.(streams.BrokerHook).OnBrokerReachability(streams.BrokerReachabilityEvent{ApplicationID: "app", InstanceID: "i1",
				Broker: "127.0.0.1:9092", Since: at, At: at.Add(time.Second), Err: errors.New("connection refused")})
		},
	}
	if got, want := slices.Sorted(maps.Keys(calls)), slices.Sorted(maps.Keys(replayers)); !slices.Equal(got, want) {
		t.Fatalf("kinds tested %v, kinds replayed %v", got, want)
	}
	for kind, call := range calls {
		t.Run(kind, func(t *testing.T) {
			q := newQueue()
			call(q)
			queued, dropped := q.take()
			if len(queued) != 1 || dropped != 0 || queued[0].kind != kind {
				t.Fatalf("queued %+v (%d dropped), want one %s event", queued, dropped, kind)
			}
			body, err := json.Marshal(queued[0].ev)
			if err != nil {
				t.Fatal(err)
			}
			var got, want recorder
			if err := (Event{Kind: kind, At: at.UnixMilli(), Body: body}).Replay(&got); err != nil {
				t.Fatal(err)
			}
			call(&want)
			if !slices.Equal(got.calls, want.calls) {
				t.Errorf("replayed\n  %v\nwant\n  %v", got.calls, want.calls)
			}
		})
	}
}

// TestOldRestoreEventsDecode: a restore event of a process that knew no
// snapshots replays as a restore from the changelog.
func TestOldRestoreEventsDecode(t *testing.T) {
	body := `{"ApplicationID":"app","InstanceID":"i1","Task":{"Subtopology":0,"Partition":1},"Store":"counts",` +
		`"Changelog":"app-counts-changelog","Partition":1,"StartOffset":0,"EndOffset":90,"Offset":90,"Restored":90,"Rate":10,"Took":9000000000}`
	var got []streams.RestoreEvent
	h := restoreFunc(func(ev streams.RestoreEvent) { got = append(got, ev) })
	if err := (Event{Kind: KindRestoreEnd, Body: json.RawMessage(body)}).Replay(h); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Restored != 90 || got[0].Snapshot != nil || got[0].Skipped != nil {
		t.Errorf("replayed %+v, want one restore of 90 records and no snapshot", got)
	}
}

// restoreFunc is a RestoreHook that hands restore-end events to a func.
type restoreFunc func(streams.RestoreEvent)

func (f restoreFunc) OnRestoreStart(streams.RestoreEvent)    {}
func (f restoreFunc) OnRestoreProgress(streams.RestoreEvent) {}
func (f restoreFunc) OnRestoreEnd(ev streams.RestoreEvent)   { f(ev) }

// TestFrequentEventsCoalesce: of the events that say all the earlier ones
// said, a report carries the latest per task and store; the others all.
func TestFrequentEventsCoalesce(t *testing.T) {
	q := newQueue()
	a, b := streams.TaskID{Partition: 0}, streams.TaskID{Partition: 1}
	for st := range int64(5) {
		q.OnStreamTime(streams.StreamTimeEvent{InstanceID: "i1", Task: a, StreamTime: st})
		q.OnStreamTime(streams.StreamTimeEvent{InstanceID: "i1", Task: b, StreamTime: 10 + st})
		q.OnWindowClosed(streams.WindowClosedEvent{InstanceID: "i1", Task: a, Start: st})
	}
	events, _ := q.take()
	var times []int64
	closed := 0
	for _, ev := range events {
		switch e := ev.ev.(type) {
		case streams.StreamTimeEvent:
			times = append(times, e.StreamTime)
		case streams.WindowClosedEvent:
			closed++
		}
	}
	slices.Sort(times)
	if !slices.Equal(times, []int64{4, 14}) || closed != 5 {
		t.Errorf("stream times %v and %d window-closed events, want [4 14] and 5", times, closed)
	}
	if again, _ := q.take(); len(again) != 0 {
		t.Errorf("a second take returned %d events, want none", len(again))
	}
}

// TestQueueDropsPastItsBound: a process whose reports do not go out
// keeps a bounded queue and counts what it drops.
func TestQueueDropsPastItsBound(t *testing.T) {
	q := newQueue()
	for range maxQueuedEvents + 10 {
		q.OnWindowClosed(streams.WindowClosedEvent{InstanceID: "i1"})
	}
	events, dropped := q.take()
	if len(events) != maxQueuedEvents || dropped != 10 {
		t.Errorf("%d events kept and %d dropped, want %d and 10", len(events), dropped, maxQueuedEvents)
	}
}
