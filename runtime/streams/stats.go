package streams

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Stats is a snapshot of an App, deep-copied: the caller may keep and
// change it.
type Stats struct {
	ApplicationID string
	InstanceID    string
	State         State
	Tasks         []TaskStats
	// Suspended are the active tasks a rebalance set aside, stores open:
	// they process nothing until the new assignment says whether they
	// stay. The eager protocol suspends every task for every rebalance,
	// the cooperative one only the tasks it revokes, until they leave.
	// Their counters are as at the suspension; they have no partitions.
	Suspended []TaskStats
	// Standbys are the standby and warm-up replicas kept here.
	Standbys []StandbyStats
	// UnreachableBrokers lists the brokers that do not answer this
	// instance now (see BrokerHook), by address.
	UnreachableBrokers []UnreachableBroker
	// StateDirsCleaned counts the task state directories this App
	// deleted because their tasks had moved away for longer than
	// Config.StateCleanupDelay.
	StateDirsCleaned int64
}

// TaskStats is a snapshot of one active task.
type TaskStats struct {
	ID TaskID
	// StreamTime is the largest record timestamp the task has processed,
	// in milliseconds since the epoch; -1 before its first record.
	StreamTime int64
	// Processed counts records taken from the task's inputs, Skipped
	// the records the error handlers skipped and those an aggregation
	// skipped for a nil key or value (see ErrNullKey).
	Processed, Skipped int64
	// Restoring is true while the task's stores catch up with their
	// changelogs; the task processes nothing until then.
	Restoring bool
	// LastRecord is when the task last processed a record here.
	LastRecord time.Time
	// IdlingSince is when the task began to wait for records of the
	// empty partitions in WaitingOn while it had records of others
	// buffered (Config.MaxTaskIdle), zero while it does not wait.
	IdlingSince time.Time
	WaitingOn   []TopicPartition
	// EnforcedProcessing counts the records the task processed while one
	// of its partitions was empty and its idle time had passed, as Kafka
	// Streams' enforced-processing-total.
	EnforcedProcessing int64
	// Suspensions counts the rebalances that suspended the task on this
	// App since it started, here or in an earlier stay: a suspension
	// shorter than a look at Stats still shows in it.
	Suspensions int

	Partitions []PartitionStats
	Stores     []StoreStats
	// Nodes counts, per processor node, the records it received and
	// forwarded, sorted by name; only with Config.NodeMetrics. A source's
	// In is its Out.
	Nodes []NodeStats
}

// NodeStats is one processor node's record counts in a task.
type NodeStats struct {
	Name    string
	In, Out int64
}

// StoreStats is one state store of a task.
type StoreStats struct {
	Name      string
	Changelog string // "" with logging disabled
	// CheckpointOffset is the changelog offset the store's committed
	// state covers (the next to apply).
	CheckpointOffset int64
	// Cached counts the dirty rows in the record cache.
	Cached int
	// Windowed stores only: the windows not closed yet, and the records
	// dropped for coming after their window closed (once per window).
	OpenWindows int
	LateDrops   int64
}

// PartitionStats is one input partition of a task.
type PartitionStats struct {
	TopicPartition
	// Position is the offset after the last processed record, -1 before
	// this instance processed one; Committed is the offset it last
	// committed, -1 when it committed none.
	Position, Committed int64
	// Buffered counts fetched records not processed yet.
	Buffered int
	// EndOffset is the partition's high watermark as the last fetch saw
	// it, -1 before one; Lag is EndOffset - Position, -1 when either is
	// unknown.
	EndOffset, Lag int64
}

// Stats returns a copy of the App's current state. It is updated after
// every processed batch of records and every task change.
func (a *App) Stats() Stats {
	standbys := a.standby.stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, State: a.state, Standbys: standbys,
		UnreachableBrokers: a.reach.unreachable(), StateDirsCleaned: a.stateDirsCleaned}
	s.Tasks, s.Suspended = cloneTaskStats(a.stats), cloneTaskStats(a.suspendedStats)
	return s
}

