package streams

import (
	"sync"
	"time"
)

// failoverTracker measures, for a Supervisor, how each task of a crashed
// or stopped instance moves to another: it is a hook on every instance,
// and follows a departed task from the failure to the assignment that
// moved it and to its first record on the new owner.
type failoverTracker struct {
	appID string
	hooks []FailoverHook

	// mu guards pending, written by the Supervisor and read and written
	// by the instances' hooks, which run on their goroutines.
	mu      sync.Mutex
	pending map[TaskID]*departure
}

// departure is a task whose instance failed, on its way to a new owner.
type departure struct {
	from, cause          string
	detectedBy           string
	failedAt, lastRecord time.Time
	// replicas holds the lag and offset sums, at the failure, of the
	// task's replica on each other instance.
	replicas map[string]replicaAt
	// to and assignedAt are set when an instance receives the task.
	to          string
	assignedAt  time.Time
	fromReplica string
}

type replicaAt struct{ lag, offset int64 }

func newFailoverTracker(cfg Config) *failoverTracker {
	return &failoverTracker{appID: cfg.ApplicationID, hooks: newHookSet(cfg.Hooks).failover, pending: make(map[TaskID]*departure)}
}

// departing records the active tasks of instance from, which failed at
// at and whose failure the group is to notice as detectedBy says; last is
// its final stats, others those of the instances still up.
func (f *failoverTracker) departing(from, cause, detectedBy string, at time.Time, last Stats, others []Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range last.Tasks {
		d := &departure{from: from, cause: cause, detectedBy: detectedBy, failedAt: at, lastRecord: ts.LastRecord,
			replicas: make(map[string]replicaAt)}
		for _, o := range others {
			for _, sb := range o.Standbys {
				if sb.ID != ts.ID {
					continue
				}
				var r replicaAt
				for _, st := range sb.Stores {
					r.lag += st.Lag
					r.offset += st.Offset
				}
				d.replicas[o.InstanceID] = r
			}
		}
		f.pending[ts.ID] = d
	}
}

// detected changes how the failure of instance from is said to have been
// noticed, for its tasks not reported yet: a removal the Supervisor
// announced before sending it (see Supervisor.Crash) that failed.
func (f *failoverTracker) detected(from, detectedBy string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.pending {
		if d.from == from {
			d.detectedBy = detectedBy
		}
	}
}

// OnTaskRevoked takes the last record time of a task its instance gave
// up while stopping: later than the stats taken before the stop.
func (f *failoverTracker) OnTaskRevoked(ev TaskEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.pending[ev.Task]; d != nil && d.from == ev.InstanceID && d.to == "" && ev.LastRecord.After(d.lastRecord) {
		d.lastRecord = ev.LastRecord
	}
}

// OnTaskAssigned notes the instance that received a departed task.
func (f *failoverTracker) OnTaskAssigned(ev TaskEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.pending[ev.Task]; d != nil {
		d.to, d.assignedAt, d.fromReplica = ev.InstanceID, time.Now(), ev.FromReplica
	}
}

// OnTaskResumed completes a departed task's move and reports it.
func (f *failoverTracker) OnTaskResumed(ev TaskResumedEvent) {
	f.mu.Lock()
	d := f.pending[ev.Task]
	if d == nil || d.to != ev.InstanceID {
		f.mu.Unlock()
		return
	}
	delete(f.pending, ev.Task)
	f.mu.Unlock()
	out := FailoverEvent{
		ApplicationID: f.appID, Task: ev.Task, From: d.from, To: d.to, Cause: d.cause, DetectedBy: d.detectedBy,
		FailedAt: d.failedAt, LastRecordAt: d.lastRecord, AssignedAt: ev.AssignedAt, ResumedAt: ev.FirstRecordAt,
		Detection: ev.AssignedAt.Sub(d.failedAt), Recovery: ev.FirstRecordAt.Sub(ev.AssignedAt),
		Restored: ev.Restored, FromReplica: ev.FromReplica, StandbyLag: -1, StandbyOffset: -1,
	}
	if !d.lastRecord.IsZero() {
		out.Downtime = ev.FirstRecordAt.Sub(d.lastRecord)
	}
	if r, ok := d.replicas[d.to]; ok {
		out.StandbyLag, out.StandbyOffset = r.lag, r.offset
	}
	for _, h := range f.hooks {
		h.OnTaskFailedOver(out)
	}
}
