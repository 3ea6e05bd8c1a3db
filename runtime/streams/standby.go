package streams

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StandbyHook is called for the standby and warm-up replicas this
// instance keeps: when one starts following a task's changelogs, after
// every batch it applies, and when it stops (promoted to active, moved to
// another instance, or closed with the App).
type StandbyHook interface {
	OnStandbyStarted(StandbyEvent)
	OnStandbyApplied(StandbyEvent)
	OnStandbySuspended(StandbyEvent)
}

// StandbyEvent describes one store of a standby or warm-up replica.
type StandbyEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	// Warmup is true for a warm-up replica: a standby placed to restore
	// state on the instance that should run the task, until it can.
	Warmup    bool
	Store     string
	Changelog string
	Partition int32
	// Offset is the next changelog offset to apply; EndOffset the
	// changelog's end as last seen; Lag their difference in records.
	Offset, EndOffset, Lag int64
	// Applied counts the records of the batch (OnStandbyApplied only).
	Applied int
	// LastRecord is the timestamp of the last applied record (zero before
	// the first); TimeLag is how far behind the standby is in time: the
	// age of that record while Lag > 0, else 0.
	LastRecord time.Time
	TimeLag    time.Duration
	// Reason says why a standby stopped: "promoted", "moved" or "closed".
	Reason string
	// Snapshot, in OnStandbyStarted, is the snapshot the store started
	// from (Config.Snapshots), nil when it follows its changelog from its
	// own checkpoint.
	Snapshot *SnapshotRestore
}

// StandbyStats is one standby or warm-up replica kept by this instance.
type StandbyStats struct {
	ID     TaskID
	Warmup bool
	Stores []StandbyStoreStats
}

// StandbyStoreStats is one followed store of a replica; see StandbyEvent
// for the fields.
type StandbyStoreStats struct {
	Name, Changelog        string
	Partition              int32
	Offset, EndOffset, Lag int64
	LastRecord             time.Time
	TimeLag                time.Duration
}

// standbyTask is a task this instance keeps a replica of. Its stores are
// the taskStores an active task uses, opened the same way, so that a
// promotion hands them over open and replays only what they lack.
type standbyTask struct {
	id     TaskID
	warmup bool
	stores []*taskStore
	logged []*followedStore
}

// followedStore is the progress of one logged store of a standby.
type followedStore struct {
	store *taskStore
	task  *standbyTask
	// end is the changelog end offset last seen; lastTimestamp the
	// timestamp (ms) of the last applied record, -1 before the first.
	end           int64
	lastTimestamp int64
}

func (f *followedStore) offset() int64 { return f.store.db.Checkpoint().ChangelogOffset }

func (f *followedStore) event(a *App, applied int, reason string) StandbyEvent {
	off := f.offset()
	ev := StandbyEvent{
		ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, Task: f.task.id, Warmup: f.task.warmup,
		Store: f.store.spec.name, Changelog: f.store.changelog, Partition: f.store.partition,
		Offset: off, EndOffset: f.end, Lag: max(0, f.end-off), Applied: applied, Reason: reason,
	}
	if f.lastTimestamp >= 0 {
		ev.LastRecord = time.UnixMilli(f.lastTimestamp)
		if ev.Lag > 0 {
			ev.TimeLag = max(0, time.Since(ev.LastRecord))
		}
	}
	return ev
}

// standbys follows the changelogs of every replica of the App with one
// consumer of its own and applies them to the replicas' stores, exactly
// as a restore does, for as long as the replica lives.
type standbys struct {
	app *App

	// client, cancel and done are set by startStandbys before the
	// group client exists, and so before anything else uses them.
	//
	// mu guards tasks and byTP, and is held while a fetch is applied, so
	// that release never takes stores in the middle of a batch. Lock
	// order: App.tasksMu before mu.
	mu    sync.Mutex
	tasks map[TaskID]*standbyTask
	byTP  map[TopicPartition]*followedStore
	// pending, startAt and wakePoll (under mu) and waiting: see
	// replica_start.go.
	pending  []*standbyTask
	startAt  time.Time
	wakePoll context.CancelFunc
	waiting  atomic.Bool

	client *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startStandbys creates the App's changelog follower and its goroutine;
// stop ends both.
func (a *App) startStandbys() error {
	opts := append([]kgo.Opt{
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
	}, a.cfg.ClientOptions...)
	// A replica never skips a changelog record it can still read: one
	// that fell behind the log start resumes there (and is emptied first:
	// passLogStart), never at the end.
	opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	opts = append(opts, a.readOptions()...)
	opts = append(opts, a.reach.watch(a.log.With("client", "standby"))...)
	opts = append(opts, kgo.SeedBrokers(a.cfg.Brokers...), kgo.WithContext(a.clientCtx))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating standby client: %w", err)
	}
	ctx, cancel := context.WithCancel(a.clientCtx)
	s := a.standby
	s.client, s.cancel, s.done = cl, cancel, make(chan struct{})
	go s.run(ctx)
	return nil
}

