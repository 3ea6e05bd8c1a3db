package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RestoreHook is called while a task's stores are restored from their
// changelogs, before the task processes. Start and end come once per store,
// progress once per applied batch, of RestoreProgressRecords records at
// most.
type RestoreHook interface {
	OnRestoreStart(RestoreEvent)
	OnRestoreProgress(RestoreEvent)
	OnRestoreEnd(RestoreEvent)
}

// RestoreEvent describes one store's restore. Offsets are changelog
// offsets: restoring reads [StartOffset, EndOffset).
type RestoreEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	Store         string
	Changelog     string
	Partition     int32
	StartOffset   int64
	EndOffset     int64
	// Offset is the next changelog offset to restore: the restore has
	// read [StartOffset, Offset).
	Offset int64
	// Restored counts the records applied so far; Rate is their rate in
	// records per second; Took is the time since the start.
	Restored int64
	Rate     float64
	Took     time.Duration
	// Snapshot, when not nil, is the snapshot the store was loaded from
	// before replaying the changelog from StartOffset (Config.Snapshots);
	// Skipped are the snapshots found unusable, and why.
	Snapshot *SnapshotRestore
	Skipped  []SnapshotSkip
}

// restoration restores one task's logged stores in a goroutine of its own,
// so that a long restore never holds up tasks that are ready.
type restoration struct {
	task   *task
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
}

