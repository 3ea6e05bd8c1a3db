package monitor

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// hook is what AddDeployment returns: every runtime hook of one
// deployment. Each method takes the Monitor's mutex briefly, updates
// counters and logs at most one event; none blocks or calls the runtime.
type hook struct {
	m *Monitor
	d *deployment
}

var _ interface {
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
} = (*hook)(nil)

// lock takes the Monitor's mutex and reports whether the deployment is
// still registered; when it is not, the mutex is released.
func (h *hook) lock() bool {
	h.m.mu.Lock()
	if h.d.removed {
		h.m.mu.Unlock()
		return false
	}
	return true
}

func (h *hook) emit(now time.Time, instance string, task streams.TaskID, kind, msg string, detail EventDetail) {
	h.m.emitLocked(now, entry{ev: Event{Deployment: h.d.info.ID, Instance: instance, Kind: kind, Message: msg, Detail: detail},
		task: task, hasTask: true})
}

func (h *hook) OnTaskAssigned(ev streams.TaskEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	now := time.Now()
	in := h.d.instance(ev.InstanceID)
	in.task(ev.Task).assignedAt = now
	if in.held == nil {
		in.held = map[streams.TaskID][]streams.TopicPartition{}
	}
	in.held[ev.Task] = slices.Clone(ev.Partitions)
	msg := fmt.Sprintf("task %s assigned to %s", ev.Task, ev.InstanceID)
	if ev.FromReplica != "" {
		msg += " from its " + ev.FromReplica + " replica"
	}
	parts := make([]string, len(ev.Partitions))
	for i, tp := range ev.Partitions {
		parts[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
	}
	h.emit(now, ev.InstanceID, ev.Task, kindTaskAssigned, msg, TaskAssignedDetail{Partitions: parts, FromReplica: ev.FromReplica})
}

func (h *hook) OnTaskRevoked(ev streams.TaskEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	in := h.d.instance(ev.InstanceID)
	if t := in.tasks[ev.Task]; t != nil {
		t.restores = nil
	}
	delete(in.held, ev.Task)
	msg := fmt.Sprintf("task %s revoked from %s", ev.Task, ev.InstanceID)
	if !ev.Clean {
		msg += " without a commit: the instance lost its group membership"
	}
	detail := TaskRevokedDetail{Clean: ev.Clean}
	if !ev.LastRecord.IsZero() {
		detail.LastRecordAt = ev.LastRecord.UnixMilli()
	}
	h.emit(time.Now(), ev.InstanceID, ev.Task, kindTaskRevoked, msg, detail)
}

func (h *hook) OnCommit(ev streams.CommitEvent) {
	if !h.lock() {
		return
	}
	in := h.d.instance(ev.InstanceID)
	in.lastCommit, in.commitTook = time.Now(), ev.Took
	h.m.mu.Unlock()
}

func (h *hook) OnStateChange(ev streams.StateChange) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	in := h.d.instance(ev.InstanceID)
	now := time.Now()
	switch ev.To {
	case streams.Rebalancing:
		if in.rebalanceFrom.IsZero() {
			in.rebalanceFrom = now
		}
	case streams.Running:
		if in.rebalanceFrom.IsZero() {
			return
		}
		took := now.Sub(in.rebalanceFrom)
		in.rebalanceFrom = time.Time{}
		h.d.noteRebalance(took)
		detail := RebalanceDetail{DurationMs: took.Milliseconds()}
		if len(ev.Kept) > 0 {
			// The tasks it suspended and gave back: paused for it.
			kept := make([]string, len(ev.Kept))
			for i, id := range ev.Kept {
				kept[i] = id.String()
			}
			slices.Sort(kept)
			detail.Kept = kept
		}
		h.m.emitLocked(now, entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindRebalance,
			Message: fmt.Sprintf("%s rebalanced in %v", ev.InstanceID, took.Round(time.Millisecond)),
			Detail:  detail}})
	default:
		in.rebalanceFrom = time.Time{}
	}
}

