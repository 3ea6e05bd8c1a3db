package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Drawing the failover timelines from their marks (see timeline.go).

// render returns the timelines as they stand at now, oldest first.
func (tl *timelines) render(now int64) []FailoverTimeline {
	out := make([]FailoverTimeline, 0, len(tl.list))
	for _, f := range tl.list {
		out = append(out, tl.renderOne(f, now))
	}
	return out
}

func (tl *timelines) renderOne(f *failover, now int64) FailoverTimeline {
	t := FailoverTimeline{ID: f.id, Cause: f.cause, Instance: f.instance, At: f.at, SessionTimeoutMs: tl.sessionTimeoutMs,
		Tasks: []TaskLane{}, Unmoved: []string{}, Pauses: []TaskPause{}, Instances: []InstanceLane{}}
	lanes := slices.Clone(f.lanes)
	slices.SortFunc(lanes, func(a, b *laneRef) int { return cmp.Compare(a.task, b.task) })
	done, end := true, f.at
	var built []*laneBuild
	for _, l := range lanes {
		b := tl.lane(l, now)
		built = append(built, b)
		done = done && b.closed
		end = max(end, b.end)
	}
	if f.cause != "probing" && !tl.rebalancedSince(f, f.at) {
		done = false
	}
	if !done {
		end = now
		if now-f.at > timelineMaxOpenMs {
			done, end = true, max(end, f.at+timelineMaxOpenMs)
		}
	} else {
		end = tl.rebalancesEnd(f.at, end)
	}
	t.End, t.Done = end, done
	moved := map[string]bool{}
	for _, b := range built {
		t.Tasks = append(t.Tasks, b.finish(f.at-timelineLead, end))
		moved[b.lane.Task] = true
	}
	for _, task := range f.running {
		if !moved[task] {
			t.Unmoved = append(t.Unmoved, task)
		}
	}
	slices.Sort(t.Unmoved)
	t.Pauses = tl.pauses(t.Unmoved, f.at-timelineLead, end)
	t.Instances = tl.instanceLanes(f, t, end)
	return t
}

// pauses returns the suspensions of tasks between from and to: the
// rebalances told to have kept them, cut to the span.
func (tl *timelines) pauses(tasks []string, from, to int64) []TaskPause {
	out := []TaskPause{}
	for in, ms := range tl.instances {
		for _, m := range ms {
			if m.kind != kindRebalance || m.t < from || m.start > to {
				continue
			}
			for _, task := range m.kept {
				if slices.Contains(tasks, task) {
					out = append(out, TaskPause{Task: task, Instance: in, Start: max(m.start, from), End: min(m.t, to)})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b TaskPause) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Task, b.Task)) })
	return out
}

// rebalancesEnd returns end, or later if a rebalance that began between
// at and end ended after it.
func (tl *timelines) rebalancesEnd(at, end int64) int64 {
	for _, ms := range tl.instances {
		for _, m := range ms {
			if m.kind == kindRebalance && m.start >= at && m.start <= end {
				end = max(end, m.t)
			}
		}
	}
	return end
}

// rebalancedSince reports whether the group has rebalanced since at, as
// a failover makes it: the added instance, or another than the one that
// crashed or stopped, finished a rebalance after at. Until then a crash,
// a stop or an add is not done, though no lane may be open yet.
func (tl *timelines) rebalancedSince(f *failover, at int64) bool {
	for in, ms := range tl.instances {
		if (in == f.instance) != (f.cause == "instance-added") {
			continue
		}
		for _, m := range ms {
			if m.kind == kindRebalance && m.t >= at {
				return true
			}
		}
	}
	return false
}

// laneBuild is a task lane being drawn: its phases so far and the one
// open.
type laneBuild struct {
	lane   TaskLane
	phases []Phase
	cur    Phase
	owner  string // the instance the task is on, "" while unassigned
	closed bool   // resumed or overtaken
	end    int64  // when it closed
	// lastRecord is the task's last record on the failed instance (a
	// revocation's), restoreMs the time its finished restores took on the
	// owner, promoted the lag of each replica promoted to run it.
	lastRecord, restoreMs int64
	promoted              map[string]int64
}

