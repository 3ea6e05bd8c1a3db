package telemetry

import (
	"encoding/json"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
)

// handoffs follows each task of a remote application from owner to
// owner, to report the failovers no process can: a task that resumes on
// an instance of one process after its previous owner, in another, died,
// stopped or crashed.
type handoffs struct {
	// owner is the last instance reported with the task active.
	owner map[streams.TaskID]owner
	// pending holds the tasks assigned to another instance than their
	// owner, until it is known whether the owner failed.
	pending map[streams.TaskID]*handoff
	// endedAt holds, per life of a process that restarted, the time of
	// its last report.
	endedAt map[life]time.Time
	// replicas holds the lag and offset sums of each instance's replicas,
	// from its last report.
	replicas map[string]map[streams.TaskID]replicaLag
}

// life is one run of a process: its name and when it started.
type life struct {
	process string
	started int64
}

type owner struct {
	life
	instance   string
	lastRecord time.Time
}

type replicaLag struct{ lag, offset int64 }

// handoff is a task on its way from one instance to another.
type handoff struct {
	from       owner
	to         string
	toLife     life
	assignedAt time.Time
	replica    *replicaLag
	resumed    *streams.TaskResumedEvent
	interval   time.Duration
	// observed is when the Reader saw the task resume, by its own clock.
	observed time.Time
}

func newHandoffs() handoffs {
	return handoffs{owner: make(map[streams.TaskID]owner), pending: make(map[streams.TaskID]*handoff),
		endedAt: make(map[life]time.Time), replicas: make(map[string]map[streams.TaskID]replicaLag)}
}

// ended records that a life of a process ended at its last report.
func (h *handoffs) ended(last rtelemetry.Report) {
	h.endedAt[life{last.Process, last.Started}] = time.UnixMilli(last.Time)
}

// observe notes the assignments and resumptions among a report's events.
func (h *handoffs) observe(rep rtelemetry.Report, ev rtelemetry.Event) {
	switch ev.Kind {
	case rtelemetry.KindAssigned:
		var te streams.TaskEvent
		if json.Unmarshal(ev.Body, &te) != nil {
			return
		}
		from, ok := h.owner[te.Task]
		to := life{rep.Process, rep.Started}
		switch {
		case !ok:
			return
		case from.life == to && from.instance == te.InstanceID:
			// Assigned again where it was: a rebalance that followed the
			// one that brought it leaves a handoff under way as it is.
			return
		case from.life == to:
			// Between two instances of one life of one process, whose
			// Supervisor reports its own failovers.
			delete(h.pending, te.Task)
			return
		}
		hf := &handoff{from: from, to: te.InstanceID, toLife: to, assignedAt: time.UnixMilli(ev.At),
			interval: time.Duration(rep.IntervalMs) * time.Millisecond}
		if r, ok := h.replicas[te.InstanceID][te.Task]; ok {
			hf.replica = &r
		}
		h.pending[te.Task] = hf
	case rtelemetry.KindResumed:
		var re streams.TaskResumedEvent
		if json.Unmarshal(ev.Body, &re) != nil {
			return
		}
		if hf := h.pending[re.Task]; hf != nil && hf.to == re.InstanceID {
			hf.resumed, hf.observed = &re, time.Now()
		}
	}
}

// owners takes the active tasks and replicas of a report's instances.
func (h *handoffs) owners(rep rtelemetry.Report) {
	for _, in := range rep.Instances {
		if in.State != streams.InstanceRunning {
			continue
		}
		for _, ts := range in.Stats.Tasks {
			h.owner[ts.ID] = owner{life: life{rep.Process, rep.Started}, instance: in.ID, lastRecord: ts.LastRecord}
		}
		reps := make(map[streams.TaskID]replicaLag, len(in.Stats.Standbys))
		for _, sb := range in.Stats.Standbys {
			var r replicaLag
			for _, st := range sb.Stores {
				r.lag += st.Lag
				r.offset += st.Offset
			}
			reps[sb.ID] = r
		}
		h.replicas[in.ID] = reps
	}
}

