package streams

import "time"

// Hook is any value that implements one or more of the hook interfaces
// below (TaskAssignedHook, TaskRevokedHook, CommitHook, StateChangeHook,
// ErrorHook, RecordSkippedHook, RestoreHook). The App calls each hook from its
// processing goroutine, so a hook must be fast and must never block: copy
// what you need and hand it off.
type Hook any

// TaskAssignedHook is called when a task starts on this instance.
type TaskAssignedHook interface {
	OnTaskAssigned(TaskEvent)
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
// configured handler said to log and continue.
type RecordSkippedHook interface {
	OnRecordSkipped(SkippedRecord)
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
	}
	return s
}

// implementsAny reports whether h implements at least one hook interface.
func implementsAny(h Hook) bool {
	s := newHookSet([]Hook{h})
	return len(s.assigned)+len(s.revoked)+len(s.commit)+len(s.state)+len(s.errs)+len(s.skipped)+len(s.restore) > 0
}
