package streams

import "time"

// Hook is any value that implements one or more of the hook interfaces
// below (TaskAssignedHook, TaskRevokedHook, CommitHook, StateChangeHook,
// ErrorHook, RecordSkippedHook, RestoreHook, WindowClosedHook,
// LateRecordHook, StreamTimeHook, StandbyHook, TaskResumedHook,
// FailoverHook, BrokerHook, SnapshotHook). The App calls each hook from its
// processing goroutine (BrokerHook from its Kafka client's), so a hook
// must be fast and must never block: copy what you need and hand it off.
type Hook any

// TaskAssignedHook is called when a task starts on this instance.
type TaskAssignedHook interface {
	OnTaskAssigned(TaskEvent)
}

// TaskResumedHook is called when a task that arrived on this instance
// processes its first record here: the end of its move, whose cost the
// event measures.
type TaskResumedHook interface {
	OnTaskResumed(TaskResumedEvent)
}

// FailoverHook is called by a Supervisor for every task that moved off an
// instance it crashed or stopped, once the task processes again on its
// new instance.
type FailoverHook interface {
	OnTaskFailedOver(FailoverEvent)
}

// TaskRevokedHook is called when a task stops on this instance, after its
// offsets were committed (Clean) or without committing when the group
// membership was lost.
type TaskRevokedHook interface {
	OnTaskRevoked(TaskEvent)
}

// CommitHook is called after every successful commit.
type CommitHook interface {
	OnCommit(CommitEvent)
}

// StateChangeHook is called whenever the App's state changes.
type StateChangeHook interface {
	OnStateChange(StateChange)
}

// ErrorHook is called for every error the App meets, whether it fails the
// App or is handled and skipped.
type ErrorHook interface {
	OnError(ErrorEvent)
}

// RecordSkippedHook is called when a record is skipped because the
// configured handler said to log and continue, or because an aggregation
// cannot take its nil key or value (Err wraps ErrNullKey or ErrNullValue).
type RecordSkippedHook interface {
	OnRecordSkipped(SkippedRecord)
}

// WindowClosedHook is called when stream time closes a window of a
// windowed store: once per window bounds and task (a time window holds
// every key of the task; a session or sliding window usually one).
type WindowClosedHook interface {
	OnWindowClosed(WindowClosedEvent)
}

// LateRecordHook is called for every record dropped because its window
// had closed, once per window it was late for.
type LateRecordHook interface {
	OnLateRecordDropped(LateRecordEvent)
}

// StreamTimeHook is called when a task's stream time moves, at most once
// per batch of records the task processes.
type StreamTimeHook interface {
	OnStreamTime(StreamTimeEvent)
}

// WindowClosedEvent describes one closed window. Times are milliseconds
// since the epoch. The window closed at stream time StreamTime, the first
// at or past ClosesAt (End + Grace for time windows; sessions and sliding
// windows, whose ends are inclusive, close one millisecond later).
type WindowClosedEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	Store         string
	Start, End    int64
	Grace         time.Duration
	ClosesAt      int64
	StreamTime    int64
	// Keys counts the keys with a result in the window; Emitted says
	// their final results were sent downstream (EmitOnWindowClose).
	Keys    int
	Emitted bool
}

// LateRecordEvent describes a record dropped as late: its timestamp, the
// task's stream time, the window it came too late for, and where it was
// read (Offset -1 when unknown).
type LateRecordEvent struct {
	ApplicationID          string
	InstanceID             string
	Task                   TaskID
	Store                  string
	Topic                  string
	Partition              int32
	Offset                 int64
	Timestamp              int64
	StreamTime             int64
	WindowStart, WindowEnd int64
}

// StreamTimeEvent gives a task's stream time: the largest record timestamp
// it has processed, in milliseconds since the epoch.
type StreamTimeEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	StreamTime    int64
}

// TaskEvent describes a task being assigned to or revoked from this instance.
type TaskEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	Partitions    []TopicPartition
	// Clean is false when the task was dropped without a commit because
	// the instance lost its group membership.
	Clean bool
	// FromReplica says what the task was on this instance before it
	// became active: "standby", "warm-up", or "" when it had no replica
	// here.
	FromReplica string
	// LastRecord is when the task last processed a record here (zero if
	// never); set on revocation.
	LastRecord time.Time
}

// TaskResumedEvent describes the first record a task processed after it
// arrived on this instance.
type TaskResumedEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	// AssignedAt is when the assignment reached this instance,
	// FirstRecordAt when the task processed its first record after it.
	AssignedAt, FirstRecordAt time.Time
	// Restored counts the changelog records replayed before processing.
	Restored int64
	// FromReplica: "standby", "warm-up" or "" (see TaskEvent).
	FromReplica string
}