// to closes the open phase at t and opens one of kind.
func (b *laneBuild) to(kind string, t int64, detail string) {
	b.cur.End = t
	if b.cur.End > b.cur.Start || len(b.phases) == 0 {
		b.phases = append(b.phases, b.cur)
	}
	b.cur = Phase{Kind: kind, Start: t, Detail: detail}
}

// finish closes the lane's phases: the first starts at start, the open
// one ends at end.
func (b *laneBuild) finish(start, end int64) TaskLane {
	b.cur.End = max(end, b.cur.Start)
	phases := append(slices.Clone(b.phases), b.cur)
	phases[0].Start = min(start, phases[0].End)
	b.lane.Phases = phases
	return b.lane
}

// lane draws a task's lane from its marks.
func (tl *timelines) lane(l *laneRef, now int64) *laneBuild {
	b := &laneBuild{lane: TaskLane{Task: l.task, From: l.from, StandbyLag: -1, DetectionMs: -1, RecoveryMs: -1, DowntimeMs: -1},
		cur: Phase{Kind: PhaseProcessing, Start: l.start}, promoted: map[string]int64{}}
	if l.planned {
		b.lane.DetectionMs = 0
		b.to(PhaseRebalancing, l.start, "revoked from "+l.from)
	} else {
		b.to(PhaseDetecting, l.start, tl.detectingDetail(l))
		if s, ok := tl.noticed(l); ok {
			b.to(PhaseRebalancing, s, "the group rebalances")
		}
	}
	for _, m := range tl.tasks[l.task] {
		if m.t < l.start || (m.t == l.start && m.kind != kindTaskAssigned) {
			if m.kind == kindTaskRevoked && m.instance == l.from {
				b.lastRecord = m.lastRecord
			}
			continue
		}
		if b.closed || (b.owner != "" && tl.failedBetween(b.owner, l.start, m.t)) {
			break
		}
		tl.read(b, l, m)
	}
	tl.overtaken(b, l, now)
	if lag, ok := b.promoted[b.lane.To]; ok && b.lane.StandbyLag < 0 {
		b.lane.StandbyLag = lag
	}
	if b.restoreMs > 0 && b.lane.Restored > 0 {
		b.lane.RestoreRate = float64(b.lane.Restored) * 1000 / float64(b.restoreMs)
	}
	if !b.closed {
		b.end = now
	}
	return b
}

// read draws one mark of a task on its lane.
func (tl *timelines) read(b *laneBuild, l *laneRef, m mark) {
	switch m.kind {
	case kindTaskAssigned:
		if m.instance != l.from || l.planned || tl.movedBack(l) {
			tl.assign(b, m)
		}
	case kindTaskRevoked:
		if m.instance == l.from {
			b.lastRecord = m.lastRecord
		} else if m.instance == b.owner {
			b.owner = ""
			b.to(PhaseRebalancing, m.t, "revoked from "+m.instance+" by another rebalance")
		}
	case kindStandbyPromoted:
		// Told just before the assignment it makes.
		b.promoted[m.instance] = m.n
	case kindRestoreStarted:
		// A store loaded from a snapshot says so on the restoring phase,
		// which the assignment opened.
		if m.instance == b.owner && m.snapshot != "" && b.cur.Kind == PhaseRestoring && !strings.Contains(b.cur.Detail, "snapshot") {
			b.cur.Detail += " " + m.snapshot + "the changelog"
		}
	case kindRestoreProgress:
		if m.instance == b.owner {
			b.lane.Restored, b.lane.RestoreRate = m.n, m.rate
		}
	case kindRestoreFinished:
		if m.instance == b.owner {
			b.restoreMs += m.t - m.start
		}
	case kindTaskResumed:
		if m.instance == b.owner && l.planned {
			b.retime(m.start)
			b.lane.RecoveryMs = m.t - m.start
			b.lane.DowntimeMs = m.t - cmp.Or(b.lastRecord, l.start)
			b.lane.Restored = m.n
			tl.resume(b, m.t)
		}
	case kindTaskFailedOver:
		if !l.planned && m.failover.From == l.from {
			fo := m.failover
			b.owner, b.lane.To = fo.To, fo.To
			b.retime(m.start)
			b.lane.DetectionMs, b.lane.RecoveryMs, b.lane.DowntimeMs, b.lane.Restored = fo.DetectionMs, fo.RecoveryMs, fo.DowntimeMs, fo.Restored
			b.lane.Replica = fo.Replica
			if m.n >= 0 {
				b.lane.StandbyLag = m.n
			}
			tl.resume(b, m.t)
		}
	}
}