func (h *hook) OnError(ev streams.ErrorEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	now := time.Now()
	in := h.d.instance(ev.InstanceID)
	if ev.Fatal {
		// The App drops its tasks after this: what it held is kept for
		// their lag (lag.go).
		in.failed = maps.Clone(in.held)
	}
	// Handled errors can come once per record: at most a few a second
	// are logged.
	var suppressed int64
	if !ev.Fatal {
		ok, n := in.errors.allow(now.UnixMilli(), errorEventsPerSec)
		if !ok {
			return
		}
		suppressed = n
	}
	e := entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindError}}
	msg := ev.InstanceID + ": "
	if ev.Task != (streams.TaskID{}) {
		e.task, e.hasTask = ev.Task, true
		msg += "task " + ev.Task.String() + ": "
	}
	if ev.Err != nil {
		msg += ev.Err.Error()
	} else {
		msg += "unknown error"
	}
	if ev.Fatal {
		msg += " (fatal)"
	}
	if suppressed > 0 {
		msg += fmt.Sprintf(" (and %d more errors not logged)", suppressed)
	}
	e.ev.Message = msg
	e.ev.Detail = ErrorDetail{Fatal: ev.Fatal, Suppressed: suppressed}
	h.m.emitLocked(now, e)
}

func (h *hook) OnRestoreStart(ev streams.RestoreEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	t := h.d.instance(ev.InstanceID).task(ev.Task)
	if t.restores == nil {
		t.restores = map[string]*restoreState{}
	}
	load := loadOf(ev)
	t.restores[ev.Store] = &restoreState{start: ev.StartOffset, end: ev.EndOffset, load: load}
	now := time.Now()
	from, skipped := load.describe(now)
	h.emit(now, ev.InstanceID, ev.Task, kindRestoreStarted,
		fmt.Sprintf("restoring %s of task %s on %s: %s%d changelog records from %s/%d%s",
			ev.Store, ev.Task, ev.InstanceID, from, ev.EndOffset-ev.StartOffset, ev.Changelog, ev.Partition, skipped),
		RestoreStartedDetail{Store: ev.Store, Changelog: ev.Changelog, Partition: ev.Partition,
			StartOffset: ev.StartOffset, EndOffset: ev.EndOffset, SnapshotLoad: load})
}

func (h *hook) OnRestoreProgress(ev streams.RestoreEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	t := h.d.instance(ev.InstanceID).tasks[ev.Task]
	if t == nil {
		return
	}
	r := t.restores[ev.Store]
	if r == nil {
		return
	}
	r.restored, r.rate = ev.Restored, ev.Rate
	now := time.Now()
	if now.Sub(r.told) < RestoreProgressInterval {
		return
	}
	r.told = now
	sum := t.restore()
	h.emit(now, ev.InstanceID, ev.Task, kindRestoreProgress,
		fmt.Sprintf("restoring task %s on %s: %d of %d records (%.0f/s)", ev.Task, ev.InstanceID, sum.Restored, sum.Total, sum.Rate),
		RestoreProgressDetail{Store: ev.Store, Offset: ev.Offset, Restored: sum.Restored, Total: sum.Total, Rate: sum.Rate, EtaMs: sum.EtaMs,
			SnapshotLoad: sum.SnapshotLoad})
}

func (h *hook) OnRestoreEnd(ev streams.RestoreEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	if t := h.d.instance(ev.InstanceID).tasks[ev.Task]; t != nil {
		delete(t.restores, ev.Store)
	}
	load := loadOf(ev)
	h.d.noteRestore(ev.Restored, ev.Rate)
	h.d.noteRestoreSource(ev, load)
	now := time.Now()
	from, skipped := load.describe(now)
	h.emit(now, ev.InstanceID, ev.Task, kindRestoreFinished,
		fmt.Sprintf("restored %s of task %s on %s: %s%d changelog records in %v (%.0f/s)%s",
			ev.Store, ev.Task, ev.InstanceID, from, ev.Restored, ev.Took.Round(time.Millisecond), ev.Rate, skipped),
		RestoreFinishedDetail{Store: ev.Store, Changelog: ev.Changelog, Partition: ev.Partition, Restored: ev.Restored,
			DurationMs: ev.Took.Milliseconds(), Rate: ev.Rate, SnapshotLoad: load})
}

func (h *hook) OnWindowClosed(ev streams.WindowClosedEvent) {
	if !h.lock() {
		return
	}
	now := time.Now()
	if t := h.d.instance(ev.InstanceID).task(ev.Task); ev.StreamTime > t.streamTime {
		t.streamTime = ev.StreamTime
	}
	h.m.emitLocked(now, entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindWindowClosed},
		task: ev.Task, hasTask: true, lazy: true,
		win: windowPayload{store: ev.Store, start: ev.Start, end: ev.End, closesAt: ev.ClosesAt, streamTime: ev.StreamTime,
			grace: ev.Grace.Milliseconds(), keys: ev.Keys, emitted: ev.Emitted, session: h.d.sessions[ev.Store]}})
	h.m.mu.Unlock()
}