// FailoverEvent measures one task's move off a crashed or stopped
// instance.
type FailoverEvent struct {
	ApplicationID string
	Task          TaskID
	// From is the instance that failed, To the one that took the task.
	From, To string
	// Cause is "crash" or "stop".
	Cause string
	// DetectedBy says how the group noticed that From was gone:
	// DetectedBySupervisor ("supervisor": the Supervisor saw the crash
	// and removed the member at once), DetectedBySessionTimeout
	// ("session-timeout": nobody removed it, and the group waited for its
	// session to time out) or DetectedByLeave ("leave": a graceful stop,
	// whose member left the group itself).
	DetectedBy string
	// FailedAt is when the instance was crashed or asked to stop;
	// LastRecordAt when it last processed a record of the task;
	// AssignedAt when the new owner received the task; ResumedAt when
	// it processed its first record.
	FailedAt, LastRecordAt, AssignedAt, ResumedAt time.Time
	// Detection is FailedAt to AssignedAt: the time the group took to
	// notice (see DetectedBy) and rebalance. Recovery is AssignedAt to ResumedAt: the new
	// owner's restore and first fetch. Downtime is LastRecordAt to
	// ResumedAt: how long no instance processed the task.
	Detection, Recovery, Downtime time.Duration
	// Restored counts the changelog records the new owner replayed;
	// FromReplica says what it held before ("standby", "warm-up" or "").
	Restored    int64
	FromReplica string
	// StandbyLag is the lag in records, at FailedAt, of the new owner's
	// replica of the task, -1 when it had none; StandbyOffset is that
	// replica's applied offset sum then.
	StandbyLag, StandbyOffset int64
}

// CommitEvent describes one commit: the next offsets to consume, per
// partition, and how long the flush and the commit took.
type CommitEvent struct {
	ApplicationID string
	InstanceID    string
	Offsets       map[TopicPartition]int64
	Took          time.Duration
}

// StateChange is a transition of the App's State.
type StateChange struct {
	ApplicationID string
	InstanceID    string
	From, To      State
	// Kept, on the change to Running that ends a rebalance, are the tasks
	// the rebalance had suspended and gave back to this instance: under
	// the eager protocol every task that stayed, paused for the
	// rebalance; under the cooperative one, rarely any.
	Kept []TaskID
}

// ErrorEvent carries an error met by the App. Task is the zero TaskID when
// the error belongs to no task.
type ErrorEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	Err           error
	// Fatal says the error stops the App.
	Fatal bool
}

// SkippedRecord names a record that was skipped and why.
type SkippedRecord struct {
	Task      TaskID
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

// hookSet holds the hooks sorted by the interfaces they implement, so that
// calling them costs no type assertions on the hot path.
type hookSet struct {
	assigned []TaskAssignedHook
	revoked  []TaskRevokedHook
	commit   []CommitHook
	state    []StateChangeHook
	errs     []ErrorHook
	skipped  []RecordSkippedHook
	restore  []RestoreHook
	closed   []WindowClosedHook
	late     []LateRecordHook
	time     []StreamTimeHook
	standby  []StandbyHook
	resumed  []TaskResumedHook
	failover []FailoverHook
	broker   []BrokerHook
	snapshot []SnapshotHook
}

func newHookSet(hooks []Hook) hookSet {
	var s hookSet
	for _, h := range hooks {
		if h, ok := h.(TaskAssignedHook); ok {
			s.assigned = append(s.assigned, h)
		}
		if h, ok := h.(TaskRevokedHook); ok {
			s.revoked = append(s.revoked, h)
		}
		if h, ok := h.(CommitHook); ok {
			s.commit = append(s.commit, h)
		}
		if h, ok := h.(StateChangeHook); ok {
			s.state = append(s.state, h)
		}
		if h, ok := h.(ErrorHook); ok {
			s.errs = append(s.errs, h)
		}
		if h, ok := h.(RecordSkippedHook); ok {
			s.skipped = append(s.skipped, h)
		}
		if h, ok := h.(RestoreHook); ok {
			s.restore = append(s.restore, h)
		}
		if h, ok := h.(WindowClosedHook); ok {
			s.closed = append(s.closed, h)
		}
		if h, ok := h.(LateRecordHook); ok {
			s.late = append(s.late, h)
		}
		if h, ok := h.(StreamTimeHook); ok {
			s.time = append(s.time, h)
		}
		if h, ok := h.(StandbyHook); ok {
			s.standby = append(s.standby, h)
		}
		if h, ok := h.(TaskResumedHook); ok {
			s.resumed = append(s.resumed, h)
		}
		if h, ok := h.(FailoverHook); ok {
			s.failover = append(s.failover, h)
		}
		if h, ok := h.(BrokerHook); ok {
			s.broker = append(s.broker, h)
		}
		if h, ok := h.(SnapshotHook); ok {
			s.snapshot = append(s.snapshot, h)
		}
	}
	return s
}

// implementsAny reports whether h implements at least one hook interface.
func implementsAny(h Hook) bool {
	s := newHookSet([]Hook{h})
	return len(s.assigned)+len(s.revoked)+len(s.commit)+len(s.state)+len(s.errs)+len(s.skipped)+len(s.restore)+
		len(s.closed)+len(s.late)+len(s.time)+len(s.standby)+len(s.resumed)+len(s.failover)+len(s.broker)+len(s.snapshot) > 0
}