// movedBack reports whether a failed instance's task resumed on that
// instance again (it was started again): otherwise an assignment to it
// after its failure is one its dying App told, and no move.
func (tl *timelines) movedBack(l *laneRef) bool {
	for _, m := range tl.tasks[l.task] {
		if m.kind == kindTaskFailedOver && m.t >= l.start && m.failover.From == l.from {
			return m.failover.To == l.from
		}
	}
	return false
}

// assign moves a lane to the instance a task was assigned to: it promotes
// a standby or restores.
func (tl *timelines) assign(b *laneBuild, m mark) {
	b.owner, b.lane.To, b.lane.Replica = m.instance, m.instance, m.replica
	if m.replica == "standby" {
		b.to(PhasePromoting, m.t, "standby on "+m.instance+" takes over")
		return
	}
	detail := "restoring on " + m.instance
	if m.replica == "warm-up" {
		detail = "warm-up on " + m.instance + " catches up"
	}
	b.to(PhaseRestoring, m.t, detail)
}

// retime moves the start of the lane's recovery phase to assignedAt, as
// the runtime measured it (the task-assigned event is told a little
// later), so that the phases before it add up to the detection and it to
// the recovery.
func (b *laneBuild) retime(assignedAt int64) {
	n := len(b.phases)
	if assignedAt == 0 || n == 0 || (b.cur.Kind != PhaseRestoring && b.cur.Kind != PhasePromoting) ||
		assignedAt < b.phases[n-1].Start || assignedAt > b.cur.End && b.cur.End != 0 {
		return
	}
	b.phases[n-1].End, b.cur.Start = assignedAt, assignedAt
}

func (tl *timelines) resume(b *laneBuild, t int64) {
	if b.cur.Kind == PhaseRestoring || b.cur.Kind == PhasePromoting {
		b.cur.Detail = recoveryDetail(b.cur.Detail, b.lane)
	}
	b.to(PhaseProcessing, t, "on "+b.owner)
	b.closed, b.end = true, t
}

// recoveryDetail says what a restore or promotion replayed.
func recoveryDetail(detail string, l TaskLane) string {
	if l.StandbyLag >= 0 {
		detail += fmt.Sprintf(", %d records behind at the failure", l.StandbyLag)
	}
	if l.Restored > 0 {
		detail += fmt.Sprintf(", %d records restored", l.Restored)
	}
	return detail
}

// overtaken ends a lane whose new owner failed before it resumed: the
// move goes on in that failure's timeline.
func (tl *timelines) overtaken(b *laneBuild, l *laneRef, now int64) {
	if b.closed || b.owner == "" {
		return
	}
	for _, m := range tl.instances[b.owner] {
		if m.t > l.start && m.t <= now && isFailure(m.kind) {
			b.cur.Detail += "; overtaken: " + b.owner + " " + m.kind[len("instance-"):]
			b.closed, b.end = true, m.t
			b.cur.End = m.t
			return
		}
	}
}

// failedBetween reports whether the instance crashed or stopped after
// from and by to.
func (tl *timelines) failedBetween(instance string, from, to int64) bool {
	for _, m := range tl.instances[instance] {
		if m.t > from && m.t <= to && isFailure(m.kind) {
			return true
		}
	}
	return false
}

func isFailure(kind string) bool {
	return kind == kindInstanceCrashed || kind == kindInstanceCrashWiped || kind == kindInstanceStopped
}