// changelogEnds lists, in one request, the end offsets of the changelogs
// of tasks and replicas: the offsets their restores run to, and where
// replicas start to measure their lag. It waits brokerTimeout at most.
func (a *App) changelogEnds(ctx context.Context, adm *kadm.Client, tasks []*task, replicas []*standbyTask) (kadm.ListedOffsets, error) {
	var topics []string
	add := func(stores []*taskStore) {
		for _, st := range stores {
			if st.changelog != "" && !slices.Contains(topics, st.changelog) {
				topics = append(topics, st.changelog)
			}
		}
	}
	for _, t := range tasks {
		add(t.storeList)
	}
	for _, sb := range replicas {
		add(sb.stores)
	}
	if len(topics) == 0 {
		return nil, nil
	}
	if a.txn != nil && len(tasks) > 0 {
		sctx, cancel := context.WithTimeout(ctx, a.stableOffsetsWait())
		err := a.awaitStableOffsets(sctx, adm, tasks)
		cancel()
		if err != nil {
			return nil, brokerErr("listing changelog end offsets", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	ends, err := a.listChangelogEnds(ctx, adm, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, brokerErr("listing changelog end offsets", err)
	}
	if a.txn != nil {
		if ends, err = a.awaitCommitMarkers(ctx, adm, ends); err != nil {
			return nil, brokerErr("listing changelog end offsets", err)
		}
	}
	return ends, nil
}

// restoreStores starts restoring t's stores that are behind their
// changelogs' ends and reports whether it had to. The processing
// goroutine resumes t once the restoration finished (finishRestore).
func (a *App) restoreStores(ctx context.Context, adm *kadm.Client, t *task, ends kadm.ListedOffsets) (bool, error) {
	var behind []*storeRestore
	for _, st := range t.storeList {
		if st.changelog == "" {
			continue
		}
		end, ok := ends.Lookup(st.changelog, st.partition)
		if !ok {
			return false, fmt.Errorf("changelog %s has no partition %d for task %s", st.changelog, st.partition, t.id)
		}
		start := st.db.Checkpoint().ChangelogOffset
		if start > end.Offset && a.aheadOfStableOffset(ctx, adm, st, start) {
			continue // it holds a committed transaction the LSO does not show yet
		}
		if start > end.Offset {
			// The changelog was deleted and recreated, or truncated: the
			// local state describes records that no longer exist, so it
			// cannot be trusted and is rebuilt from what does.
			a.log.Warn("store checkpoint is past its changelog's end; rebuilding the store",
				"store", st.spec.name, "task", t.id.String(), "checkpoint", start, "changelog_end", end.Offset)
			if err := a.rebuildStore(t.id, st); err != nil {
				return false, err
			}
			start = 0
		}
		if start < end.Offset {
			behind = append(behind, &storeRestore{store: st, start: start, end: end.Offset})
		}
	}
	if len(behind) == 0 {
		return false, nil
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &restoration{task: t, cancel: cancel, done: make(chan struct{})}
	t.restoring = r
	go func() {
		defer close(r.done)
		r.err = a.runRestore(rctx, t, behind)
		a.finishRestore(r)
	}()
	return true, nil
}

// aheadOfStableOffset reports whether, under exactly-once, a store whose
// checkpoint is past its changelog's LSO is within the log all the same.
// A store applies a transaction's writes only once it committed, so such
// a checkpoint is a committed transaction whose marker on the changelog
// is not written yet (awaitCommitMarkers waits for those, but a marker
// may come between two listings): the store holds that transaction, and
// rebuilding it would restore to before it. A checkpoint past the log's
// end is a changelog deleted and recreated, or truncated.
func (a *App) aheadOfStableOffset(ctx context.Context, adm *kadm.Client, st *taskStore, checkpoint int64) bool {
	if a.txn == nil {
		return false
	}
	ends, err := adm.ListEndOffsets(ctx, st.changelog)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		a.log.Warn("listing a changelog's end for a checkpoint past its last stable offset", "changelog", st.changelog, "err", err)
		return false
	}
	end, ok := ends.Lookup(st.changelog, st.partition)
	return ok && checkpoint <= end.Offset
}

// storeRestore is the progress of one store's restore.
type storeRestore struct {
	store      *taskStore
	start, end int64
	next       int64
	restored   int64
	began      time.Time
	// snapshot is the snapshot the store was loaded from, skipped those
	// it could not use (snapshot_restore.go).
	snapshot *SnapshotRestore
	skipped  []SnapshotSkip
}

// runRestore reads the changelog partitions of stores from their
// checkpoints to their end offsets and applies one pebble batch per store
// per fetch, each with the checkpoint of what it applied.
func (a *App) runRestore(ctx context.Context, t *task, stores []*storeRestore) error {
	if a.snaps != nil {
		if stores = a.snaps.restore(ctx, t, stores); len(stores) == 0 {
			return nil
		}
	}
	byTopic := make(map[string]*storeRestore)
	for _, sr := range stores {
		byTopic[sr.store.changelog] = sr
		sr.next, sr.began = sr.start, time.Now()
		a.restoreEvent(t, sr, "start")
		a.log.Info("restoring store", "task", t.id.String(), "store", sr.store.spec.name, "from", sr.start, "to", sr.end)
	}
	opts := append([]kgo.Opt{
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
	}, a.cfg.ClientOptions...)
	opts = append(opts, a.readOptions()...)
	opts = append(opts, a.reach.watch(a.log.With("client", "restore"))...)
	// No partition to consume yet: the client lists the log starts first,
	// and then consumes from them where they are past the checkpoints, so
	// that no fetch asks for an offset before the log start (whose
	// OFFSET_OUT_OF_RANGE franz-go answers by listing the start again, a
	// start that a compaction may have moved meanwhile).
	opts = append(opts, kgo.SeedBrokers(a.cfg.Brokers...), kgo.WithContext(a.clientCtx))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating restore client for task %s: %w", t.id, err)
	}
	defer cl.Close()
	remaining, err := a.skipDeletedChangelog(ctx, kadm.NewClient(cl), t, stores)
	if err != nil {
		return err
	}
	parts := make(map[string]map[int32]kgo.Offset)
	for _, sr := range stores {
		if sr.next < sr.end {
			parts[sr.store.changelog] = map[int32]kgo.Offset{sr.store.partition: kgo.NewOffset().At(sr.next)}
		}
	}
	cl.AddConsumePartitions(parts)
	entries := make([]state.Entry, 0, 4096)
	lastLog := time.Now()
	for remaining > 0 {
		fetches, err := a.pollRestore(ctx, cl, t)
		if err != nil {
			return err
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			ferr = errors.Join(ferr, brokerErr(fmt.Sprintf("restoring %s/%d", topic, p), err))
		})
		if ferr != nil {
			return ferr
		}
		var applyErr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			sr := byTopic[p.Topic]
			if sr == nil || sr.next >= sr.end || applyErr != nil {
				return
			}
			for recs := p.Records; len(recs) > 0 && sr.next < sr.end && applyErr == nil; {
				n := min(len(recs), RestoreProgressRecords)
				entries, applyErr = a.applyRestore(t, sr, recs[:n], entries)
				recs = recs[n:]
			}
			if applyErr == nil && sr.next >= sr.end {
				remaining--
				a.restoreEvent(t, sr, "end")
				sr.store.restored = sr.restored
				sr.store.arena = nil // the restore's memory, not the store's
				t.restoredRecords += sr.restored
				a.log.Info("restored store", "task", t.id.String(), "store", sr.store.spec.name,
					"records", sr.restored, "took", time.Since(sr.began).Round(time.Millisecond))
			}
		})
		if applyErr != nil {
			return applyErr
		}
		if time.Since(lastLog) >= time.Second {
			lastLog = time.Now()
			for _, sr := range stores {
				if sr.next < sr.end {
					a.log.Info("restoring store", "task", t.id.String(), "store", sr.store.spec.name,
						"restored", sr.restored, "of", sr.end-sr.start)
				}
			}
		}
	}
	return nil
}

