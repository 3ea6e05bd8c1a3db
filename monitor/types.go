package monitor

import (
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// Options configures a Monitor. Zero fields take their defaults.
type Options struct {
	// EventLogSize is how many events the log keeps. Default 2000.
	EventLogSize int
	// PublishInterval is how often Run samples the deployments and
	// publishes a snapshot to subscribers. Default 250 ms (4/s).
	PublishInterval time.Duration
	// SubscriberEvents is how many events a subscriber's queue holds
	// before the oldest are dropped (and counted in the next snapshot's
	// MissedEvents). Default 512.
	SubscriberEvents int
	// RateWindow is the span a node's averaged rates (NodeRate's
	// InAvgPerSec and OutAvgPerSec) cover. Default 20 s.
	RateWindow time.Duration
	// History, when set, is where Run records the events and one
	// snapshot a second (history.go); New reads back its events: the
	// event log, and the failovers of a deployment when it is added
	// again. Its owner closes it after Run returned.
	History *History
}

const (
	defaultEventLogSize     = 2000
	defaultPublishInterval  = 250 * time.Millisecond
	defaultSubscriberEvents = 512
)

func (o Options) withDefaults() Options {
	if o.EventLogSize <= 0 {
		o.EventLogSize = defaultEventLogSize
	}
	if o.PublishInterval <= 0 {
		o.PublishInterval = defaultPublishInterval
	}
	if o.SubscriberEvents <= 0 {
		o.SubscriberEvents = defaultSubscriberEvents
	}
	if o.RateWindow <= 0 {
		o.RateWindow = defaultRateWindow
	}
	return o
}

// Source is how the monitor samples a deployment. A *streams.Supervisor
// implements it.
type Source interface {
	Instances() []streams.InstanceInfo
	OpenWindows(instance, store string) ([]streams.OpenWindow, error)
}

// DeploymentInfo describes a deployment: what runs, and how.
type DeploymentInfo struct {
	ID            string `json:"id"`
	Design        string `json:"design"` // design id
	DesignName    string `json:"designName"`
	Revision      int    `json:"revision"`
	ApplicationID string `json:"applicationId"`
	// Instances is the configured instance count. In a Deployment's JSON
	// the "instances" key is the list of instances, which shadows it.
	Instances int    `json:"instances"`
	Standbys  int    `json:"standbys"`
	Guarantee string `json:"guarantee"`
	// SessionTimeout is the instances' group session timeout, sent as
	// SessionTimeoutMs, which AddDeployment fills from it when zero (0:
	// not known).
	SessionTimeout   time.Duration `json:"-"`
	SessionTimeoutMs int64         `json:"sessionTimeoutMs,omitempty"`
	// CommitInterval is sent as CommitIntervalMs, which AddDeployment
	// fills from it when zero.
	CommitInterval   time.Duration `json:"-"`
	CommitIntervalMs int64         `json:"commitIntervalMs"`
	// Topology, when set, fills Stores and SinkNodes.
	Topology *streams.Topology `json:"-"`
	// Stores tell which stores are windowed (their open windows are
	// sampled) and which node writes each; SinkNodes name the nodes whose
	// records leave a task (a task's out rate). A deployment whose
	// topology is not in this process (see package telemetry) gives them
	// instead of Topology.
	Stores    []streams.StoreInfo `json:"-"`
	SinkNodes []string            `json:"-"`
	Started   time.Time           `json:"started"`
	// HeartbeatInterval and AcceptableRecoveryLag are the instances'
	// (streams.Config, with its defaults), as SessionTimeout above, and CrashDetectedBy
	// how the group notices a crashed instance: streams.DetectedBySupervisor
	// when a Supervisor in this process sees it die and removes its member,
	// DetectedBySessionTimeout otherwise. WithFailureSettings sets them.
	// The risk assessment (risk.go) needs them: a deployment without a
	// SessionTimeout gets none.
	HeartbeatInterval     time.Duration `json:"-"`
	AcceptableRecoveryLag int64         `json:"-"`
	CrashDetectedBy       string        `json:"-"`
}

// WithFailureSettings returns i with the failure settings of instances
// configured with cfg, whose crashes are noticed as detectedBy says.
func (i DeploymentInfo) WithFailureSettings(cfg streams.Config, detectedBy string) DeploymentInfo {
	cfg = cfg.WithDefaults()
	i.SessionTimeout, i.HeartbeatInterval, i.AcceptableRecoveryLag = cfg.SessionTimeout, cfg.HeartbeatInterval, cfg.AcceptableRecoveryLag
	i.CrashDetectedBy = detectedBy
	return i
}

// WithTopology returns i with Stores and SinkNodes taken from its
// Topology, when it has one.
func (i DeploymentInfo) WithTopology() DeploymentInfo {
	if t := i.Topology; t != nil {
		i.Stores, i.SinkNodes = t.Stores(), t.SinkNodes()
	}
	return i
}

// Process is one process of an application that runs elsewhere (braid
// run, an exported program), as its telemetry last reported it (package
// telemetry's Reader makes them).
type Process struct {
	Process string `json:"process"`
	// Revision is the design revision it runs (0 for a design file).
	Revision int `json:"revision"`
	// State is "reporting", "stopped" (its last report said it stopped
	// gracefully) or "gone" (it sent no report for a while).
	State string `json:"state"`
	// LastReport is when it wrote its last report, unix ms by its clock.
	LastReport int64             `json:"lastReport"`
	Instances  []ProcessInstance `json:"instances"`
}

// Process states.
const (
	ProcessReporting = "reporting"
	ProcessStopped   = "stopped"
	ProcessGone      = "gone"
)

// ProcessInstance is one instance of a Process and its state, as an
// Instance's (a gone process's running instances are shown crashed).
type ProcessInstance struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// Message is what a Subscriber receives: a snapshot or an event.
type Message struct {
	Type     string    `json:"type"` // "snapshot" or "event"
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Event    *Event    `json:"event,omitempty"`
}

// Snapshot is the state of every deployment at Time.
type Snapshot struct {
	Time int64 `json:"time"` // unix ms
	// MissedEvents counts the events this subscriber lost because its
	// queue was full, since the last snapshot it read.
	MissedEvents int64        `json:"missedEvents,omitempty"`
	Deployments  []Deployment `json:"deployments"`
}

// Deployment is the state of one deployment.
type Deployment struct {
	DeploymentInfo
	Instances []Instance `json:"instances"`
	// Nodes sums per processor node name over all active tasks: records/s
	// in and out, now and averaged over Options.RateWindow (zero unless
	// the deployment runs with streams.Config.NodeMetrics), and the late
	// drops of the store the node writes, if any.
	Nodes map[string]NodeRate `json:"nodes"`
	// RateWindowMs is the span of the nodes' averaged rates
	// (Options.RateWindow).
	RateWindowMs int64 `json:"rateWindowMs"`
	// Failovers holds the last 50 failovers, newest last.
	Failovers []Failover `json:"failovers"`
	// Timelines holds the last 20 failovers' timelines (timeline.go),
	// newest last: each crash, stop, added instance or probing move, with
	// its tasks' and instances' phases. A crashed or stopped instance's
	// lanes carry the numbers of the Failovers above.
	Timelines []FailoverTimeline `json:"timelines"`
	// Throughput holds the last 5 minutes, one point per second.
	Throughput []Point `json:"throughput"`
	// RiskiestInstance is the instance whose loss now would hurt most
	// (RiskiestInstance), "" when none was assessed.
	RiskiestInstance string `json:"riskiestInstance,omitempty"`
}

// NodeRate is one processor node's traffic over all tasks. In and Out
// are records/s smoothed over about a second; InAvgPerSec and
// OutAvgPerSec are averaged over Options.RateWindow (20 s by default),
// which a bursty node, such as a windowed aggregation emitting on window
// close, needs: its per-second rate is 0 between closes.
type NodeRate struct {
	In           float64 `json:"in"`
	Out          float64 `json:"out"`
	InAvgPerSec  float64 `json:"inAvgPerSec"`
	OutAvgPerSec float64 `json:"outAvgPerSec"`
	LateDrops    int64   `json:"lateDrops"`
}

// Point is one second of a deployment's throughput: the records/s its
// active tasks took in, and their total consumer lag.
type Point struct {
	Time          int64   `json:"t"`
	RecordsPerSec float64 `json:"rps"`
	Lag           int64   `json:"lag"`
}

// Instance is one instance of a deployment.
type Instance struct {
	ID    string `json:"id"`
	State string `json:"state"` // running, rebalancing, crashed, stopped, failed
	Since int64  `json:"since"` // unix ms
	Error string `json:"error,omitempty"`
	// Server is where the instance's process answers store lookups
	// (its streams.Config.ApplicationServer), "" when it advertises none.
	Server string `json:"server,omitempty"`
	// Tasks lists the active tasks, then the suspended ones, then the
	// replicas, each by task id.
	Tasks      []Task  `json:"tasks"`
	LastCommit int64   `json:"lastCommit"` // unix ms, 0 none
	CommitMs   float64 `json:"commitMs"`   // last commit's duration
	// UnreachableBrokers lists the brokers that do not answer the
	// instance now: while one is listed it processes and commits nothing.
	UnreachableBrokers []UnreachableBroker `json:"unreachableBrokers,omitempty"`
	// Risk is what losing the instance now would do (risk.go): set for
	// a running or rebalancing instance of a deployment whose failure
	// settings are known.
	Risk *Risk `json:"risk,omitempty"`
}

// UnreachableBroker is a broker an instance cannot reach: its address,
// when it last answered (unix ms) and the last error seen.
type UnreachableBroker struct {
	Broker string `json:"broker"`
	Since  int64  `json:"since"`
	Error  string `json:"error"`
}

// Task is one task (or replica) on an instance.
type Task struct {
	ID   string `json:"id"`   // "0_1"
	Role string `json:"role"` // "active", "standby", "warmup"
	// State is "running" or "restoring" for an active task, "suspended"
	// for one a rebalance set aside (it processes nothing until the
	// assignment says whether it stays), and the role for a replica.
	State      string  `json:"state"`
	StreamTime int64   `json:"streamTime"`
	InPerSec   float64 `json:"inPerSec"`
	// OutPerSec is the rate of records reaching the task's sink nodes
	// (0 without streams.Config.NodeMetrics).
	OutPerSec float64 `json:"outPerSec"`
	// Processed counts the records an active task processed; for a
	// replica it is the sum of the changelog offsets it has applied.
	Processed int64 `json:"processed"`
	// Lag sums the input partitions' lags, -1 when none is known.
	Lag       int64 `json:"lag"`
	LateDrops int64 `json:"lateDrops"`
	// Windows are the open windows of the task's windowed stores, the
	// newest 30 per store, oldest first.
	Windows []Window `json:"windows,omitempty"`
	// Restore is set while the task's stores are restored.
	Restore *Restore `json:"restore,omitempty"`
	// StandbyLag is set for the standby and warmup roles.
	StandbyLag *StandbyLag `json:"standbyLag,omitempty"`
	LastRecord int64       `json:"lastRecord"` // unix ms, 0 never
	// Suspensions counts, for an active task, the rebalances that
	// suspended it on the instance (streams.TaskStats.Suspensions):
	// a suspension shorter than a snapshot's interval shows in it.
	Suspensions int `json:"suspensions,omitempty"`
}

// Window is an open window of a windowed store. ClosesAt is the stream
// time that will close it: End + grace (one ms more for sessions).
type Window struct {
	Store    string `json:"store"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	ClosesAt int64  `json:"closesAt"`
	Keys     int    `json:"keys"`
}

// RestoreProgressInterval is how often a store's restore in progress is
// told in a restore-progress event, at most.
const RestoreProgressInterval = 100 * time.Millisecond

// Restore is the progress of a task's restore, over all its stores:
// records restored of Total, at Rate records/s, done in EtaMs (-1 while
// the rate is unknown).
type Restore struct {
	Restored int64   `json:"restored"`
	Total    int64   `json:"total"`
	Rate     float64 `json:"rate"`
	EtaMs    int64   `json:"etaMs"`
	// SnapshotLoad is where the stores' state came from before their
	// changelogs' tails: the snapshots loaded (the oldest one's id and
	// time, their bytes and load times summed) and those skipped.
	SnapshotLoad
}

// StandbyLag is how far a replica is behind: changelog records summed over
// its stores, and the largest time lag of any of them.
type StandbyLag struct {
	Records int64 `json:"records"`
	TimeMs  int64 `json:"timeMs"`
}

// Failover is one task's move off a crashed or stopped instance.
type Failover struct {
	Task        string `json:"task"`
	From        string `json:"from"`
	To          string `json:"to"`
	Cause       string `json:"cause"`   // "crash" or "stop"
	Replica     string `json:"replica"` // what the new owner held: "standby", "warm-up" or ""
	DetectionMs int64  `json:"detectionMs"`
	DetectedBy  string `json:"detectedBy"` // how the group noticed: "supervisor", "session-timeout" or "leave"
	RecoveryMs  int64  `json:"recoveryMs"`
	DowntimeMs  int64  `json:"downtimeMs"`
	Restored    int64  `json:"restored"`
	At          int64  `json:"at"` // unix ms of the resume
	// ProjectedDowntimeMs is the task's projected downtime (risk.go) made
	// from the last sample before a crash, -1 for a stop, when none was
	// made or when it was unknown; ProjectedSafe says whether that
	// projection called losing the instance safe for the task.
	ProjectedDowntimeMs int64 `json:"projectedDowntimeMs"`
	ProjectedSafe       bool  `json:"projectedSafe"`
}

// Event is one entry of the event log.
type Event struct {
	Seq        uint64 `json:"seq"`
	Time       int64  `json:"time"` // unix ms
	Deployment string `json:"deployment"`
	Instance   string `json:"instance,omitempty"`
	Task       string `json:"task,omitempty"`
	// Kind is one of window-closed, late-drop, restore-started,
	// restore-progress (at most every RestoreProgressInterval per store,
	// detail the task's Restore: a restore shorter than a snapshot's
	// interval moves its bar too), restore-finished, standby-started, standby-promoted, rebalance,
	// instance-crashed, instance-crash-wiped, instance-stopped, instance-started,
	// instance-added, task-assigned, task-revoked, task-resumed (its first
	// record on a new instance), task-failed-over,
	// broker-unreachable, broker-reachable, error, deployment-added,
	// deployment-removed, snapshot-taken (a store snapshot uploaded to
	// the blob store of streams.Config.Snapshots, or failed: not to be
	// confused with the monitor's Snapshot of a deployment).
	Kind string `json:"kind"`
	// Message is one human line, e.g. "window [12:00:10, 12:00:20) of
	// per-window closed at stream time 12:00:25, 6 keys".
	Message string `json:"message"`
	// Detail holds the kind's fields: the struct detailTypes (detail.go)
	// names for Kind, such as a WindowClosedDetail, nil for a kind without
	// one. Typed, so that producers and readers cannot disagree on a
	// field's name or type, which a map left to each of them; its JSON is
	// the object the live page reads. A detail read back that is not its
	// kind's (a kind of a newer Braid) is a RawDetail. Events recorded
	// under older names are renamed when decoded (detailnames.go).
	Detail EventDetail `json:"detail,omitempty"`
}

// Event kinds.
const (
	kindWindowClosed      = "window-closed"
	kindLateDrop          = "late-drop"
	kindRestoreStarted    = "restore-started"
	kindRestoreProgress   = "restore-progress"
	kindRestoreFinished   = "restore-finished"
	kindStandbyStarted    = "standby-started"
	kindStandbyPromoted   = "standby-promoted"
	kindRebalance         = "rebalance"
	kindTaskAssigned      = "task-assigned"
	kindTaskRevoked       = "task-revoked"
	kindTaskFailedOver    = "task-failed-over"
	kindBrokerUnreachable = "broker-unreachable"
	kindBrokerReachable   = "broker-reachable"
	kindError             = "error"
	kindDeploymentAdded   = "deployment-added"
	kindDeploymentRemoved = "deployment-removed"
	kindTaskResumed       = "task-resumed"
	kindSnapshotTaken     = "snapshot-taken"

	kindInstanceCrashed    = "instance-crashed"
	kindInstanceCrashWiped = "instance-crash-wiped"
	kindInstanceStopped    = "instance-stopped"
	kindInstanceStarted    = "instance-started"
	kindInstanceAdded      = "instance-added"
)

// A Supervisor is what deployers sample.
var _ Source = (*streams.Supervisor)(nil)
