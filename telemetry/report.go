package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
)

// DefaultTopic is the telemetry topic Publishers write and Readers read
// when their config names none.
const DefaultTopic = "_braid-telemetry"

// reportVersion is the version of the report format; a Reader skips
// reports of another.
const reportVersion = 1

// report is one record of the telemetry topic: one process's instances at
// Time and the events since its previous report.
type report struct {
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
	Final      bool           `json:"final,omitempty"`
	Deployment deploymentWire `json:"deployment"`
	Instances  []instanceWire `json:"instances"`
	Events     []eventWire    `json:"events,omitempty"`
	Dropped    int64          `json:"dropped,omitempty"` // events dropped since the last report
}

// deploymentWire is the monitor's DeploymentInfo with what it learns from
// a topology, which the Reader's process does not have.
type deploymentWire struct {
	monitor.DeploymentInfo
	Stores    []streams.StoreInfo `json:"stores,omitempty"`
	SinkNodes []string            `json:"sinkNodes,omitempty"`
	// Design is the design file the application runs, when it runs
	// one, in the first report and every designEvery-th after it.
	Design json.RawMessage `json:"design,omitempty"`
}

// designEvery is how often a report carries the design: a Reader that
// starts later has it within designEvery reports (10 s).
const designEvery = 40

// instanceWire is a streams.InstanceInfo that JSON can carry, with the
// instance's open windows per windowed store.
type instanceWire struct {
	ID      string                          `json:"id"`
	State   streams.InstanceState           `json:"state"`
	Err     string                          `json:"err,omitempty"`
	Since   time.Time                       `json:"since"`
	Server  string                          `json:"server,omitempty"`
	Stats   streams.Stats                   `json:"stats"`
	Windows map[string][]streams.OpenWindow `json:"windows,omitempty"`
}

func instanceToWire(info streams.InstanceInfo) instanceWire {
	w := instanceWire{ID: info.ID, State: info.State, Since: info.Since, Server: info.Server, Stats: info.Stats}
	if info.Err != nil {
		w.Err = info.Err.Error()
	}
	return w
}

func (w instanceWire) info() streams.InstanceInfo {
	return streams.InstanceInfo{ID: w.ID, State: w.State, Err: errorOf(w.Err), Since: w.Since, Server: w.Server, Stats: w.Stats}
}

func errorOf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// eventWire is one hook call: its kind, when it was made and its event.
type eventWire struct {
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
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The kinds of eventWire, one per hook method.
const (
	kindAssigned         = "assigned"
	kindRevoked          = "revoked"
	kindResumed          = "resumed"
	kindFailover         = "failover"
	kindCommit           = "commit"
	kindState            = "state"
	kindError            = "error"
	kindSkipped          = "skipped"
	kindRestoreStart     = "restore-start"
	kindRestoreProgress  = "restore-progress"
	kindRestoreEnd       = "restore-end"
	kindWindowClosed     = "window-closed"
	kindLate             = "late"
	kindStreamTime       = "stream-time"
	kindStandbyStarted   = "standby-started"
	kindStandbyApplied   = "standby-applied"
	kindStandbySuspended = "standby-suspended"
	kindBroker           = "broker"
)

// replayers call, for each kind, the hook method it came from, when h
// has it.
var replayers = map[string]func(h streams.Hook, body []byte) error{
	kindAssigned: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskAssignedHook.OnTaskAssigned)
	},
	kindRevoked: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskRevokedHook.OnTaskRevoked)
	},
	kindResumed: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.TaskResumedHook.OnTaskResumed)
	},
	kindFailover: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.FailoverHook.OnTaskFailedOver)
	},
	kindCommit: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.CommitHook, w commitWire) {
			offsets := make(map[streams.TopicPartition]int64, len(w.Offsets))
			for _, o := range w.Offsets {
				offsets[streams.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
			}
			x.OnCommit(streams.CommitEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID, Offsets: offsets, Took: w.Took})
		})
	},
	kindState: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StateChangeHook.OnStateChange)
	},
	kindError: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.ErrorHook, w errorWire) {
			x.OnError(streams.ErrorEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID, Task: w.Task, Err: errorOf(w.Err), Fatal: w.Fatal})
		})
	},
	kindSkipped: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.RecordSkippedHook, w skippedWire) {
			x.OnRecordSkipped(streams.SkippedRecord{Task: w.Task, Topic: w.Topic, Partition: w.Partition, Offset: w.Offset, Err: errorOf(w.Err)})
		})
	},
	kindRestoreStart: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreStart)
	},
	kindRestoreProgress: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreProgress)
	},
	kindRestoreEnd: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.RestoreHook.OnRestoreEnd)
	},
	kindWindowClosed: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.WindowClosedHook.OnWindowClosed)
	},
	kindLate: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.LateRecordHook.OnLateRecordDropped)
	},
	kindStreamTime: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StreamTimeHook.OnStreamTime)
	},
	kindStandbyStarted: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbyStarted)
	},
	kindStandbyApplied: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbyApplied)
	},
	kindStandbySuspended: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, streams.StandbyHook.OnStandbySuspended)
	},
	kindBroker: func(h streams.Hook, b []byte) error {
		return replayAs(h, b, func(x streams.BrokerHook, w brokerWire) {
			x.OnBrokerReachability(streams.BrokerReachabilityEvent{ApplicationID: w.ApplicationID, InstanceID: w.InstanceID,
				Broker: w.Broker, Reachable: w.Reachable, Since: w.Since, At: w.At, Err: errorOf(w.Err)})
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

// replay hands one reported event to h.
func replay(h streams.Hook, ev eventWire) error {
	r, ok := replayers[ev.Kind]
	if !ok {
		return fmt.Errorf("unknown event kind %q", ev.Kind)
	}
	if err := r(h, ev.Body); err != nil {
		return fmt.Errorf("decoding a %s event: %w", ev.Kind, err)
	}
	return nil
}
