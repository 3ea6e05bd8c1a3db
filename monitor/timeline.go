package monitor

import (
	"cmp"
	"slices"
	"strconv"
	"time"
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
// the timelines are rendered (timeline_draw.go), so a mark that arrives late (a rebalance is
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
	Unmoved []string `json:"unmoved"`
	// Pauses are the unmoved tasks' suspensions within the timeline: a
	// rebalance that set a task aside and gave it back (under the eager
	// protocol every rebalance of its instance does), oldest first.
	Pauses    []TaskPause    `json:"pauses"`
	Instances []InstanceLane `json:"instances"`
}

// TaskPause is an unmoved task suspended on its instance by a rebalance,
// from Start to End (unix ms).
type TaskPause struct {
	Task     string `json:"task"`
	Instance string `json:"instance"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
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
	// a restore's records and records/s; lastRecord a revocation's;
	// kept the tasks a rebalance suspended and gave back.
	start, n, lastRecord int64
	rate                 float64
	replica              string
	kept                 []string
	// snapshot says, for a restore that began from a snapshot, which:
	// "from snapshot s (2m0s old, ...), then ".
	snapshot string
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

// add reads one event; kinds not in timelineKinds are ignored. A detail
// that is not its kind's (one read back damaged) reads as zeros, as a
// missing field does.
func (tl *timelines) add(ev Event) {
	mk := mark{kind: ev.Kind, t: ev.Time, instance: ev.Instance}
	switch ev.Kind {
	case kindTaskAssigned:
		d, _ := ev.Detail.(TaskAssignedDetail)
		mk.replica = d.FromReplica
		prev := tl.owner[ev.Task]
		tl.owner[ev.Task] = ev.Instance
		addMark(tl.tasks, ev.Task, mk)
		tl.assigned(ev, prev, mk.replica)
	case kindTaskRevoked:
		d, _ := ev.Detail.(TaskRevokedDetail)
		mk.lastRecord = d.LastRecordAt
		if tl.owner[ev.Task] == ev.Instance {
			delete(tl.owner, ev.Task)
		}
		addMark(tl.tasks, ev.Task, mk)
	case kindTaskResumed:
		d, _ := ev.Detail.(TaskResumedDetail)
		mk.start, mk.n, mk.replica = d.AssignedAt, d.Restored, d.FromReplica
		mk.t = cmp.Or(d.FirstRecordAt, ev.Time)
		addMark(tl.tasks, ev.Task, mk)
	case kindTaskFailedOver:
		d, _ := ev.Detail.(TaskFailedOverDetail)
		tl.failedOver(ev.Task, ev.Time, d, mk)
	case kindRestoreStarted:
		d, _ := ev.Detail.(RestoreStartedDetail)
		mk.snapshot, _ = d.SnapshotLoad.describe(time.UnixMilli(ev.Time))
		addMark(tl.tasks, ev.Task, mk)
	case kindRestoreProgress:
		d, _ := ev.Detail.(RestoreProgressDetail)
		mk.n, mk.rate = d.Restored, d.Rate
		addMark(tl.tasks, ev.Task, mk)
	case kindRestoreFinished:
		d, _ := ev.Detail.(RestoreFinishedDetail)
		mk.n, mk.rate, mk.start = d.Restored, d.Rate, ev.Time-d.DurationMs
		addMark(tl.tasks, ev.Task, mk)
	case kindStandbyPromoted:
		d, _ := ev.Detail.(StandbyPromotedDetail)
		mk.n = d.Lag
		addMark(tl.tasks, ev.Task, mk)
	case kindRebalance:
		d, _ := ev.Detail.(RebalanceDetail)
		mk.start, mk.kept = ev.Time-d.DurationMs, d.Kept
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
func (tl *timelines) failedOver(task string, t int64, d TaskFailedOverDetail, mk mark) {
	measured := failoverRow(task, t, d)
	f := &measured
	mk.failover, mk.failedAt, mk.t, mk.start = f, d.FailedAt, f.At, d.AssignedAt
	mk.n = -1
	if d.StandbyLag != nil {
		mk.n = *d.StandbyLag
	}
	addMark(tl.tasks, task, mk)
	failedAt := cmp.Or(mk.failedAt, f.At-f.DetectionMs-f.RecoveryMs)
	fo := tl.failure(f.From, failedAt)
	if fo == nil {
		fo = tl.open(cmp.Or(f.Cause, "crash"), f.From, failedAt)
	}
	fo.addLane(&laneRef{task: task, from: f.From, start: failedAt}).start = failedAt
	fo.at = min(fo.at, failedAt)
}
