package telemetry

import (
	"sort"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// maxQueuedEvents bounds the events a Publisher keeps between two
// reports; past it new ones are dropped and counted.
const maxQueuedEvents = 2000

// queue is the Publisher's hook: it keeps the runtime's events until the
// next report. Its methods run on the instances' processing goroutines,
// so they only take mu to append; encoding waits for the report.
type queue struct {
	// mu guards the fields below.
	mu      sync.Mutex
	events  []queued
	latest  map[coalesceKey]int // index in events of the latest event of a coalesced kind
	dropped int64
}

// queued is an event waiting for the next report.
type queued struct {
	kind string
	at   time.Time
	ev   any
}

// coalesceKey names what a frequent event is about: only the latest of
// each is reported, since each says all the earlier ones said.
type coalesceKey struct {
	kind, instance, store string
	task                  streams.TaskID
}

func newQueue() *queue { return &queue{latest: make(map[coalesceKey]int)} }

func (q *queue) add(kind string, ev any) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.events) >= maxQueuedEvents {
		q.dropped++
		return
	}
	q.events = append(q.events, queued{kind: kind, at: time.Now(), ev: ev})
}

// addLatest queues ev in place of an earlier event of the same key.
func (q *queue) addLatest(key coalesceKey, ev any) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i, ok := q.latest[key]; ok {
		q.events[i] = queued{kind: key.kind, at: time.Now(), ev: ev}
		return
	}
	if len(q.events) >= maxQueuedEvents {
		q.dropped++
		return
	}
	q.latest[key] = len(q.events)
	q.events = append(q.events, queued{kind: key.kind, at: time.Now(), ev: ev})
}

// take returns the queued events, oldest first, and how many were
// dropped, and empties the queue.
func (q *queue) take() ([]queued, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs, dropped := q.events, q.dropped
	q.events, q.dropped = nil, 0
	clear(q.latest)
	// A coalesced event replaced in place keeps its first slot: sort by
	// time so that replay order is the order things happened.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	return evs, dropped
}

var _ interface {
	streams.TaskAssignedHook
	streams.TaskRevokedHook
	streams.TaskResumedHook
	streams.FailoverHook
	streams.CommitHook
	streams.StateChangeHook
	streams.ErrorHook
	streams.RecordSkippedHook
	streams.RestoreHook
	streams.WindowClosedHook
	streams.LateRecordHook
	streams.StreamTimeHook
	streams.StandbyHook
	streams.BrokerHook
	streams.SnapshotHook
} = (*queue)(nil)

func (q *queue) OnTaskAssigned(ev streams.TaskEvent)            { q.add(KindAssigned, ev) }
func (q *queue) OnTaskRevoked(ev streams.TaskEvent)             { q.add(KindRevoked, ev) }
func (q *queue) OnTaskResumed(ev streams.TaskResumedEvent)      { q.add(KindResumed, ev) }
func (q *queue) OnTaskFailedOver(ev streams.FailoverEvent)      { q.add(KindFailover, ev) }
func (q *queue) OnStateChange(ev streams.StateChange)           { q.add(KindState, ev) }
func (q *queue) OnWindowClosed(ev streams.WindowClosedEvent)    { q.add(KindWindowClosed, ev) }
func (q *queue) OnLateRecordDropped(ev streams.LateRecordEvent) { q.add(KindLate, ev) }
func (q *queue) OnRestoreStart(ev streams.RestoreEvent)         { q.add(KindRestoreStart, ev) }
func (q *queue) OnRestoreEnd(ev streams.RestoreEvent)           { q.add(KindRestoreEnd, ev) }
func (q *queue) OnStandbyStarted(ev streams.StandbyEvent)       { q.add(KindStandbyStarted, ev) }
func (q *queue) OnStandbySuspended(ev streams.StandbyEvent)     { q.add(KindStandbySuspended, ev) }

func (q *queue) OnCommit(ev streams.CommitEvent) {
	// Only the instance's last commit is shown, so only it is sent.
	w := commitWire{ApplicationID: ev.ApplicationID, InstanceID: ev.InstanceID, Took: ev.Took}
	for tp, off := range ev.Offsets {
		w.Offsets = append(w.Offsets, offsetWire{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
	}
	q.addLatest(coalesceKey{kind: KindCommit, instance: ev.InstanceID}, w)
}

func (q *queue) OnError(ev streams.ErrorEvent) {
	q.add(KindError, errorWire{ApplicationID: ev.ApplicationID, InstanceID: ev.InstanceID, Task: ev.Task, Err: errString(ev.Err), Fatal: ev.Fatal})
}

func (q *queue) OnRecordSkipped(ev streams.SkippedRecord) {
	q.add(KindSkipped, skippedWire{Task: ev.Task, Topic: ev.Topic, Partition: ev.Partition, Offset: ev.Offset, Err: errString(ev.Err)})
}

func (q *queue) OnBrokerReachability(ev streams.BrokerReachabilityEvent) {
	q.add(KindBroker, brokerWire{ApplicationID: ev.ApplicationID, InstanceID: ev.InstanceID, Broker: ev.Broker,
		Reachable: ev.Reachable, Since: ev.Since, At: ev.At, Err: errString(ev.Err)})
}

func (q *queue) OnSnapshotTaken(ev streams.SnapshotEvent) {
	q.add(KindSnapshot, snapshotWire{ApplicationID: ev.ApplicationID, InstanceID: ev.InstanceID, Task: ev.Task, Store: ev.Store,
		ID: ev.ID, ChangelogOffset: ev.ChangelogOffset, StreamTime: ev.StreamTime, Bytes: ev.Bytes, Files: ev.Files,
		Took: ev.Took, Pruned: ev.Pruned, Err: errString(ev.Err)})
}

func (q *queue) OnRestoreProgress(ev streams.RestoreEvent) {
	q.addLatest(coalesceKey{kind: KindRestoreProgress, instance: ev.InstanceID, task: ev.Task, store: ev.Store}, ev)
}

func (q *queue) OnStreamTime(ev streams.StreamTimeEvent) {
	q.addLatest(coalesceKey{kind: KindStreamTime, instance: ev.InstanceID, task: ev.Task}, ev)
}

func (q *queue) OnStandbyApplied(ev streams.StandbyEvent) {
	q.addLatest(coalesceKey{kind: KindStandbyApplied, instance: ev.InstanceID, task: ev.Task, store: ev.Store}, ev)
}