// settle reports, for each resumed handoff, a failover when its former
// owner failed, and forgets it once that is known either way.
func (h *handoffs) settle(a *remoteApp, now time.Time) {
	for task, hf := range h.pending {
		if hf.resumed == nil {
			continue
		}
		cause, detectedBy, failedAt, decided := a.departure(hf, now)
		if !decided {
			continue
		}
		delete(h.pending, task)
		if cause == "" {
			continue // a move between two live instances
		}
		ev := streams.FailoverEvent{ApplicationID: a.id, Task: task, From: hf.from.instance, To: hf.to,
			Cause: cause, DetectedBy: detectedBy, FailedAt: failedAt, LastRecordAt: hf.from.lastRecord,
			AssignedAt: hf.resumed.AssignedAt, ResumedAt: hf.resumed.FirstRecordAt,
			Restored: hf.resumed.Restored, FromReplica: hf.resumed.FromReplica, StandbyLag: -1}
		if ev.LastRecordAt.IsZero() || ev.LastRecordAt.After(failedAt) {
			ev.LastRecordAt = failedAt
		}
		ev.Detection = ev.AssignedAt.Sub(ev.FailedAt)
		ev.Recovery = ev.ResumedAt.Sub(ev.AssignedAt)
		ev.Downtime = ev.ResumedAt.Sub(ev.LastRecordAt)
		if hf.replica != nil {
			ev.StandbyLag, ev.StandbyOffset = hf.replica.lag, hf.replica.offset
		}
		if fh, ok := a.hook.(streams.FailoverHook); ok {
			fh.OnTaskFailedOver(ev)
		}
	}
}

// departure says how the former owner of a handoff left: its cause
// ("crash" or "stop", "" for none: the task moved between live
// instances), how the group noticed and when it failed; decided is false
// while that cannot be told yet.
func (a *remoteApp) departure(hf *handoff, now time.Time) (cause, detectedBy string, failedAt time.Time, decided bool) {
	p := a.procs[hf.from.process]
	if p == nil || p.last.Started != hf.from.started {
		at, ok := a.handoff.endedAt[hf.from.life]
		if !ok || at.After(hf.assignedAt) {
			// Unknown, or it reported on after the task moved: the move
			// was a rebalance among live instances, before it died. A
			// task whose owner died moves a session timeout after its
			// last report, not before it: any slack here would take a
			// move shortly before a death for a failover, with a
			// negative detection.
			return "", "", time.Time{}, true
		}
		return "crash", streams.DetectedBySessionTimeout, at, true
	}
	for _, in := range p.last.Instances {
		if in.ID != hf.from.instance {
			continue
		}
		switch in.State {
		case streams.InstanceCrashed, streams.InstanceFailed:
			// Its process's Supervisor saw it die and removed it.
			return "crash", streams.DetectedBySupervisor, in.Since, true
		case streams.InstanceStopped:
			return "stop", streams.DetectedByLeave, in.Since, true
		}
	}
	if p.last.Final {
		return "stop", streams.DetectedByLeave, p.seen, true
	}
	if p.seen.Before(hf.assignedAt.Add(-2 * hf.interval)) {
		// Silent since before the task moved: the process died, and the
		// group noticed when its session timed out.
		return "crash", streams.DetectedBySessionTimeout, p.seen, true
	}
	// The owner still runs: a move between live instances, unless a
	// report still to come says it stopped (a stopping instance leaves
	// the group before its state says so). Its reports tell once they
	// go on for GoneAfter past the move; the wall clock, if they end.
	return "", "", time.Time{}, p.seen.Sub(hf.assignedAt) > a.cfg.GoneAfter || now.Sub(hf.observed) > 2*a.cfg.GoneAfter
}