// RestoreProgressRecords is the most changelog records a restore applies
// in one pebble batch: a fetch may bring far more, and each batch ends
// with a progress event (RestoreHook.OnRestoreProgress), so that a long
// restore reports often enough to draw a moving bar.
const RestoreProgressRecords = 16384

// applyRestore applies recs, records of sr's changelog partition, in one
// pebble batch with the checkpoint of the last one read, and reports the
// progress. entries is reused; it is returned for the next batch.
func (a *App) applyRestore(t *task, sr *storeRestore, recs []*kgo.Record, entries []state.Entry) ([]state.Entry, error) {
	entries = entries[:0]
	last := sr.next - 1
	streamTime := sr.store.db.Checkpoint().StreamTime
	for _, r := range recs {
		if r.Offset >= sr.end {
			// Past the end, so every offset before it was read: under
			// exactly-once the last ones may be an aborted
			// transaction's records, which a read-committed reader
			// never receives.
			last = sr.end - 1
			break
		}
		last = r.Offset
		e, ts, apply, err := sr.store.restoreEntry(r)
		if err != nil {
			return entries, fmt.Errorf("restoring store %q of task %s from %s/%d at offset %d: %w",
				sr.store.spec.name, t.id, r.Topic, r.Partition, r.Offset, err)
		}
		streamTime = max(streamTime, ts)
		if apply {
			entries = append(entries, e)
		}
	}
	cp := state.Checkpoint{ChangelogOffset: last + 1, StreamTime: streamTime}
	if err := sr.store.db.Restore(entries, cp); err != nil {
		return entries, fmt.Errorf("restoring store %q of task %s: %w", sr.store.spec.name, t.id, err)
	}
	sr.store.restoredBatch()
	sr.restored += int64(len(entries))
	sr.next = last + 1
	sr.store.lastOffset.Store(last)
	a.restoreEvent(t, sr, "progress")
	return entries, nil
}

