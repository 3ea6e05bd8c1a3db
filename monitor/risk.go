package monitor

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// "What if it died now": for each running instance, whether losing it
// would be safe, and how long each of its active tasks would stand still.
//
// A task stands still, as a failover's downtime measures it, from its last
// record before the crash until its new owner processes again: the time
// since that record when the crash comes (gap), then the group must notice
// (detection), the new owner must replay what its replica of the task
// lacks (replay), and fetch and process its first record (resume). The gap
// is projected as gapIntervals times the task's mean time between records
// (from its records/s; 0 for a task with no input): random arrivals leave
// a longer gap 2% of the time. Detection is what the deployment's
// instances would see: a Supervisor that sees its instance die removes the
// member at once (runtime/streams/detect.go), and the others join the
// rebalance at their next heartbeat; nobody removes a member whose process
// died, and the group waits for its session to time out first. So the
// projected detection is the heartbeat interval plus the longest of the
// deployment's recent rebalances (maxRebalances, measured from its
// instances' rebalancing-to-running changes; defaultRebalance before
// any), plus the session timeout when no Supervisor sees the crash.
// Replay is the best replica's lag at the restore rate measured last
// (a restore of at least minRestoreForRate records; defaultRestoreRate
// before any). Resume is resumeAllowance. A task is safe when a standby or warm-up on another
// running instance is within the acceptable recovery lag (the assignor
// moves the task there), or when it has no changelogged state. A task with
// state and no replica would restore its whole changelog, of a size the
// snapshot does not know: at risk, with no projection.
//
// The projection assumes records keep arriving at the rate they do.

const (
	// defaultRestoreRate is the restore rate, in records/s, assumed before
	// any restore was measured: well below what `braid bench restore`
	// measures on a laptop, so that the projection errs long.
	defaultRestoreRate = 10_000
	// minRestoreForRate is the smallest restore whose rate is kept: a few
	// records restore too fast for their rate to mean anything.
	minRestoreForRate = 1_000
	// defaultRebalance is the rebalance time assumed before any was
	// measured.
	defaultRebalance = time.Second
	// maxRebalances is how many recent rebalances the projection's
	// rebalance time is the longest of.
	maxRebalances = 8
	// resumeAllowance is what the projection adds for the Supervisor's
	// removal request and the new owner's first fetch, which
	// TestFailoverShowsProjection measures at 20 to 60 ms together on the
	// embedded broker.
	resumeAllowance = 250 * time.Millisecond
	// gapIntervals is how many mean intervals between a task's records
	// the projected gap before a crash is.
	gapIntervals = 4
	// riskHistory is how many assessments of an instance are kept, one per
	// sample, so that a failover finds the one made just before its crash.
	riskHistory = 8
)

// Risk is what losing an instance now would do: Safe when every active
// task has a caught-up replica elsewhere (or no state to replay).
type Risk struct {
	Safe bool `json:"safe"`
	// WorstTask is the task that would stand still longest ("" with no
	// active task); ProjectedDowntimeMs is its projection, -1 when
	// unknown (state without a replica).
	WorstTask           string `json:"worstTask,omitempty"`
	ProjectedDowntimeMs int64  `json:"projectedDowntimeMs"`
	// DetectionMs is the projected detection, DetectedBy how the group
	// would notice the crash (streams.DetectedBySupervisor or
	// DetectedBySessionTimeout), ResumeMs the allowance for resuming.
	DetectionMs int64  `json:"detectionMs"`
	DetectedBy  string `json:"detectedBy"`
	ResumeMs    int64  `json:"resumeMs"`
	// RestoreRate is the records/s replay is projected at; measured says
	// it was measured here, not assumed (defaultRestoreRate).
	RestoreRate         float64    `json:"restoreRate"`
	RestoreRateMeasured bool       `json:"restoreRateMeasured"`
	Tasks               []TaskRisk `json:"tasks"`
}

// TaskRisk is one active task's projection.
type TaskRisk struct {
	Task string `json:"task"`
	Safe bool   `json:"safe"`
	// Stateless says the task has no changelogged store: it replays
	// nothing.
	Stateless bool `json:"stateless,omitempty"`
	// Replica is the instance holding its best replica ("" none), Role
	// that replica's ("standby" or "warmup") and Lag its changelog
	// records behind (-1 with no replica).
	Replica string `json:"replica,omitempty"`
	Role    string `json:"role,omitempty"`
	Lag     int64  `json:"lag"`
	// GapMs is the projected time from its last record to the crash.
	GapMs int64 `json:"gapMs"`
	// ProjectedDowntimeMs is gap, detection, replay and resume, -1 when
	// unknown.
	ProjectedDowntimeMs int64 `json:"projectedDowntimeMs"`
}

