package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// The failover timeline: the monitor's events of one deployment turned
// into one FailoverTimeline per failover (a crash, a stop, an added
// instance, a probing move), with a lane of phases per moved task and per
// instance, for the live page to draw and `braid watch` to print.
//
// A timelines value is fed every event of its deployment that tells of a
// failover (timelineKinds), in order, and keeps per task and per
// instance a bounded history of marks (assigned, revoked, restored,
// resumed, rebalanced, crashed, ...). A failover opens a timeline and
// names its lanes' tasks; the phases are drawn from the marks each time
// the timelines are rendered, so a mark that arrives late (a rebalance is
// told when it ends, a stopped instance after its tasks left) still lands
// in the right place. The numbers of a crashed or stopped instance's lane
// (detection, recovery, downtime) are those of its task-failed-over event,
// which the failover table shows too: computed once, in the hook.

// FailoverTimeline is one failover: what caused it, when, and a lane of
// phases for each task it moved and each instance.
type FailoverTimeline struct {
	ID string `json:"id"`
	// Cause is "crash", "stop", "instance-added" or "probing".
	Cause string `json:"cause"`
	// Instance is the one that crashed, stopped or was added; for a
	// probing move, the one that took the tasks.
	Instance string `json:"instance"`
	// At is when it began; End when its last moved task resumed, or the
	// render time while one has not (Done false).
	At   int64 `json:"at"`
	End  int64 `json:"end"`
	Done bool  `json:"done"`
	// SessionTimeoutMs is the group's session timeout: how long the group
	// takes to notice a crash that no one reports.
	SessionTimeoutMs int64      `json:"sessionTimeoutMs"`
	Tasks            []TaskLane `json:"tasks"`
	// Unmoved are the tasks that kept running on their instances.
	Unmoved   []string       `json:"unmoved"`
	Instances []InstanceLane `json:"instances"`
}

// TaskLane is one moved task. For a crash or a stop, DetectionMs,
// RecoveryMs and DowntimeMs are the failover table's (Failover), -1 until
// the task resumed (or when another failover overtook the move: its
// owner crashed too before it resumed). For a planned move (an added
// instance, a probing move) nothing was to be detected: DetectionMs is 0,
// RecoveryMs runs from the assignment to the first record and DowntimeMs
// from the task's last record on its old owner to the first on the new.
type TaskLane struct {
	Task string `json:"task"`
	From string `json:"from"`
	To   string `json:"to"`
	// Replica is what the new owner held: "standby", "warm-up" or "".
	Replica string `json:"replica"`
	// StandbyLag is how many records the new owner's replica was behind
	// at the crash, -1 when it had none.
	StandbyLag  int64   `json:"standbyLag"`
	Restored    int64   `json:"restored"`
	RestoreRate float64 `json:"restoreRate"` // records/s
	DetectionMs int64   `json:"detectionMs"`
	RecoveryMs  int64   `json:"recoveryMs"`
	DowntimeMs  int64   `json:"downtimeMs"`
	Phases      []Phase `json:"phases"`
}