func (h *hook) OnLateRecordDropped(ev streams.LateRecordEvent) {
	if !h.lock() {
		return
	}
	now := time.Now()
	t := h.d.instance(ev.InstanceID).task(ev.Task)
	t.lateDrops++
	k := storeKey{instance: ev.InstanceID, task: ev.Task, store: ev.Store}
	l := h.d.late[k]
	if l == nil {
		l = &lateStat{}
		h.d.late[k] = l
	}
	l.drops++
	l.lateness = ev.StreamTime - ev.Timestamp
	// One event per late record would flood the log: a few a second per
	// task, the others only counted.
	if ok, suppressed := t.late.allow(now.UnixMilli(), lateEventsPerSec); ok {
		h.m.emitLocked(now, entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindLateDrop},
			task: ev.Task, hasTask: true, lazy: true,
			win: windowPayload{store: ev.Store, topic: ev.Topic, partition: ev.Partition, offset: ev.Offset, timestamp: ev.Timestamp,
				streamTime: ev.StreamTime, start: ev.WindowStart, end: ev.WindowEnd, suppressed: suppressed,
				session: h.d.sessions[ev.Store]}})
	}
	h.m.mu.Unlock()
}

func (h *hook) OnStreamTime(ev streams.StreamTimeEvent) {
	if !h.lock() {
		return
	}
	h.d.instance(ev.InstanceID).task(ev.Task).streamTime = ev.StreamTime
	h.m.mu.Unlock()
}

func (h *hook) OnStandbyStarted(ev streams.StandbyEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	in := h.d.instance(ev.InstanceID)
	stores := in.replicas[ev.Task]
	if stores == nil {
		stores = map[string]bool{}
		in.replicas[ev.Task] = stores
	}
	first := len(stores) == 0
	stores[ev.Store] = true
	if !first {
		return
	}
	what := "standby"
	if ev.Warmup {
		what = "warm-up"
	}
	h.emit(time.Now(), ev.InstanceID, ev.Task, kindStandbyStarted,
		fmt.Sprintf("%s replica of task %s started on %s, %d records behind", what, ev.Task, ev.InstanceID, ev.Lag),
		StandbyStartedDetail{Warmup: ev.Warmup, Store: ev.Store, Offset: ev.Offset, EndOffset: ev.EndOffset, Lag: ev.Lag})
}

// OnStandbyApplied needs nothing: the replicas' lags are sampled.
func (h *hook) OnStandbyApplied(streams.StandbyEvent) {}

func (h *hook) OnStandbySuspended(ev streams.StandbyEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	in := h.d.instance(ev.InstanceID)
	stores := in.replicas[ev.Task]
	if stores == nil {
		return
	}
	delete(stores, ev.Store)
	if len(stores) > 0 {
		return
	}
	delete(in.replicas, ev.Task)
	if ev.Reason != "promoted" {
		return
	}
	what := "standby"
	if ev.Warmup {
		what = "warm-up"
	}
	h.emit(time.Now(), ev.InstanceID, ev.Task, kindStandbyPromoted,
		fmt.Sprintf("%s replica of task %s on %s promoted to active, %d records behind", what, ev.Task, ev.InstanceID, ev.Lag),
		StandbyPromotedDetail{Warmup: ev.Warmup, Lag: ev.Lag, TimeLagMs: ev.TimeLag.Milliseconds()})
}

// OnTaskResumed tells of a task's first record on an instance it moved
// to: where a failover timeline's lane of a planned move ends.
func (h *hook) OnTaskResumed(ev streams.TaskResumedEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	took := ev.FirstRecordAt.Sub(ev.AssignedAt)
	h.emit(time.Now(), ev.InstanceID, ev.Task, kindTaskResumed,
		fmt.Sprintf("task %s resumed on %s, %v after its assignment", ev.Task, ev.InstanceID, took.Round(time.Millisecond)),
		TaskResumedDetail{AssignedAt: ev.AssignedAt.UnixMilli(), FirstRecordAt: ev.FirstRecordAt.UnixMilli(),
			Restored: ev.Restored, FromReplica: ev.FromReplica})
}