func cloneTaskStats(stats []TaskStats) []TaskStats {
	out := make([]TaskStats, len(stats))
	for i, ts := range stats {
		ts.Partitions = slices.Clone(ts.Partitions)
		ts.Stores = slices.Clone(ts.Stores)
		ts.Nodes = slices.Clone(ts.Nodes)
		ts.WaitingOn = slices.Clone(ts.WaitingOn)
		out[i] = ts
	}
	return out
}

// publishStats copies the tasks' counters into the snapshot Stats reads,
// and the tasks held into the one heldState answers from while tasksMu is
// busy. The caller holds tasksMu.
func (a *App) publishStats() {
	a.publishHeld()
	a.publishCounters()
}

// publishCounters is publishStats after a processed batch, which changes
// the counters but not which tasks run. It leaves heldState's snapshot to
// the commit that follows (see loop): an offset sum behind by one commit
// interval understates the state held, the safe error, and cloning every
// store's offsets on every batch would cost the hot path for a rebalance.
func (a *App) publishCounters() {
	snap, suspended := a.snapshotTasks(a.tasks), a.snapshotTasks(a.suspended)
	a.mu.Lock()
	a.stats, a.suspendedStats = snap, suspended
	a.mu.Unlock()
}

func (a *App) snapshotTasks(tasks map[TaskID]*task) []TaskStats {
	out := make([]TaskStats, 0, len(tasks))
	for _, t := range tasks {
		ts := TaskStats{ID: t.id, StreamTime: t.streamTime, Processed: t.processed, Skipped: t.skipped, Restoring: t.restoring != nil,
			LastRecord: t.lastRecordAt, IdlingSince: t.idle.since, EnforcedProcessing: t.idle.enforced, Suspensions: a.suspensions[t.id]}
		if !t.idle.since.IsZero() {
			ts.WaitingOn = slices.Clone(t.idle.waitingOn)
		}
		for _, st := range t.storeList {
			ss := StoreStats{Name: st.spec.name, Changelog: st.changelog,
				CheckpointOffset: st.committedOffset(), Cached: len(st.order)}
			if st.win != nil {
				ss.OpenWindows, ss.LateDrops = len(st.win.open), st.win.lateDrops
			}
			ts.Stores = append(ts.Stores, ss)
		}
		for _, q := range t.queues {
			ps := PartitionStats{TopicPartition: q.tp, Position: q.next.Offset, Committed: q.committed, EndOffset: q.endOffset, Lag: -1}
			if q.endOffset >= 0 && q.next.Offset >= 0 {
				ps.Lag = max(0, q.endOffset-q.next.Offset)
			}
			for i, b := range q.batches {
				if i == 0 {
					ps.Buffered += len(b) - q.pos
				} else {
					ps.Buffered += len(b)
				}
			}
			ts.Partitions = append(ts.Partitions, ps)
		}
		if t.meters != nil {
			ts.Nodes = make([]NodeStats, 0, len(t.meters))
			for name, m := range t.meters {
				ns := NodeStats{Name: name, In: m.in, Out: m.out}
				if ns.In == 0 {
					ns.In = ns.Out // a source: records enter it from its queues
				}
				ts.Nodes = append(ts.Nodes, ns)
			}
			slices.SortFunc(ts.Nodes, func(x, y NodeStats) int { return strings.Compare(x.Name, y.Name) })
		}
		out = append(out, ts)
	}
	slices.SortFunc(out, func(x, y TaskStats) int { return compareTaskIDs(x.ID, y.ID) })
	return out
}

// kgoLogger sends franz-go's log to slog, one level down: franz-go's info
// messages are about connections and group steps, debugging material for
// a streams application.
type kgoLogger struct {
	l *slog.Logger
	// reach, when set, quiets the client while a broker is unreachable.
	reach *reachability
}

func (k kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.Enabled(context.Background(), slog.LevelDebug-4):
		return kgo.LogLevelDebug
	case k.l.Enabled(context.Background(), slog.LevelDebug):
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelDebug
	default:
		l = slog.LevelDebug - 4
	}
	k.l.Log(context.Background(), k.reach.quiet(l), msg, append(keyvals, "component", "kafka-client")...)
}