// RiskParams is what an assessment needs beyond the instances.
type RiskParams struct {
	// DetectedBy is how the group would notice a crash:
	// streams.DetectedBySupervisor or DetectedBySessionTimeout.
	DetectedBy        string
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// Rebalance is how long a rebalance is projected to take, Resume the
	// allowance for resuming.
	Rebalance, Resume     time.Duration
	AcceptableRecoveryLag int64
	// RestoreRate is in records/s; RestoreRateMeasured says it was
	// measured.
	RestoreRate         float64
	RestoreRateMeasured bool
	// Stateful holds the sub-topologies with a changelogged store.
	Stateful map[int]bool
}

// Detection is the projected time from a crash to its tasks' assignment.
func (p RiskParams) Detection() time.Duration {
	d := p.HeartbeatInterval + p.Rebalance
	if p.DetectedBy != streams.DetectedBySupervisor {
		d += p.SessionTimeout
	}
	return d
}

// AssessRisk assesses each running instance of instances (a snapshot's),
// by id; instances not running get none.
func AssessRisk(instances []Instance, p RiskParams) map[string]*Risk {
	type replica struct {
		instance, role string
		lag            int64
	}
	replicas := map[string][]replica{}
	for _, in := range instances {
		if in.State != "running" && in.State != "rebalancing" {
			continue
		}
		for _, t := range in.Tasks {
			if (t.Role == "standby" || t.Role == "warmup") && t.StandbyLag != nil {
				replicas[t.ID] = append(replicas[t.ID], replica{in.ID, t.Role, t.StandbyLag.Records})
			}
		}
	}
	detection, resume := p.Detection().Milliseconds(), p.Resume.Milliseconds()
	out := map[string]*Risk{}
	for _, in := range instances {
		if in.State != "running" && in.State != "rebalancing" {
			continue
		}
		r := &Risk{Safe: true, DetectionMs: detection, DetectedBy: p.DetectedBy, ResumeMs: resume, RestoreRate: p.RestoreRate,
			RestoreRateMeasured: p.RestoreRateMeasured, Tasks: []TaskRisk{}}
		for _, t := range in.Tasks {
			if t.Role != "active" {
				continue
			}
			tr := TaskRisk{Task: t.ID, Lag: -1, ProjectedDowntimeMs: -1, GapMs: gapMs(t.InPerSec)}
			if !p.Stateful[subtopology(t.ID)] {
				tr.Safe, tr.Stateless, tr.ProjectedDowntimeMs = true, true, tr.GapMs+detection+resume
			} else if rs := replicas[t.ID]; len(rs) > 0 {
				best := slices.MinFunc(rs, func(a, b replica) int { return cmp.Compare(a.lag, b.lag) })
				tr.Replica, tr.Role, tr.Lag = best.instance, best.role, best.lag
				tr.Safe = best.lag <= p.AcceptableRecoveryLag
				tr.ProjectedDowntimeMs = tr.GapMs + detection + replayMs(best.lag, p.RestoreRate) + resume
			}
			r.Safe = r.Safe && tr.Safe
			r.Tasks = append(r.Tasks, tr)
		}
		r.WorstTask, r.ProjectedDowntimeMs = worst(r.Tasks)
		out[in.ID] = r
	}
	return out
}

// replayMs is how long replaying lag records takes at rate records/s.
func replayMs(lag int64, rate float64) int64 {
	if lag <= 0 || rate <= 0 {
		return 0
	}
	return int64(math.Ceil(float64(lag) / rate * 1000))
}

// gapMs is the projected time from a task's last record to a crash, for a
// task taking in perSec records/s.
func gapMs(perSec float64) int64 {
	if perSec <= 0 {
		return 0
	}
	return int64(math.Ceil(gapIntervals * 1000 / perSec))
}

// worst returns the task that would stand still longest, an unknown
// projection counting as the longest, and its projection.
func worst(tasks []TaskRisk) (task string, ms int64) {
	ms = 0
	for _, t := range tasks {
		switch {
		case task == "":
			task, ms = t.Task, t.ProjectedDowntimeMs
		case ms == -1:
		case t.ProjectedDowntimeMs == -1 || t.ProjectedDowntimeMs > ms || !t.Safe && t.ProjectedDowntimeMs == ms:
			task, ms = t.Task, t.ProjectedDowntimeMs
		}
	}
	return task, ms
}

