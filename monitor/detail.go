package monitor

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// EventDetail is an event's detail: one struct per kind that has one,
// which detailTypes names. Their JSON names are the live page's contract
// (static/live/*.js) and a meaning has one name in every kind: a window
// is windowStart/windowEnd (unix ms), a task's last record lastRecordAt,
// how long the event's own work took durationMs, the replica a task moved
// onto fromReplica, a snapshot's id and size snapshotId and snapshotBytes.
// Times are unix ms.
type EventDetail interface {
	// eventDetail keeps the set closed: only this package's structs (and
	// RawDetail) are details, each decodable from its kind.
	eventDetail()
}

// detailTypes maps each event kind that has a detail to its type: the
// one place an event's JSON is decoded from, and the list the tests check.
// A kind not in it (instance-*, deployment-removed, a kind of a newer
// Braid) decodes to a RawDetail.
var detailTypes = map[string]EventDetail{
	kindDeploymentAdded:   DeploymentAddedDetail{},
	kindWindowClosed:      WindowClosedDetail{},
	kindLateDrop:          LateDropDetail{},
	kindTaskAssigned:      TaskAssignedDetail{},
	kindTaskRevoked:       TaskRevokedDetail{},
	kindTaskResumed:       TaskResumedDetail{},
	kindTaskFailedOver:    TaskFailedOverDetail{},
	kindRebalance:         RebalanceDetail{},
	kindRestoreStarted:    RestoreStartedDetail{},
	kindRestoreProgress:   RestoreProgressDetail{},
	kindRestoreFinished:   RestoreFinishedDetail{},
	kindStandbyStarted:    StandbyStartedDetail{},
	kindStandbyPromoted:   StandbyPromotedDetail{},
	kindError:             ErrorDetail{},
	kindBrokerUnreachable: BrokerUnreachableDetail{},
	kindBrokerReachable:   BrokerReachableDetail{},
	kindSnapshotTaken:     SnapshotTakenDetail{},
}

// DeploymentAddedDetail is a deployment-added event's: the deployment's
// DeploymentInfo, in part.
type DeploymentAddedDetail struct {
	Design        string `json:"design"`
	Revision      int    `json:"revision"`
	ApplicationID string `json:"applicationId"`
	Instances     int    `json:"instances"`
	Standbys      int    `json:"standbys"`
	Guarantee     string `json:"guarantee"`
}

// WindowClosedDetail is a window-closed event's: the window of Store
// closed when the stream time reached ClosesAt (WindowEnd + GraceMs), and
// whether its Keys were emitted.
type WindowClosedDetail struct {
	Store       string `json:"store"`
	WindowStart int64  `json:"windowStart"`
	WindowEnd   int64  `json:"windowEnd"`
	ClosesAt    int64  `json:"closesAt"`
	StreamTime  int64  `json:"streamTime"`
	GraceMs     int64  `json:"graceMs"`
	Keys        int    `json:"keys"`
	Emitted     bool   `json:"emitted"`
}