func newStandbys(a *App) *standbys {
	return &standbys{app: a, tasks: make(map[TaskID]*standbyTask), byTP: make(map[TopicPartition]*followedStore)}
}

// stop ends the follower and closes every replica's stores.
func (s *standbys) stop() {
	if s.client == nil {
		return // never started
	}
	s.cancel()
	<-s.done
	s.client.Close()
	for _, id := range s.ids() {
		if sb := s.release(id, "closed"); sb != nil {
			closeTaskStores(sb.stores)
		}
	}
}

func (s *standbys) run(ctx context.Context) {
	defer close(s.done)
	for {
		s.startDue(ctx)
		pollCtx, cancel := s.pollContext(ctx)
		fetches := s.client.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kgo.ErrClientClosed) {
				s.app.log.Warn("fetching a standby changelog failed", "topic", topic, "partition", p, "err", err)
			}
		})
		s.apply(fetches)
	}
}

// apply writes one fetch into the replicas' stores, one pebble batch per
// partition, with the checkpoint of what it applied.
func (s *standbys) apply(fetches kgo.Fetches) {
	var events []StandbyEvent
	var failed []TaskID
	s.mu.Lock()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		f := s.byTP[TopicPartition{p.Topic, p.Partition}]
		if f == nil {
			return // released meanwhile
		}
		end := p.HighWatermark
		if s.app.txn != nil {
			end = p.LastStableOffset // what a read-committed reader can reach
		}
		f.end = max(f.end, end)
		// The fetch's log start is past the checkpoint once the
		// follower fell behind the retention and was reset to it.
		err := f.passLogStart(s.app, p.LogStartOffset, "following")
		n := -1
		if err == nil {
			n, err = f.applyRecords(p.Records)
		}
		if err != nil {
			s.app.log.Error("standby stopped", "task", f.task.id.String(), "err", err)
			s.app.reportError(f.task.id, err, false)
			failed = append(failed, f.task.id)
			return
		}
		if n >= 0 {
			events = append(events, f.event(s.app, n, ""))
		}
	})
	// A replica's store runs without pebble's WAL, as the active's does:
	// what it applied reaches the disk with a memtable's flush, and the age
	// of its last flushed checkpoint is bounded even while its changelog is
	// idle (state.Store.FlushIfOld; the poll comes back at least every
	// idlePollBound).
	for _, f := range s.byTP {
		f.store.db.FlushIfOld()
	}
	s.mu.Unlock()
	for _, id := range failed {
		// The next rebalance places the replica again, from its
		// checkpoint.
		if sb := s.release(id, "closed"); sb != nil {
			closeTaskStores(sb.stores)
		}
	}
	for _, ev := range events {
		for _, h := range s.app.hooks.standby {
			h.OnStandbyApplied(ev)
		}
	}
}

// passLogStart empties the store when its checkpoint is behind logStart,
// its changelog's log start, and moves the checkpoint there: the records
// in between are gone, a row's tombstone perhaps among them, so the store
// is rebuilt from the log start, as a restore does (clearBeforeLogStart)
// and as Kafka Streams does with a corrupted task. At the start the
// follower lists the log start (prepare); while following, each fetch
// carries it (apply), and the consumer that fell behind it resumes there
// (see startStandbys).
func (f *followedStore) passLogStart(a *App, logStart int64, when string) error {
	checkpoint := f.offset()
	cleared, err := clearBeforeLogStart(f.task.id, f.store, logStart)
	if err != nil {
		return fmt.Errorf("standby of task %s: %w", f.task.id, err)
	}
	if cleared {
		a.log.Warn("changelog records before the log start were deleted (retention or compaction); emptying the standby's store and following from the log start",
			"task", f.task.id.String(), "store", f.store.spec.name, "changelog", f.store.changelog, "partition", f.store.partition,
			"checkpoint", checkpoint, "log_start", logStart, "when", when)
		f.store.lastOffset.Store(logStart - 1)
	}
	return nil
}

