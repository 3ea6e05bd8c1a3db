package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// DefaultTopic is the telemetry topic Publishers write and Readers read
// when their config names none.
const DefaultTopic = "_braid-telemetry"

// ReportVersion is the version of the report format; a reader skips
// reports of another.
const ReportVersion = 1

// Report is one record of the telemetry topic, as JSON: one process's
// instances at Time and the events since its previous report. The
// record's key is Key().
type Report struct {
	Version int    `json:"v"`
	App     string `json:"app"`
	// Process names the process; Started (unix ms) tells its lives apart,
	// so that a process restarted under the same name is a new one.
	Process    string `json:"process"`
	Started    int64  `json:"started"`
	Seq        uint64 `json:"seq"`
	Time       int64  `json:"time"` // unix ms
	IntervalMs int64  `json:"intervalMs"`
	// Final is set on the last report of a process that stops
	// gracefully.
	Final      bool       `json:"final,omitempty"`
	Deployment Deployment `json:"deployment"`
	Instances  []Instance `json:"instances"`
	Events     []Event    `json:"events,omitempty"`
	Dropped    int64      `json:"dropped,omitempty"` // events dropped since the last report
}

// Key is the record key of r: "<application id>/<process>".
func (r Report) Key() string { return r.App + "/" + r.Process }

// Deployment describes the application a process runs, as its reports
// carry it: what a reader elsewhere, which has neither its topology nor
// its flags, shows of it.
type Deployment struct {
	ApplicationID string `json:"applicationId"`
	// DesignID, DesignName and Revision name the design the
	// application runs, when it runs one; Revision is 0 for a design
	// file.
	DesignID   string `json:"designId,omitempty"`
	DesignName string `json:"designName,omitempty"`
	Revision   int    `json:"revision,omitempty"`
	// Instances is how many instances the process runs.
	Instances int    `json:"instances"`
	Standbys  int    `json:"standbys"`
	Guarantee string `json:"guarantee"`
	// CommitInterval is the instances' commit interval, as the reports
	// carry it: commitIntervalMs.
	CommitInterval time.Duration `json:"-"`
	// Stores and SinkNodes are what a reader learns of the topology:
	// which stores are windowed and which node writes each, and which
	// nodes' records leave a task.
	Stores    []streams.StoreInfo `json:"stores,omitempty"`
	SinkNodes []string            `json:"sinkNodes,omitempty"`
	// Design is the design file the application runs, if any, as
	// compact JSON, in the first report and every designEvery-th after
	// it: a server draws the application's live page from it.
	Design json.RawMessage `json:"design,omitempty"`
}

// deploymentJSON is a Deployment as JSON carries it.
type deploymentJSON struct {
	plainDeployment
	CommitIntervalMs int64 `json:"commitIntervalMs"`
}

// plainDeployment has Deployment's fields without its JSON methods.
type plainDeployment Deployment