// LateDropDetail is a late-drop event's: the record of Topic at Timestamp
// came after its window closed. Suppressed counts the late records of the
// task dropped since the last event, which none told.
type LateDropDetail struct {
	Store       string `json:"store"`
	Timestamp   int64  `json:"timestamp"`
	StreamTime  int64  `json:"streamTime"`
	WindowStart int64  `json:"windowStart"`
	WindowEnd   int64  `json:"windowEnd"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Suppressed  int64  `json:"suppressed,omitempty"`
}

// TaskAssignedDetail is a task-assigned event's: the input partitions
// ("topic/partition") and the replica the task was promoted from, "" when
// none.
type TaskAssignedDetail struct {
	Partitions  []string `json:"partitions"`
	FromReplica string   `json:"fromReplica"`
}

// TaskRevokedDetail is a task-revoked event's: Clean is false when the
// instance lost its group membership and could not commit; LastRecordAt
// is 0 when the task processed none.
type TaskRevokedDetail struct {
	Clean        bool  `json:"clean"`
	LastRecordAt int64 `json:"lastRecordAt,omitempty"`
}

// TaskResumedDetail is a task-resumed event's: the task's first record on
// the instance it moved to.
type TaskResumedDetail struct {
	AssignedAt    int64  `json:"assignedAt"`
	FirstRecordAt int64  `json:"firstRecordAt"`
	Restored      int64  `json:"restored"`
	FromReplica   string `json:"fromReplica"`
}

// TaskFailedOverDetail is a task-failed-over event's: the row of the
// failover table (failoverOf) and the times it was computed from, each
// left out when the runtime did not know it. StandbyLag and the
// projection are pointers because their zero is a value: nil is "not
// known".
type TaskFailedOverDetail struct {
	From         string `json:"from"`
	To           string `json:"to"`
	Cause        string `json:"cause"`
	FromReplica  string `json:"fromReplica"`
	DetectionMs  int64  `json:"detectionMs"`
	DetectedBy   string `json:"detectedBy"`
	RecoveryMs   int64  `json:"recoveryMs"`
	DowntimeMs   int64  `json:"downtimeMs"`
	Restored     int64  `json:"restored"`
	ResumedAt    int64  `json:"resumedAt"`
	FailedAt     int64  `json:"failedAt,omitempty"`
	LastRecordAt int64  `json:"lastRecordAt,omitempty"`
	AssignedAt   int64  `json:"assignedAt,omitempty"`
	// StandbyLag is the records the replica it moved onto was behind.
	StandbyLag *int64 `json:"standbyLag,omitempty"`
	// ProjectedDowntimeMs and ProjectedSafe are Failover's, set together
	// for a crash the risk assessment had projected.
	ProjectedDowntimeMs *int64 `json:"projectedDowntimeMs,omitempty"`
	ProjectedSafe       *bool  `json:"projectedSafe,omitempty"`
}

// RebalanceDetail is a rebalance event's: it took DurationMs, and
// suspended the tasks Kept and gave them back.
type RebalanceDetail struct {
	DurationMs int64    `json:"durationMs"`
	Kept       []string `json:"kept,omitempty"`
}

// RestoreStartedDetail is a restore-started event's: Store's changelog
// partition is replayed from StartOffset to EndOffset, after the snapshot
// the store was loaded from, if any.
type RestoreStartedDetail struct {
	Store       string `json:"store"`
	Changelog   string `json:"changelog"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"startOffset"`
	EndOffset   int64  `json:"endOffset"`
	SnapshotLoad
}

// RestoreProgressDetail is a restore-progress event's: Store reached
// Offset, and the task's Restore over all its stores.
type RestoreProgressDetail struct {
	Store    string  `json:"store"`
	Offset   int64   `json:"offset"`
	Restored int64   `json:"restored"`
	Total    int64   `json:"total"`
	Rate     float64 `json:"rate"`
	EtaMs    int64   `json:"etaMs"`
	SnapshotLoad
}

// RestoreFinishedDetail is a restore-finished event's: Store restored
// Restored changelog records in DurationMs, at Rate records/s, after the
// snapshot it was loaded from, if any.
type RestoreFinishedDetail struct {
	Store      string  `json:"store"`
	Changelog  string  `json:"changelog"`
	Partition  int32   `json:"partition"`
	Restored   int64   `json:"restored"`
	DurationMs int64   `json:"durationMs"`
	Rate       float64 `json:"rate"`
	SnapshotLoad
}

// SnapshotLoad says where a restore's state came from before its
// changelog: the snapshot loaded (none when SnapshotID is ""), taken at
// SnapshotTakenAt, SnapshotBytes downloaded, verified and loaded in
// SnapshotLoadMs (not DurationMs: that is the event's own work), and the
// snapshots skipped as unusable, with why. Embedded, so that its names are
// the same in every restore event and in a task's Restore, which sums its
// stores' (the oldest snapshot, their bytes and load times).
type SnapshotLoad struct {
	SnapshotID       string            `json:"snapshotId,omitempty"`
	SnapshotTakenAt  int64             `json:"snapshotTakenAt,omitempty"`
	SnapshotBytes    int64             `json:"snapshotBytes,omitempty"`
	SnapshotLoadMs   int64             `json:"snapshotLoadMs,omitempty"`
	SkippedSnapshots []SkippedSnapshot `json:"skippedSnapshots,omitempty"`
}

// SkippedSnapshot is a snapshot a restore found unusable, and why.
type SkippedSnapshot struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// SnapshotTakenDetail is a snapshot-taken event's: the snapshot of Store
// holding its changelog up to ChangelogOffset, SnapshotBytes in
// SnapshotFiles uploaded in DurationMs, the older snapshots it Pruned; or
// the Error it failed with.
type SnapshotTakenDetail struct {
	Store           string   `json:"store"`
	SnapshotID      string   `json:"snapshotId"`
	ChangelogOffset int64    `json:"changelogOffset"`
	StreamTime      int64    `json:"streamTime"`
	SnapshotBytes   int64    `json:"snapshotBytes"`
	SnapshotFiles   int      `json:"snapshotFiles"`
	DurationMs      int64    `json:"durationMs"`
	Pruned          []string `json:"pruned,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// StandbyStartedDetail is a standby-started event's: the replica's first
// store, at Offset of EndOffset, Lag records behind.
type StandbyStartedDetail struct {
	Warmup    bool   `json:"warmup"`
	Store     string `json:"store"`
	Offset    int64  `json:"offset"`
	EndOffset int64  `json:"endOffset"`
	Lag       int64  `json:"lag"`
}

// StandbyPromotedDetail is a standby-promoted event's: how far behind the
// replica was when it became the active task.
type StandbyPromotedDetail struct {
	Warmup    bool  `json:"warmup"`
	Lag       int64 `json:"lag"`
	TimeLagMs int64 `json:"timeLagMs"`
}

// ErrorDetail is an error event's. Suppressed counts the handled errors
// since the last event, which none told.
type ErrorDetail struct {
	Fatal      bool  `json:"fatal"`
	Suppressed int64 `json:"suppressed,omitempty"`
}

// BrokerUnreachableDetail is a broker-unreachable event's: Broker has not
// answered since Since.
type BrokerUnreachableDetail struct {
	Broker string `json:"broker"`
	Since  int64  `json:"since"`
	Error  string `json:"error"`
}

// BrokerReachableDetail is a broker-reachable event's: Broker answers
// again after SilentMs without an answer since Since.
type BrokerReachableDetail struct {
	Broker   string `json:"broker"`
	Since    int64  `json:"since"`
	SilentMs int64  `json:"silentMs"`
}

// RawDetail is the detail of a kind detailTypes does not name, or one
// that does not decode into its kind's type (a foreign or damaged
// history): kept as it was read, so that it is written out again
// unchanged.
type RawDetail json.RawMessage

// MarshalJSON writes the detail as it was read.
func (r RawDetail) MarshalJSON() ([]byte, error) { return json.RawMessage(r).MarshalJSON() }

func (DeploymentAddedDetail) eventDetail()   {}
func (WindowClosedDetail) eventDetail()      {}
func (LateDropDetail) eventDetail()          {}
func (TaskAssignedDetail) eventDetail()      {}
func (TaskRevokedDetail) eventDetail()       {}
func (TaskResumedDetail) eventDetail()       {}
func (TaskFailedOverDetail) eventDetail()    {}
func (RebalanceDetail) eventDetail()         {}
func (RestoreStartedDetail) eventDetail()    {}
func (RestoreProgressDetail) eventDetail()   {}
func (RestoreFinishedDetail) eventDetail()   {}
func (StandbyStartedDetail) eventDetail()    {}
func (StandbyPromotedDetail) eventDetail()   {}
func (ErrorDetail) eventDetail()             {}
func (BrokerUnreachableDetail) eventDetail() {}
func (BrokerReachableDetail) eventDetail()   {}
func (SnapshotTakenDetail) eventDetail()     {}
func (RawDetail) eventDetail()               {}

// UnmarshalJSON decodes an event, its detail into the type its kind has
// in detailTypes, under today's names (detailnames.go renames the older
// ones first).
func (e *Event) UnmarshalJSON(b []byte) error {
	// plain has Event's fields and not this method; the outer Detail
	// shadows its own.
	type plain Event
	var w struct {
		plain
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decoding an event: %w", err)
	}
	*e = Event(w.plain)
	e.Detail = decodeDetail(e.Kind, w.Detail)
	return nil
}

// decodeDetail decodes a kind's detail; raw is nil or JSON null when the
// event has none. A detail that is not an object of its kind's fields is
// kept raw rather than failing the event: a history's other events, and
// this one's time and message, are worth more than the detail.
func decodeDetail(kind string, raw json.RawMessage) EventDetail {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	zero, ok := detailTypes[kind]
	if !ok {
		return RawDetail(raw)
	}
	raw = upgradeDetail(kind, raw)
	p := reflect.New(reflect.TypeOf(zero))
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return RawDetail(raw)
	}
	return p.Elem().Interface().(EventDetail)
}