// applyRecords applies the records past the store's checkpoint and
// returns how many it applied, -1 when none was new.
func (f *followedStore) applyRecords(recs []*kgo.Record) (int, error) {
	st := f.store
	from := f.offset()
	cp := st.db.Checkpoint()
	entries := make([]state.Entry, 0, len(recs))
	applied := -1
	for _, r := range recs {
		if r.Offset < from {
			continue
		}
		e, ts, apply, err := st.restoreEntry(r)
		if err != nil {
			return 0, fmt.Errorf("standby of store %q of task %s: %s/%d at offset %d: %w",
				st.spec.name, f.task.id, r.Topic, r.Partition, r.Offset, err)
		}
		cp.StreamTime = max(cp.StreamTime, ts)
		cp.ChangelogOffset = r.Offset + 1
		if !r.Attrs.IsControl() {
			f.lastTimestamp = r.Timestamp.UnixMilli()
		}
		applied = max(applied, 0)
		if apply {
			entries = append(entries, e)
			applied++
			if st.win != nil {
				st.win.stored(st.win.segmentTime(r.Key))
			}
		}
	}
	if applied < 0 {
		return -1, nil
	}
	if err := st.db.Restore(entries, cp); err != nil {
		return 0, fmt.Errorf("standby of store %q of task %s: %w", st.spec.name, f.task.id, err)
	}
	st.restoredBatch()
	st.lastOffset.Store(cp.ChangelogOffset - 1)
	if err := f.expire(cp); err != nil {
		return 0, err
	}
	return applied, nil
}

// expire drops the segments of a windowed store that stream time has
// expired, as the active does: the changelog never deletes them, so a
// long-lived standby would otherwise keep every window it ever saw.
func (f *followedStore) expire(cp state.Checkpoint) error {
	st := f.store
	if st.win == nil || cp.StreamTime < 0 {
		return nil
	}
	if err := st.expireSegments(cp.StreamTime); err != nil {
		return fmt.Errorf("standby of task %s: %w", f.task.id, err)
	}
	if st.db.Pending() == 0 {
		return nil
	}
	if err := st.db.Commit(cp); err != nil {
		return fmt.Errorf("standby of store %q of task %s: dropping expired segments: %w", st.spec.name, f.task.id, err)
	}
	return nil
}

// addLocked starts following sb's logged stores from their checkpoints;
// ends and starts hold their changelogs' end and start offsets. It
// returns the started events for the caller to report once it unlocked
// mu, which it holds.
func (s *standbys) addLocked(sb *standbyTask, ends, starts kadm.ListedOffsets) ([]StandbyEvent, error) {
	a := s.app
	offsets := make(map[string]map[int32]kgo.Offset)
	for _, st := range sb.stores {
		if st.changelog == "" {
			continue
		}
		end, ok := ends.Lookup(st.changelog, st.partition)
		if !ok {
			return nil, fmt.Errorf("changelog %s has no partition %d for standby task %s", st.changelog, st.partition, sb.id)
		}
		f, from, err := s.prepare(sb, st, end.Offset, starts)
		if err != nil {
			return nil, err
		}
		sb.logged = append(sb.logged, f)
		offsets[st.changelog] = map[int32]kgo.Offset{st.partition: kgo.NewOffset().At(from)}
	}
	s.tasks[sb.id] = sb
	for _, f := range sb.logged {
		s.byTP[TopicPartition{f.store.changelog, f.store.partition}] = f
	}
	s.client.AddConsumePartitions(offsets)
	role := "standby"
	if sb.warmup {
		role = "warm-up"
	}
	a.log.Info("replica started", "task", sb.id.String(), "role", role)
	return s.events(sb, ""), nil
}