// RiskiestInstance is the instance whose loss would hurt most: one not
// safe before a safe one, then the longest projection (unknown the
// longest); "" when no instance was assessed.
func RiskiestInstance(instances []Instance) string {
	best := ""
	var bestRisk *Risk
	for _, in := range instances {
		r := in.Risk
		if r == nil || len(r.Tasks) == 0 {
			continue
		}
		if bestRisk == nil || riskier(r, bestRisk) {
			best, bestRisk = in.ID, r
		}
	}
	return best
}

// riskier says whether a is riskier than b.
func riskier(a, b *Risk) bool {
	if a.Safe != b.Safe {
		return !a.Safe
	}
	if a.ProjectedDowntimeMs == -1 || b.ProjectedDowntimeMs == -1 {
		return a.ProjectedDowntimeMs == -1 && b.ProjectedDowntimeMs != -1
	}
	return a.ProjectedDowntimeMs > b.ProjectedDowntimeMs
}

// subtopology is the sub-topology of a task id ("1_3" is 1), -1 when the
// id is not one.
func subtopology(task string) int {
	s, _, ok := strings.Cut(task, "_")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// riskAt is an assessment of an instance made from the sample taken at
// at.
type riskAt struct {
	at   time.Time
	risk *Risk
}

// riskParams is what d's assessments take now, nil when d does not know
// its instances' failure settings (FailureSettings unset).
func (d *deployment) riskParams() *RiskParams {
	if d.info.SessionTimeout <= 0 {
		return nil
	}
	p := &RiskParams{DetectedBy: d.info.CrashDetectedBy, SessionTimeout: d.info.SessionTimeout,
		HeartbeatInterval: d.info.HeartbeatInterval, Rebalance: defaultRebalance, Resume: resumeAllowance,
		AcceptableRecoveryLag: d.info.AcceptableRecoveryLag, RestoreRate: defaultRestoreRate, Stateful: map[int]bool{}}
	if len(d.rebalances) > 0 {
		p.Rebalance = slices.Max(d.rebalances)
	}
	if d.restoreRate > 0 {
		p.RestoreRate, p.RestoreRateMeasured = d.restoreRate, true
	}
	for _, st := range d.info.Stores {
		if st.Logged {
			p.Stateful[st.Subtopology] = true
		}
	}
	return p
}

// assess puts each running instance's risk in out and, once per sample,
// keeps it for the failovers to come (projectionBefore).
func (d *deployment) assess(out *Deployment) {
	p := d.riskParams()
	if p == nil {
		return
	}
	risks := AssessRisk(out.Instances, *p)
	for i := range out.Instances {
		out.Instances[i].Risk = risks[out.Instances[i].ID]
	}
	out.RiskiestInstance = RiskiestInstance(out.Instances)
	if d.sampledAt.IsZero() || !d.sampledAt.After(d.assessedAt) {
		return
	}
	d.assessedAt = d.sampledAt
	if d.risks == nil {
		d.risks = map[string][]riskAt{}
	}
	for id, r := range risks {
		// A rebalancing instance's tasks and its peers' replicas are in
		// motion: the projection kept is one of a settled group.
		if in := findInstanceIn(out.Instances, id); in == nil || in.State != "running" {
			continue
		}
		h := append(d.risks[id], riskAt{at: d.sampledAt, risk: r})
		if len(h) > riskHistory {
			h = h[len(h)-riskHistory:]
		}
		d.risks[id] = h
	}
}

// projectionBefore returns the projection for task of instance made from
// the last sample taken before at, nil when none was.
func (d *deployment) projectionBefore(instance, task string, at time.Time) *TaskRisk {
	h := d.risks[instance]
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].at.Before(at) {
			continue
		}
		for j := range h[i].risk.Tasks {
			if h[i].risk.Tasks[j].Task == task {
				return &h[i].risk.Tasks[j]
			}
		}
		return nil
	}
	return nil
}

// noteRebalance keeps a rebalance's duration for the projections.
func (d *deployment) noteRebalance(took time.Duration) {
	d.rebalances = append(d.rebalances, took)
	if len(d.rebalances) > maxRebalances {
		d.rebalances = d.rebalances[len(d.rebalances)-maxRebalances:]
	}
}

// noteRestore keeps a finished restore's rate for the projections.
func (d *deployment) noteRestore(restored int64, rate float64) {
	if restored >= minRestoreForRate && rate > 0 {
		d.restoreRate = rate
	}
}

func findInstanceIn(instances []Instance, id string) *Instance {
	for i := range instances {
		if instances[i].ID == id {
			return &instances[i]
		}
	}
	return nil
}
