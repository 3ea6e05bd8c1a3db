package monitor

import (
	"cmp"
)

// The Monitor's side of its History (history.go): what it keeps for Run
// to write, what it reads back at New, and a deployment's snapshot at a
// past moment.

// restore reads back the History's events at New: the last EventLogSize
// go into the event log, the numbering goes on after the last, and each
// deployment's timeline events wait for AddDeployment.
func (m *Monitor) restore() {
	h := m.opts.History
	if h == nil {
		return
	}
	m.restored = map[string][]Event{}
	for _, ev := range h.takeLoaded() {
		m.log.push(entry{ev: ev})
		m.seq = max(m.seq, ev.Seq)
		if timelineKinds[ev.Kind] {
			m.restored[ev.Deployment] = append(m.restored[ev.Deployment], ev)
		}
	}
}

// keepLocked keeps an event for Run to write to the History.
func (m *Monitor) keepLocked(e entry) {
	if m.opts.History == nil {
		return
	}
	if len(m.pending) >= pendingEvents {
		// The older half goes at once, so that a hook never copies the
		// whole queue per event.
		n := len(m.pending) / 2
		m.pending = append(m.pending[:0], m.pending[n:]...)
		m.dropped += int64(n)
	}
	m.pending = append(m.pending, e)
}

// persist writes the events kept since the last call, and snap when not
// nil (seq the last event's before it), to the History.
func (m *Monitor) persist(snap *Snapshot, seq uint64) {
	h := m.opts.History
	if h == nil {
		return
	}
	m.mu.Lock()
	pending, dropped := m.pending, m.dropped
	m.pending, m.dropped = nil, 0
	m.mu.Unlock()
	if dropped > 0 {
		h.opts.Logger.Error("monitor history: events were not recorded, too many waited", "dropped", dropped)
	}
	events := make([]Event, len(pending))
	for i := range pending {
		events[i] = pending[i].render()
	}
	h.writeEvents(events)
	if snap != nil {
		h.record(snap, seq)
	}
}

// seed gives a deployment added again after a restart the failovers and
// timelines its recorded events tell, oldest first.
func (d *deployment) seed(events []Event) {
	for _, ev := range events {
		d.timelines.add(ev)
		if f, ok := failoverOf(ev); ok {
			d.addFailover(f)
			d.lastDowntime[f.Task] = f.DowntimeMs
		}
	}
}

// addFailover appends one failover to the table, keeping the last
// maxFailovers.
func (d *deployment) addFailover(f Failover) {
	if len(d.failovers) == maxFailovers {
		d.failovers = append(d.failovers[:0], d.failovers[1:]...)
	}
	d.failovers = append(d.failovers, f)
}

// failoverOf reads a task-failed-over event's row of the failover table,
// as the hook made it.
func failoverOf(ev Event) (Failover, bool) {
	if ev.Kind != kindTaskFailedOver {
		return Failover{}, false
	}
	d, _ := ev.Detail.(TaskFailedOverDetail)
	return failoverRow(ev.Task, ev.Time, d), true
}

// failoverRow is the failover table's row of task's failover told by an
// event at t (unix ms) with detail d.
func failoverRow(task string, t int64, d TaskFailedOverDetail) Failover {
	f := Failover{Task: task, From: d.From, To: d.To, Cause: d.Cause, Replica: d.FromReplica,
		DetectionMs: d.DetectionMs, DetectedBy: d.DetectedBy, RecoveryMs: d.RecoveryMs,
		DowntimeMs: d.DowntimeMs, Restored: d.Restored, At: cmp.Or(d.ResumedAt, t),
		ProjectedDowntimeMs: -1}
	if d.ProjectedDowntimeMs != nil {
		f.ProjectedDowntimeMs = *d.ProjectedDowntimeMs
	}
	if d.ProjectedSafe != nil {
		f.ProjectedSafe = *d.ProjectedSafe
	}
	return f
}

// Replay is a deployment as it was: the recorded snapshot at Time, the
// one nearest at or before the moment At asked for, with its throughput
// (the recorded points of the 5 minutes up to it), its failovers and
// timelines (from the events up to it), and its last 500 events up to it,
// oldest first.
type Replay struct {
	At         int64      `json:"at"`
	Time       int64      `json:"time"`
	Deployment Deployment `json:"deployment"`
	Events     []Event    `json:"events"`
}

// History returns the span of a deployment's recorded history; without a
// History it is empty.
func (m *Monitor) History(deployment string) HistorySpan {
	if m.opts.History == nil {
		return HistorySpan{Deployment: deployment, Instants: []int64{}}
	}
	return m.opts.History.span(deployment)
}

// SnapshotAt returns the deployment as recorded at or just before at
// (unix ms). A *NoSnapshotError says none was.
func (m *Monitor) SnapshotAt(id string, at int64) (Replay, error) {
	if m.opts.History == nil {
		return Replay{}, &NoSnapshotError{Deployment: id, At: at}
	}
	rs, points, events, err := m.opts.History.snapshotAt(id, at)
	if err != nil {
		return Replay{}, err
	}
	dep := rs.Deployment
	dep.Throughput = points
	if dep.Throughput == nil {
		dep.Throughput = []Point{}
	}
	tl := newTimelines(dep.SessionTimeoutMs)
	d := &deployment{timelines: tl, lastDowntime: map[string]int64{}}
	for _, ev := range events {
		if timelineKinds[ev.Kind] {
			d.seed([]Event{ev})
		}
	}
	dep.Timelines = tl.render(rs.T)
	dep.Failovers = d.failovers
	if dep.Failovers == nil {
		dep.Failovers = []Failover{}
	}
	if len(events) > replayEvents {
		events = events[len(events)-replayEvents:]
	}
	if events == nil {
		events = []Event{}
	}
	return Replay{At: at, Time: rs.T, Deployment: dep, Events: events}, nil
}