func (h *hook) OnTaskFailedOver(ev streams.FailoverEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	task := ev.Task.String()
	f := Failover{Task: task, From: ev.From, To: ev.To, Cause: ev.Cause, Replica: ev.FromReplica,
		DetectionMs: ev.Detection.Milliseconds(), DetectedBy: ev.DetectedBy, RecoveryMs: ev.Recovery.Milliseconds(), DowntimeMs: ev.Downtime.Milliseconds(),
		Restored: ev.Restored, At: ev.ResumedAt.UnixMilli(), ProjectedDowntimeMs: -1}
	if ev.ResumedAt.IsZero() {
		f.At = time.Now().UnixMilli()
	}
	d := h.d
	if p := d.projectionBefore(ev.From, task, ev.FailedAt); p != nil && ev.Cause == "crash" {
		f.ProjectedDowntimeMs, f.ProjectedSafe = p.ProjectedDowntimeMs, p.Safe
	}
	d.addFailover(f)
	d.failoverCounts[failoverKey{from: ev.From, task: task}]++
	d.lastDowntime[task] = f.DowntimeMs
	cause := "a " + ev.Cause
	if ev.Cause == "stop" {
		cause = "a graceful stop"
	}
	msg := fmt.Sprintf("task %s failed over from %s to %s after %s: detected in %v%s, recovered in %v, down %v; restored %d records",
		task, ev.From, ev.To, cause, ev.Detection.Round(time.Millisecond), detectedBy(ev.DetectedBy), ev.Recovery.Round(time.Millisecond),
		ev.Downtime.Round(time.Millisecond), ev.Restored)
	if ev.FromReplica != "" {
		msg += " onto its " + ev.FromReplica + " replica"
	}
	detail := TaskFailedOverDetail{From: ev.From, To: ev.To, Cause: ev.Cause, FromReplica: ev.FromReplica,
		DetectionMs: f.DetectionMs, DetectedBy: ev.DetectedBy, RecoveryMs: f.RecoveryMs, DowntimeMs: f.DowntimeMs, Restored: ev.Restored,
		ResumedAt: f.At, FailedAt: unixMilliOrZero(ev.FailedAt), LastRecordAt: unixMilliOrZero(ev.LastRecordAt),
		AssignedAt: unixMilliOrZero(ev.AssignedAt)}
	if ev.StandbyLag >= 0 {
		detail.StandbyLag = &ev.StandbyLag
	}
	if f.ProjectedDowntimeMs >= 0 {
		msg += fmt.Sprintf(" (projected before: %v, %s)", time.Duration(f.ProjectedDowntimeMs)*time.Millisecond, safeWord(f.ProjectedSafe))
		detail.ProjectedDowntimeMs, detail.ProjectedSafe = &f.ProjectedDowntimeMs, &f.ProjectedSafe
	}
	h.emit(time.Now(), ev.To, ev.Task, kindTaskFailedOver, msg, detail)
}

func (h *hook) OnBrokerReachability(ev streams.BrokerReachabilityEvent) {
	if !h.lock() {
		return
	}
	defer h.m.mu.Unlock()
	if ev.Reachable {
		silent := ev.At.Sub(ev.Since)
		detail := BrokerReachableDetail{Broker: ev.Broker, Since: ev.Since.UnixMilli(), SilentMs: silent.Milliseconds()}
		h.m.emitLocked(ev.At, entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindBrokerReachable,
			Message: fmt.Sprintf("%s reaches broker %s again, after %v without an answer", ev.InstanceID, ev.Broker, silent.Round(time.Second)),
			Detail:  detail}})
		return
	}
	detail := BrokerUnreachableDetail{Broker: ev.Broker, Since: ev.Since.UnixMilli(), Error: ev.Err.Error()}
	h.m.emitLocked(ev.At, entry{ev: Event{Deployment: h.d.info.ID, Instance: ev.InstanceID, Kind: kindBrokerUnreachable,
		Message: fmt.Sprintf("%s cannot reach broker %s (no answer since %s): %v", ev.InstanceID, ev.Broker, ev.Since.Format("15:04:05"), ev.Err),
		Detail:  detail}})
}

// unixMilliOrZero is t in unix ms, 0 for the zero time: a time the
// runtime did not know, left out of a detail.
func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func safeWord(safe bool) string {
	if safe {
		return "safe"
	}
	return "at risk"
}

// detectedBy phrases how a failover's failure was noticed, for the event
// log.
func detectedBy(how string) string {
	switch how {
	case streams.DetectedBySupervisor:
		return " (the supervisor removed the dead member)"
	case streams.DetectedBySessionTimeout:
		return " (at the session timeout)"
	case streams.DetectedByLeave:
		return " (the instance left the group)"
	case "":
		return ""
	}
	return " (" + how + ")"
}