// MarshalJSON writes d with its commit interval in milliseconds.
func (d Deployment) MarshalJSON() ([]byte, error) {
	return json.Marshal(deploymentJSON{plainDeployment(d), d.CommitInterval.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Deployment) UnmarshalJSON(b []byte) error {
	var w deploymentJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = Deployment(w.plainDeployment)
	d.CommitInterval = time.Duration(w.CommitIntervalMs) * time.Millisecond
	return nil
}

// designEvery is how often a report carries the design: a reader that
// starts later has it within designEvery reports (10 s).
const designEvery = 40

// Instance is a streams.InstanceInfo that JSON can carry, with the
// instance's open windows per windowed store.
type Instance struct {
	ID      string                          `json:"id"`
	State   streams.InstanceState           `json:"state"`
	Err     string                          `json:"err,omitempty"`
	Since   time.Time                       `json:"since"`
	Server  string                          `json:"server,omitempty"`
	Stats   streams.Stats                   `json:"stats"`
	Windows map[string][]streams.OpenWindow `json:"windows,omitempty"`
}

// InstanceOf is info as a report carries it, without windows.
func InstanceOf(info streams.InstanceInfo) Instance {
	w := Instance{ID: info.ID, State: info.State, Since: info.Since, Server: info.Server, Stats: info.Stats}
	if info.Err != nil {
		w.Err = info.Err.Error()
	}
	return w
}

// Info is the streams.InstanceInfo w carries; its Err, if any, has only
// the message.
func (w Instance) Info() streams.InstanceInfo {
	return streams.InstanceInfo{ID: w.ID, State: w.State, Err: errorOf(w.Err), Since: w.Since, Server: w.Server, Stats: w.Stats}
}

func errorOf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// Event is one hook call of an instance: its kind (one of the Kind
// constants), when it was made and its event, as JSON. Replay makes the
// call again.
type Event struct {
	Kind string          `json:"kind"`
	At   int64           `json:"at"` // unix ms
	Body json.RawMessage `json:"body"`
}

// The events that carry an error or a map JSON cannot key, as JSON
// carries them.
type (
	commitWire struct {
		ApplicationID, InstanceID string
		Offsets                   []offsetWire
		Took                      time.Duration
	}
	offsetWire struct {
		Topic     string
		Partition int32
		Offset    int64
	}
	errorWire struct {
		ApplicationID, InstanceID string
		Task                      streams.TaskID
		Err                       string
		Fatal                     bool
	}
	skippedWire struct {
		Task      streams.TaskID
		Topic     string
		Partition int32
		Offset    int64
		Err       string
	}
	brokerWire struct {
		ApplicationID, InstanceID, Broker string
		Reachable                         bool
		Since, At                         time.Time
		Err                               string
	}
	snapshotWire struct {
		ApplicationID, InstanceID string
		Task                      streams.TaskID
		Store, ID                 string
		ChangelogOffset           int64
		StreamTime                int64
		Bytes                     int64
		Files                     int
		Took                      time.Duration
		Pruned                    []string
		Err                       string
	}
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The kinds of Event, one per hook method, named after it.
const (
	KindAssigned         = "assigned"
	KindRevoked          = "revoked"
	KindResumed          = "resumed"
	KindFailover         = "failover"
	KindCommit           = "commit"
	KindState            = "state"
	KindError            = "error"
	KindSkipped          = "skipped"
	KindRestoreStart     = "restore-start"
	KindRestoreProgress  = "restore-progress"
	KindRestoreEnd       = "restore-end"
	KindWindowClosed     = "window-closed"
	KindLate             = "late"
	KindStreamTime       = "stream-time"
	KindStandbyStarted   = "standby-started"
	KindStandbyApplied   = "standby-applied"
	KindStandbySuspended = "standby-suspended"
	KindBroker           = "broker"
	KindSnapshot         = "snapshot"
)

// replayers call, for each kind, the hook method it came from, when h
// has it.
var replayers = map[string]func(h streams.Hook, body []byte) error{
	KindAssigned: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskAssignedHook.OnTaskAssigned)
	},
	KindRevoked: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskRevokedHook.OnTaskRevoked)
	},
	KindResumed: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskResumedHook.OnTaskResumed)
	},
	KindFailover: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.FailoverHook.OnTaskFailedOver)
	},
	KindCommit: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.CommitHook, w commitWire) {
			offsets := make(map[streams.TopicPartition]int64, len(w.Offsets))
			for _, o := range w.Offsets {
				offsets[streams.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
			}
			x.OnCommit(streams.CommitEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID, Offsets: offsets, Took: w.Took})
		})
	},
	KindState: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StateChangeHook.OnStateChange)
	},
	KindError: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.ErrorHook, w errorWire) {
			x.OnError(streams.ErrorEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID, Task: w.Task, Err: errorOf(w.Err), Fatal: w.Fatal})
		})
	},
	KindSkipped: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.RecordSkippedHook, w skippedWire) {
			x.OnRecordSkipped(streams.SkippedRecord{Task: w.Task, Topic: w.Topic, Partition: w.Partition, Offset: w.Offset, Err: errorOf(w.Err)})
		})
	},
	// A restore event travels as the streams.RestoreEvent itself: its
	// Snapshot and Skipped, which a report of an older Braid lacks,
	// decode as none.
	KindRestoreStart: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreStart)
	},
	KindRestoreProgress: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreProgress)
	},
	KindRestoreEnd: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreEnd)
	},
	KindWindowClosed: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.WindowClosedHook.OnWindowClosed)
	},
	KindLate: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.LateRecordHook.OnLateRecordDropped)
	},
	KindStreamTime: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StreamTimeHook.OnStreamTime)
	},
	KindStandbyStarted: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbyStarted)
	},
	KindStandbyApplied: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbyApplied)
	},
	KindStandbySuspended: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbySuspended)
	},
	KindBroker: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.BrokerHook, w brokerWire) {
			x.OnBrokerReachability(streams.BrokerReachabilityEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID,
				Broker: w.Broker, Reachable: w.Reachable, Since: w.Since, At: w.At, Err: errorOf(w.Err)})
		})
	},
	KindSnapshot: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.SnapshotHook, w snapshotWire) {
			x.OnSnapshotTaken(streams.SnapshotEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID, Task: w.Task,
				Store: w.Store, ID: w.ID, ChangelogOffset: w.ChangelogOffset, StreamTime: w.StreamTime, Bytes: w.Bytes,
				Files: w.Files, Took: w.Took, Pruned: w.Pruned, Err: errorOf(w.Err)})
		})
	},
}

// replayAs decodes body as an E and hands it to call when h is an H.
func replayAs[H any, E any](h streams.Hook, body []byte, call func(H, E)) error {
	x, ok := h.(H)
	if !ok {
		return nil
	}
	var ev E
	if err := json.Unmarshal(body, &ev); err != nil {
		return err
	}
	call(x, ev)
	return nil
}

// Replay hands ev to h as the hook call it came from, when h has that
// method: a reader's hook gets the events of instances it does not run
// as if it ran them. An unknown kind or a body that is not the kind's
// event is an error.
func (ev Event) Replay(h streams.Hook) error {
	r, ok := replayers[ev.Kind]
	if !ok {
		return fmt.Errorf("unknown event kind %q", ev.Kind)
	}
	if err := r(h, ev.Body); err != nil {
		return fmt.Errorf("decoding a %s event: %w", ev.Kind, err)
	}
	return nil
}