// Phase is a span of a lane: Kind is "processing", "detecting" (the group
// has not noticed the failure yet), "rebalancing", "restoring",
// "promoting" (a standby taking over) or "paused" (an instance that is
// down). Start and End are unix ms.
type Phase struct {
	Kind   string `json:"kind"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Detail string `json:"detail,omitempty"`
}

// InstanceLane is one instance of the deployment during a failover.
type InstanceLane struct {
	Instance string  `json:"instance"`
	Phases   []Phase `json:"phases"`
}

// Phase kinds.
const (
	PhaseProcessing  = "processing"
	PhaseDetecting   = "detecting"
	PhaseRebalancing = "rebalancing"
	PhaseRestoring   = "restoring"
	PhasePromoting   = "promoting"
	PhasePaused      = "paused"
)

const (
	// maxTimelines is how many failovers a deployment keeps.
	maxTimelines = 20
	// timelineLead is how much of the time before a failover its lanes
	// show, as processing.
	timelineLead = 1000
	// timelineMaxOpenMs bounds a failover whose tasks do not all resume
	// (a task that gets no record): its end is then its last mark.
	timelineMaxOpenMs = 120_000
	// stopWindowMs is how long before a stop is told its instance's
	// revoked tasks count as moved by it: the stop is told once done.
	stopWindowMs = 30_000
	// maxMarks is how many marks a task or an instance keeps.
	maxMarks = 64
)

// timelineKinds are the event kinds a timelines value reads.
var timelineKinds = map[string]bool{
	kindTaskAssigned: true, kindTaskRevoked: true, kindTaskResumed: true, kindTaskFailedOver: true,
	kindRestoreStarted: true, kindRestoreProgress: true, kindRestoreFinished: true, kindStandbyPromoted: true,
	kindRebalance: true, kindInstanceCrashed: true, kindInstanceCrashWiped: true, kindInstanceStopped: true,
	kindInstanceStarted: true, kindInstanceAdded: true,
}

// mark is one timestamped fact of a task's or an instance's history.
type mark struct {
	kind     string // an event kind
	t        int64  // unix ms
	instance string
	// start is a rebalance's start; replica an assignment's; n and rate
	// a restore's records and records/s; lastRecord a revocation's.
	start, n, lastRecord int64
	rate                 float64
	replica              string
	// failover holds a task-failed-over event's measure.
	failover *Failover
	failedAt int64
}

// timelines builds the failover timelines of one deployment.
type timelines struct {
	sessionTimeoutMs int64
	seq              int
	// owner is the instance each task is active on (assigned, not
	// revoked): a crashed instance's tasks stay its own until assigned.
	owner     map[string]string
	tasks     map[string][]mark
	instances map[string][]mark
	list      []*failover // oldest first, at most maxTimelines
}

// failover is an open or closed timeline: its lanes' tasks and where
// they started.
type failover struct {
	id, cause, instance string
	at                  int64
	lanes               []*laneRef
	// running are the tasks active elsewhere when it began.
	running []string
}

type laneRef struct {
	task, from string
	// start is the failure (a crash or stop) or the revocation (a move).
	start   int64
	planned bool
}

func newTimelines(sessionTimeoutMs int64) *timelines {
	return &timelines{sessionTimeoutMs: sessionTimeoutMs, owner: map[string]string{}, tasks: map[string][]mark{},
		instances: map[string][]mark{}}
}

// BuildTimelines turns a deployment's events, oldest first, into its
// failover timelines, oldest first, as rendered at now (unix ms).
func BuildTimelines(events []Event, sessionTimeoutMs, now int64) []FailoverTimeline {
	tl := newTimelines(sessionTimeoutMs)
	for _, ev := range events {
		tl.add(ev)
	}
	return tl.render(now)
}

func addMark(m map[string][]mark, key string, mk mark) {
	ms := append(m[key], mk)
	if len(ms) > maxMarks {
		ms = slices.Delete(ms, 0, len(ms)-maxMarks)
	}
	m[key] = ms
}

// add reads one event; kinds not in timelineKinds are ignored.
func (tl *timelines) add(ev Event) {
	mk := mark{kind: ev.Kind, t: ev.Time, instance: ev.Instance}
	switch ev.Kind {
	case kindTaskAssigned:
		mk.replica = str(ev.Detail, "fromReplica")
		prev := tl.owner[ev.Task]
		tl.owner[ev.Task] = ev.Instance
		addMark(tl.tasks, ev.Task, mk)
		tl.assigned(ev, prev, mk.replica)
	case kindTaskRevoked:
		mk.lastRecord = num(ev.Detail, "lastRecord")
		if tl.owner[ev.Task] == ev.Instance {
			delete(tl.owner, ev.Task)
		}
		addMark(tl.tasks, ev.Task, mk)
	case kindTaskResumed:
		mk.start, mk.n, mk.replica = num(ev.Detail, "assignedAt"), num(ev.Detail, "restored"), str(ev.Detail, "fromReplica")
		mk.t = cmp.Or(num(ev.Detail, "firstRecordAt"), ev.Time)
		addMark(tl.tasks, ev.Task, mk)
	case kindTaskFailedOver:
		tl.failedOver(ev, mk)
	case kindRestoreStarted, kindRestoreProgress, kindRestoreFinished:
		mk.n, mk.rate = num(ev.Detail, "restored"), flt(ev.Detail, "rate")
		if ev.Kind == kindRestoreFinished {
			mk.start = ev.Time - num(ev.Detail, "tookMs")
		}
		addMark(tl.tasks, ev.Task, mk)
	case kindStandbyPromoted:
		mk.n = num(ev.Detail, "lag")
		addMark(tl.tasks, ev.Task, mk)
	case kindRebalance:
		mk.start = ev.Time - num(ev.Detail, "durationMs")
		addMark(tl.instances, ev.Instance, mk)
	case kindInstanceCrashed, kindInstanceCrashWiped, kindInstanceStopped, kindInstanceStarted, kindInstanceAdded:
		addMark(tl.instances, ev.Instance, mk)
		tl.instanceEvent(ev)
	}
}

// instanceEvent opens a timeline for a crash, a stop or an added
// instance.
func (tl *timelines) instanceEvent(ev Event) {
	switch ev.Kind {
	case kindInstanceCrashed, kindInstanceCrashWiped:
		f := tl.open("crash", ev.Instance, ev.Time)
		for task, in := range tl.owner {
			if in == ev.Instance {
				f.lanes = append(f.lanes, &laneRef{task: task, from: in, start: ev.Time})
			}
		}
	case kindInstanceStopped:
		// Told once the instance stopped: its tasks may have moved (and
		// their failover been measured) already. Those it gave up since the
		// stop began are its lanes.
		f := tl.failure(ev.Instance, ev.Time)
		if f == nil {
			f = tl.open("stop", ev.Instance, ev.Time)
		}
		for task, ms := range tl.tasks {
			for _, m := range slices.Backward(ms) {
				if m.kind == kindTaskRevoked && m.instance == ev.Instance && ev.Time-m.t <= stopWindowMs {
					f.addLane(&laneRef{task: task, from: ev.Instance, start: m.t})
					break
				}
			}
		}
	case kindInstanceAdded:
		tl.open("instance-added", ev.Instance, ev.Time)
	}
}

// failure returns the timeline of the instance's crash or stop near at.
func (tl *timelines) failure(instance string, at int64) *failover {
	return tl.newest(func(f *failover) bool {
		return f.instance == instance && (f.cause == "crash" || f.cause == "stop") && at-f.at <= stopWindowMs && f.at-at <= stopWindowMs
	})
}

// addLane adds a lane unless the task has one here already, and moves the
// timeline's start to the lane's.
func (f *failover) addLane(l *laneRef) *laneRef {
	for _, have := range f.lanes {
		if have.task == l.task {
			return have
		}
	}
	f.lanes = append(f.lanes, l)
	f.at = min(f.at, l.start)
	return l
}

// open starts a timeline at at, noting the tasks running elsewhere.
func (tl *timelines) open(cause, instance string, at int64) *failover {
	tl.seq++
	f := &failover{id: strconv.Itoa(tl.seq), cause: cause, instance: instance, at: at}
	for task, in := range tl.owner {
		if (in != instance || cause == "probing") && tl.laneOf(task, at) == nil {
			f.running = append(f.running, task)
		}
	}
	tl.list = append(tl.list, f)
	if len(tl.list) > maxTimelines {
		tl.list = slices.Delete(tl.list, 0, len(tl.list)-maxTimelines)
	}
	return f
}

// assigned adds a planned move to its timeline: a task that arrives on an
// added instance, or on a caught-up warm-up (a probing move).
func (tl *timelines) assigned(ev Event, prev, replica string) {
	if tl.laneOf(ev.Task, ev.Time) != nil {
		return
	}
	revoked, from := tl.lastRevoke(ev.Task, ev.Time)
	if prev != "" && prev != ev.Instance {
		from = prev
	}
	if from == "" || from == ev.Instance {
		return
	}
	start := cmp.Or(revoked, ev.Time)
	var f *failover
	if replica != "warm-up" {
		f = tl.newest(func(f *failover) bool {
			return f.cause == "instance-added" && f.instance == ev.Instance && ev.Time-f.at <= stopWindowMs
		})
	} else {
		f = tl.newest(func(f *failover) bool {
			return f.cause == "probing" && f.instance == ev.Instance && ev.Time-f.at <= stopWindowMs
		})
		if f == nil {
			f = tl.open("probing", ev.Instance, start)
		}
	}
	if f != nil {
		f.addLane(&laneRef{task: ev.Task, from: from, start: start, planned: true})
	}
}

// lastRevoke returns the task's last revocation before t, and from where.
func (tl *timelines) lastRevoke(task string, t int64) (int64, string) {
	for _, m := range slices.Backward(tl.tasks[task]) {
		if m.t <= t && m.kind == kindTaskRevoked {
			return m.t, m.instance
		}
	}
	return 0, ""
}

// laneOf returns the lane of a task that has not resumed by t, if any.
func (tl *timelines) laneOf(task string, t int64) *laneRef {
	for _, f := range slices.Backward(tl.list) {
		for _, l := range f.lanes {
			if l.task == task && t-l.start <= timelineMaxOpenMs && !tl.resumedSince(task, l.start, t) {
				return l
			}
		}
	}
	return nil
}

// resumedSince reports whether the task resumed between from and to.
func (tl *timelines) resumedSince(task string, from, to int64) bool {
	for _, m := range tl.tasks[task] {
		if m.kind == kindTaskResumed && m.t >= from && m.t <= to {
			return true
		}
	}
	return false
}

func (tl *timelines) newest(match func(*failover) bool) *failover {
	for _, f := range slices.Backward(tl.list) {
		if match(f) {
			return f
		}
	}
	return nil
}

// failedOver records a crashed or stopped instance's task's measured move,
// and gives it a lane if none has it yet (a failover whose instance event
// the monitor did not see: one measured from telemetry).
func (tl *timelines) failedOver(ev Event, mk mark) {
	d := ev.Detail
	f := &Failover{Task: ev.Task, From: str(d, "from"), To: str(d, "to"), Cause: str(d, "cause"), Replica: str(d, "replica"),
		DetectionMs: num(d, "detectionMs"), DetectedBy: str(d, "detectedBy"), RecoveryMs: num(d, "recoveryMs"),
		DowntimeMs: num(d, "downtimeMs"), Restored: num(d, "restored"), At: cmp.Or(num(d, "resumedAt"), ev.Time)}
	mk.failover, mk.failedAt, mk.t, mk.start = f, num(d, "failedAt"), f.At, num(d, "assignedAt")
	mk.n = -1
	if _, ok := d["standbyLag"]; ok {
		mk.n = num(d, "standbyLag")
	}
	addMark(tl.tasks, ev.Task, mk)
	failedAt := cmp.Or(mk.failedAt, f.At-f.DetectionMs-f.RecoveryMs)
	fo := tl.failure(f.From, failedAt)
	if fo == nil {
		fo = tl.open(cmp.Or(f.Cause, "crash"), f.From, failedAt)
	}
	fo.addLane(&laneRef{task: ev.Task, from: f.From, start: failedAt}).start = failedAt
	fo.at = min(fo.at, failedAt)
}

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
		Tasks: []TaskLane{}, Unmoved: []string{}, Instances: []InstanceLane{}}
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
	t.Instances = tl.instanceLanes(f, t, end)
	return t
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
		cur: Phase{Kind: PhaseProcessing, Start: l.start}}
	if l.planned {
		b.lane.DetectionMs = 0
		b.to(PhaseRebalancing, l.start, "revoked from "+l.from)
	} else {
		b.to(PhaseDetecting, l.start, tl.detectingDetail(l))
		if s, ok := tl.noticed(l); ok {
			b.to(PhaseRebalancing, s, "the group rebalances")
		}
	}
	var lastRecord int64
	var restoreMs int64
	for _, m := range tl.tasks[l.task] {
		if m.t < l.start || (m.t == l.start && m.kind != kindTaskAssigned) {
			if m.kind == kindTaskRevoked && m.instance == l.from {
				lastRecord = m.lastRecord
			}
			continue
		}
		if b.closed || (b.owner != "" && tl.failedBetween(b.owner, l.start, m.t)) {
			break
		}
		switch m.kind {
		case kindTaskAssigned:
			if m.instance != l.from || l.planned || tl.movedBack(l) {
				tl.assign(b, m)
			}
		case kindTaskRevoked:
			if m.instance == l.from {
				lastRecord = m.lastRecord
			} else if m.instance == b.owner {
				b.owner = ""
				b.to(PhaseRebalancing, m.t, "revoked from "+m.instance+" by another rebalance")
			}
		case kindStandbyPromoted:
			if m.instance == b.lane.To && b.lane.StandbyLag < 0 {
				b.lane.StandbyLag = m.n
			}
		case kindRestoreProgress:
			if m.instance == b.owner {
				b.lane.Restored, b.lane.RestoreRate = m.n, m.rate
			}
		case kindRestoreFinished:
			if m.instance == b.owner {
				restoreMs += m.t - m.start
			}
		case kindTaskResumed:
			if m.instance == b.owner && l.planned {
				b.retime(m.start)
				b.lane.RecoveryMs = m.t - m.start
				b.lane.DowntimeMs = m.t - cmp.Or(lastRecord, l.start)
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
	tl.overtaken(b, l, now)
	if restoreMs > 0 && b.lane.Restored > 0 {
		b.lane.RestoreRate = float64(b.lane.Restored) * 1000 / float64(restoreMs)
	}
	if !b.closed {
		b.end = now
	}
	return b
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

// num reads an integer of an event's detail: an int64 as the hooks write
// it, or a float64 as JSON decodes it.
func num(d map[string]any, key string) int64 {
	switch v := d[key].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}

func flt(d map[string]any, key string) float64 {
	switch v := d[key].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	return 0
}

func str(d map[string]any, key string) string {
	s, _ := d[key].(string)
	return s
}