// skipDeletedChangelog finishes at once the restores of stores whose
// changelog has no record left between the checkpoint and the end, and
// returns how many restores remain. A changelog's records may be gone by
// retention: a windowed store's changelog (compact,delete) on Kafka loses
// its records by their timestamps, and records replayed from long ago are
// deleted soon after they are written; and a compaction moves the log
// start to its first surviving record. The fetch starts at the log start
// then (runRestore), and a restore whose log start is its end would wait
// for records that never come: its store is as restored as the changelog
// allows.
func (a *App) skipDeletedChangelog(ctx context.Context, adm *kadm.Client, t *task, stores []*storeRestore) (int, error) {
	topics := make([]string, 0, len(stores))
	for _, sr := range stores {
		topics = append(topics, sr.store.changelog)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return 0, brokerErr(fmt.Sprintf("listing the start offsets of task %s's changelogs", t.id), err)
	}
	remaining := len(stores)
	for _, sr := range stores {
		start, ok := starts.Lookup(sr.store.changelog, sr.store.partition)
		if !ok || start.Err != nil || start.Offset <= sr.start {
			continue
		}
		// The restore reads from the log start (runRestore).
		sr.next = min(start.Offset, sr.end)
		a.log.Warn("changelog records before the log start were deleted (retention or compaction); restoring from the log start",
			"task", t.id.String(), "store", sr.store.spec.name, "checkpoint", sr.start, "log_start", start.Offset, "changelog_end", sr.end)
		if _, err := clearBeforeLogStart(t.id, sr.store, start.Offset); err != nil {
			return 0, err
		}
		if start.Offset < sr.end {
			continue
		}
		cp := state.Checkpoint{ChangelogOffset: sr.end, StreamTime: sr.store.db.Checkpoint().StreamTime}
		if err := sr.store.db.Restore(nil, cp); err != nil {
			return 0, fmt.Errorf("restoring store %q of task %s: %w", sr.store.spec.name, t.id, err)
		}
		sr.next = sr.end
		sr.store.lastOffset.Store(sr.end - 1)
		remaining--
		a.restoreEvent(t, sr, "end")
		sr.store.restored = 0
	}
	return remaining, nil
}

// clearBeforeLogStart empties st when its checkpoint is behind logStart,
// its changelog's log start, and sets its checkpoint there, for a full
// restore from the log start: the records in between are gone, deletes
// among them, so the data cannot be brought forward from the checkpoint.
// A restore and a replica (standby.go) follow the one rule. A store
// without pebble's WAL comes back from a crash at its last flush
// (state.Options.Logged), which is how it may fall behind; a replica
// falls behind when the retention outruns it. An empty store (checkpoint
// 0) has nothing to clear. It reports whether it cleared the store.
func clearBeforeLogStart(id TaskID, st *taskStore, logStart int64) (bool, error) {
	cp := st.db.Checkpoint()
	if cp.ChangelogOffset == 0 || cp.ChangelogOffset >= logStart {
		return false, nil
	}
	cp.ChangelogOffset = logStart
	if err := st.db.Clear(cp); err != nil {
		return false, fmt.Errorf("clearing store %q of task %s for a restore from the log start: %w", st.spec.name, id, err)
	}
	return true, nil
}

// pollRestore polls a restore's client. Its stores are behind their
// changelogs' ends, so there is something to fetch: a poll that receives
// nothing within brokerTimeout means the broker does not answer, and the
// restore fails with a broker error, from which the App recovers by
// joining again (recover.go); the stores keep what they applied.
func (a *App) pollRestore(ctx context.Context, cl *kgo.Client, t *task) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	fetches := cl.PollFetches(pctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if pctx.Err() != nil {
		return nil, brokerErr(fmt.Sprintf("restoring task %s", t.id), errNoProgress)
	}
	return fetches, nil
}

func (a *App) restoreEvent(t *task, sr *storeRestore, what string) {
	took := time.Since(sr.began)
	ev := RestoreEvent{
		ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID,
		Task: t.id, Store: sr.store.spec.name, Changelog: sr.store.changelog, Partition: sr.store.partition,
		StartOffset: sr.start, EndOffset: sr.end, Offset: sr.next, Restored: sr.restored, Took: took,
		Snapshot: sr.snapshot, Skipped: sr.skipped,
	}
	if s := took.Seconds(); s > 0 {
		ev.Rate = float64(sr.restored) / s
	}
	for _, h := range a.hooks.restore {
		switch what {
		case "start":
			h.OnRestoreStart(ev)
		case "progress":
			h.OnRestoreProgress(ev)
		default:
			h.OnRestoreEnd(ev)
		}
	}
}