// prepare readies store st of sb, whose changelog ends at end, to be
// followed, and returns its progress and the offset to fetch from. A
// store whose checkpoint is past its changelog's end is rebuilt first,
// and one whose checkpoint is before its log start (in starts) emptied
// (passLogStart), as a restore would.
func (s *standbys) prepare(sb *standbyTask, st *taskStore, end int64, starts kadm.ListedOffsets) (*followedStore, int64, error) {
	if st.db.Checkpoint().ChangelogOffset > end {
		if err := s.app.rebuildStore(sb.id, st); err != nil {
			return nil, 0, err
		}
	}
	f := &followedStore{store: st, task: sb, end: end, lastTimestamp: -1}
	// From the log start at the earliest: a fetch before it is out of
	// range, and the reset lists the start again.
	from := f.offset()
	if start, ok := starts.Lookup(st.changelog, st.partition); ok && start.Err == nil {
		if err := f.passLogStart(s.app, start.Offset, "starting"); err != nil {
			return nil, 0, err
		}
		from = max(f.offset(), start.Offset)
	}
	if st.win != nil {
		if err := st.loadSegments(); err != nil {
			return nil, 0, fmt.Errorf("standby task %s: %w", sb.id, err)
		}
	}
	return f, from, nil
}

func (s *standbys) events(sb *standbyTask, reason string) []StandbyEvent {
	out := make([]StandbyEvent, len(sb.logged))
	for i, f := range sb.logged {
		out[i] = f.event(s.app, 0, reason)
		if reason == "" {
			out[i].Snapshot = f.store.loadedFrom
		}
	}
	return out
}

// release stops following task id and returns its replica, with its
// stores open, or nil when there is none. A replica not started yet is
// returned too; its stores are nil unless it was an active task before.
func (s *standbys) release(id TaskID, reason string) *standbyTask {
	s.mu.Lock()
	if i := slices.IndexFunc(s.pending, func(sb *standbyTask) bool { return sb.id == id }); i >= 0 {
		sb := s.pending[i]
		s.pending = slices.Delete(s.pending, i, i+1)
		s.mu.Unlock()
		return sb
	}
	sb := s.tasks[id]
	if sb == nil {
		s.mu.Unlock()
		return nil
	}
	delete(s.tasks, id)
	remove := make(map[string][]int32)
	for _, f := range sb.logged {
		tp := TopicPartition{f.store.changelog, f.store.partition}
		delete(s.byTP, tp)
		remove[tp.Topic] = append(remove[tp.Topic], tp.Partition)
	}
	s.client.RemoveConsumePartitions(remove)
	events := s.events(sb, reason)
	s.mu.Unlock()
	for _, ev := range events {
		for _, h := range s.app.hooks.standby {
			h.OnStandbySuspended(ev)
		}
	}
	return sb
}

// setWarmup turns a warm-up into a standby or back.
func (s *standbys) setWarmup(id TaskID, warmup bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.tasks[id]; sb != nil {
		sb.warmup = warmup
	}
	for _, sb := range s.pending {
		if sb.id == id {
			sb.warmup = warmup
		}
	}
}

// ids lists the replicas kept here, started or not.
func (s *standbys) ids() []TaskID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Keys(s.tasks))
	for _, sb := range s.pending {
		out = append(out, sb.id)
	}
	return out
}

// offsets adds the changelog offset sum of every replica with open
// stores to out.
func (s *standbys) offsets(out map[TaskID]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sb := range s.tasks {
		out[id] = offsetSum(sb.stores)
	}
	for _, sb := range s.pending {
		if sb.stores != nil {
			out[sb.id] = offsetSum(sb.stores)
		}
	}
}

// stats returns a snapshot of the started replicas, sorted by task.
func (s *standbys) stats() []StandbyStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StandbyStats, 0, len(s.tasks))
	for _, sb := range s.tasks {
		ss := StandbyStats{ID: sb.id, Warmup: sb.warmup}
		for _, f := range sb.logged {
			ev := f.event(s.app, 0, "")
			ss.Stores = append(ss.Stores, StandbyStoreStats{Name: ev.Store, Changelog: ev.Changelog, Partition: ev.Partition,
				Offset: ev.Offset, EndOffset: ev.EndOffset, Lag: ev.Lag, LastRecord: ev.LastRecord, TimeLag: ev.TimeLag})
		}
		out = append(out, ss)
	}
	slices.SortFunc(out, func(x, y StandbyStats) int { return compareTaskIDs(x.ID, y.ID) })
	return out
}

// offsetSum is the sum of the checkpointed changelog offsets of the
// logged stores: what the assignor compares with the changelogs' ends.
func offsetSum(stores []*taskStore) int64 {
	var sum int64
	for _, st := range stores {
		if st.changelog != "" {
			sum += st.committedOffset()
		}
	}
	return sum
}

func closeTaskStores(stores []*taskStore) {
	for _, st := range stores {
		st.db.Abort()
		st.db.Close()
	}
}