// noticed returns when the group began the rebalance that noticed a
// failure: the first rebalance of another instance that started after it.
func (tl *timelines) noticed(l *laneRef) (int64, bool) {
	first, ok := int64(0), false
	for in, ms := range tl.instances {
		if in == l.from {
			continue
		}
		for _, m := range ms {
			if m.kind == kindRebalance && m.start >= l.start && (!ok || m.start < first) {
				first, ok = m.start, true
			}
		}
	}
	return first, ok
}

// detectingDetail says how the group was to notice a failure.
func (tl *timelines) detectingDetail(l *laneRef) string {
	for _, m := range slices.Backward(tl.tasks[l.task]) {
		if m.kind == kindTaskFailedOver && m.failover.From == l.from && m.t >= l.start {
			return "waiting for the group to notice" + detectedBy(m.failover.DetectedBy)
		}
	}
	return "waiting for the group to notice"
}

// instanceLanes draws every instance that held a task, moved one or
// rebalanced during the failover.
func (tl *timelines) instanceLanes(f *failover, t FailoverTimeline, end int64) []InstanceLane {
	seen := map[string]bool{f.instance: true}
	for _, l := range t.Tasks {
		seen[l.From], seen[l.To] = true, true
	}
	for in, ms := range tl.instances {
		for _, m := range ms {
			if m.kind == kindRebalance && m.t >= f.at && m.start <= end {
				seen[in] = true
			}
		}
	}
	for _, in := range tl.owner {
		seen[in] = true
	}
	delete(seen, "")
	ids := slices.Sorted(func(yield func(string) bool) {
		for in := range seen {
			if !yield(in) {
				return
			}
		}
	})
	out := make([]InstanceLane, 0, len(ids))
	for _, in := range ids {
		out = append(out, InstanceLane{Instance: in, Phases: tl.instancePhases(f, in, end)})
	}
	return out
}

// instancePhases draws an instance from f's start to end: processing,
// rebalancing while it rebalanced, paused while it was down. The instance
// that crashed or stopped pauses at the failure, though a stop is told
// once done.
func (tl *timelines) instancePhases(f *failover, in string, end int64) []Phase {
	start := f.at - timelineLead
	b := &laneBuild{cur: Phase{Kind: PhaseProcessing, Start: start}}
	failing := in == f.instance && (f.cause == "crash" || f.cause == "stop")
	switch {
	case f.cause == "instance-added" && in == f.instance:
		b.cur = Phase{Kind: PhaseRebalancing, Start: f.at, Detail: "added: joining the group"}
		start = f.at
	}
	pause := func(before int64) {
		if failing && before >= f.at {
			b.to(PhasePaused, max(f.at, b.cur.Start), f.cause)
			failing = false
		}
	}
	for _, m := range tl.instances[in] {
		s := m.t
		if m.kind == kindRebalance {
			s = m.start
		}
		if s > end || m.t < start || (in == f.instance && isFailure(m.kind) && m.t >= f.at && m.t-f.at <= stopWindowMs) {
			continue
		}
		pause(s)
		switch m.kind {
		case kindInstanceCrashed, kindInstanceCrashWiped, kindInstanceStopped:
			b.to(PhasePaused, max(s, b.cur.Start), m.kind[len("instance-"):])
		case kindInstanceStarted:
			b.to(PhaseRebalancing, max(s, b.cur.Start), "started: joining the group")
		case kindRebalance:
			if b.cur.Kind != PhaseRebalancing {
				b.to(PhaseRebalancing, max(s, b.cur.Start), "")
			}
			b.cur.Detail = fmt.Sprintf("rebalanced in %d ms", m.t-m.start)
			if in == f.instance && f.cause != "instance-added" && f.cause != "probing" && s < f.at && m.t > f.at {
				// A rebalance the failure cut short.
				b.to(PhasePaused, f.at, f.cause)
				failing = false
				continue
			}
			b.to(PhaseProcessing, min(m.t, end), "")
		}
	}
	pause(f.at)
	return b.finish(start, end).Phases
}