// pollWaker lets a restore that finished cut the processing goroutine's
// poll short, so that the task starts at once rather than at the next
// commit interval (30 s by default under at-least-once). A wake that comes
// while the goroutine is not polling is kept for its next poll, which then
// returns at once.
type pollWaker struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	pending bool
}

// set registers the cancel func of the poll about to start, nil when it
// ended.
func (w *pollWaker) set(cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel = cancel
	if cancel != nil && w.pending {
		w.pending = false
		cancel()
	}
}

func (a *App) wakePoll() {
	a.waker.mu.Lock()
	defer a.waker.mu.Unlock()
	if a.waker.cancel != nil {
		a.waker.cancel()
		return
	}
	a.waker.pending = true
}

// restoreEntry turns a changelog record into the store entry it restores
// (apply is false for a stream-time marker) and the stream time it proves. A
// key-value store's records carry the timestamp of the record that last
// changed their row, so its restored stream time is their maximum; a
// windowed store takes its stream time from its markers only (see
// taskStore.markStreamTime).
func (st *taskStore) restoreEntry(r *kgo.Record) (e state.Entry, streamTime int64, apply bool, err error) {
	if r.Attrs.IsControl() {
		// A transaction's commit or abort marker: it changes nothing,
		// but takes an offset, which a restore must pass to reach its
		// end.
		return state.Entry{}, -1, false, nil
	}
	if st.win == nil {
		ts := r.Timestamp.UnixMilli()
		if st.stamped && r.Value != nil {
			return state.Entry{Key: r.Key, Value: st.restoreValue(ts, r.Value)}, ts, true, nil
		}
		return state.Entry{Key: r.Key, Value: r.Value}, ts, true, nil
	}
	sk, marker, isMarker, err := st.win.restoreKey(nil, r.Key, r.Value)
	if err != nil || isMarker {
		return state.Entry{}, marker, false, err
	}
	return state.Entry{Key: sk, Value: r.Value}, -1, true, nil
}

// restoreArenaChunk is the size of the chunks restoreValue carves the
// restored rows of a timestamped store from: one allocation per chunk
// rather than one per record.
const restoreArenaChunk = 64 << 10

// restoreValue returns the pebble value of a timestamped store's changelog
// value vb, whose record has timestamp ts. It stays valid until the batch
// it goes into is applied (see restoredBatch): a full chunk is left to the
// entries that use it, never written again.
func (st *taskStore) restoreValue(ts int64, vb []byte) []byte {
	n := 8 + len(vb)
	if cap(st.arena)-len(st.arena) < n {
		st.arena = make([]byte, 0, max(restoreArenaChunk, n))
	}
	start := len(st.arena)
	st.arena = appendStamped(st.arena, ts, vb)
	return st.arena[start:len(st.arena):len(st.arena)]
}

// restoredBatch says the entries restoreValue made are applied: pebble
// copied them, so the last chunk is written over by the next batch.
func (st *taskStore) restoredBatch() { st.arena = st.arena[:0] }

// rebuildStore throws st's local state away and reopens it empty.
func (a *App) rebuildStore(id TaskID, st *taskStore) error {
	dir := st.db.Dir()
	if err := st.db.Close(); err != nil {
		return fmt.Errorf("closing store %q of task %s to rebuild it: %w", st.spec.name, id, err)
	}
	if err := state.Destroy(dir); err != nil {
		return fmt.Errorf("removing store %q of task %s: %w", st.spec.name, id, err)
	}
	fresh, err := a.openStore(st.spec, id)
	if err != nil {
		return err
	}
	st.db = fresh.db
	st.lastOffset.Store(-1)
	return nil
}
