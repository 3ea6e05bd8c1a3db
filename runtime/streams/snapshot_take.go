package streams

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/internal/snapshot"
	"github.com/braidstream/braid/runtime/internal/state"
)

// snapshotter takes and uploads the App's snapshots, one at a time, in a
// goroutine of its own: processing never waits for a checkpoint's flush,
// an upload or a prune. A commit offers it the stores that are due
// (offer), which queue, up to snapshotQueue of them, while another is
// taken; a store waits in the queue once at most.
type snapshotter struct {
	a      *App
	cfg    SnapshotConfig
	bucket *snapshot.Bucket
	// tmp holds the checkpoints being uploaded and the snapshots being
	// downloaded: under the App's state dir, so that pebble hard-links a
	// checkpoint's tables and a download moves into its store's
	// directory.
	tmp  string
	jobs chan snapshotJob

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// snapshotQueue bounds the stores waiting for their snapshot; one due
// when it is full is offered again at the next commit.
const snapshotQueue = 64

// snapshotJob is a store to snapshot.
type snapshotJob struct {
	task TaskID
	st   *taskStore
}

// storeSnapshots is a store's snapshot bookkeeping: when and at which
// changelog offset its last snapshot was taken (or the store opened), kept
// by the task's goroutine, and whether one is in flight, which the
// snapshot goroutine clears.
type storeSnapshots struct {
	at       time.Time
	offset   int64
	inFlight atomic.Bool
}

// startSnapshots opens the blob store and starts the snapshot goroutine,
// when Config.Snapshots is on; stopSnapshots stops it.
func (a *App) startSnapshots(ctx context.Context) error {
	cfg := a.cfg.Snapshots
	if !cfg.enabled() {
		return nil
	}
	bucket, err := snapshot.Open(ctx, cfg.URL)
	if err != nil {
		return err
	}
	tmp := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, "snapshots.tmp")
	// Left over from a crash: nothing in it is of use.
	if err := os.RemoveAll(tmp); err != nil {
		_ = bucket.Close()
		return fmt.Errorf("clearing %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		_ = bucket.Close()
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &snapshotter{a: a, cfg: cfg, bucket: bucket, tmp: tmp, jobs: make(chan snapshotJob, snapshotQueue), cancel: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx)
	}()
	a.snaps = s
	return nil
}

// stopSnapshots cuts an upload in flight short (it leaves no manifest, so
// no snapshot) and waits for the goroutine.
func (a *App) stopSnapshots() {
	s := a.snaps
	if s == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
	_ = s.bucket.Close()
	_ = os.RemoveAll(s.tmp)
	a.snaps = nil
}

// run takes the snapshots offered until ctx ends.
func (s *snapshotter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.jobs:
			s.take(ctx, j)
			j.st.snaps.inFlight.Store(false)
		}
	}
}

// offer hands store st of task t to the snapshot goroutine if it is due
// after a commit and the queue has room. The task's goroutine calls it.
func (s *snapshotter) offer(t *task, st *taskStore) {
	if !snapshotted(st) {
		return
	}
	ss := &st.snaps
	if ss.at.IsZero() {
		ss.at = time.Now() // opened: the interval counts from here
	}
	if ss.inFlight.Load() {
		return
	}
	offset := st.db.Checkpoint().ChangelogOffset
	due := time.Since(ss.at) >= s.cfg.Interval || (s.cfg.Records > 0 && offset-ss.offset >= s.cfg.Records)
	if !due {
		return
	}
	ss.inFlight.Store(true) // before the hand-off: the goroutine clears it
	select {
	case s.jobs <- snapshotJob{task: t.id, st: st}:
		ss.at, ss.offset = time.Now(), offset
	default: // the queue is full
		ss.inFlight.Store(false)
	}
}

// take snapshots one store and uploads it, then prunes the store's older
// snapshots, and reports the outcome. A store closed meanwhile (its task
// moved) is dropped without a word.
func (s *snapshotter) take(ctx context.Context, j snapshotJob) {
	began := time.Now()
	ev := SnapshotEvent{ApplicationID: s.a.cfg.ApplicationID, InstanceID: s.a.cfg.InstanceID, Task: j.task, Store: j.st.spec.name}
	dir := filepath.Join(s.tmp, fmt.Sprintf("take-%s-%s", j.task, j.st.spec.name))
	defer os.RemoveAll(dir)
	_ = os.RemoveAll(dir)
	meta, err := j.st.db.Snapshot(dir)
	if errors.Is(err, state.ErrClosed) {
		return
	}
	if err == nil {
		var m snapshot.Manifest
		m, err = s.bucket.Put(ctx, dir, s.manifest(j, meta), snapshot.PutOptions{BytesPerSecond: max(s.cfg.BytesPerSecond, 0)})
		ev.ID, ev.ChangelogOffset, ev.StreamTime, ev.Bytes, ev.Files = m.ID, m.ChangelogOffset, m.StreamTime, m.Bytes(), len(m.Files)
		if err == nil {
			ev.Pruned, err = s.bucket.Prune(ctx, m.Scope, s.cfg.Keep)
		}
	}
	if ctx.Err() != nil {
		return // stopping: the upload was cut short and left no snapshot
	}
	ev.Took, ev.Err = time.Since(began), err
	if err != nil {
		s.a.log.Warn("a store snapshot failed; restores use older snapshots or the changelog",
			"task", j.task.String(), "store", j.st.spec.name, "err", err)
	} else {
		s.a.log.Info("store snapshot taken", "task", j.task.String(), "store", j.st.spec.name,
			"id", ev.ID, "bytes", ev.Bytes, "took", ev.Took.Round(time.Millisecond))
	}
	for _, h := range s.a.hooks.snapshot {
		h.OnSnapshotTaken(ev)
	}
}

// scope is where the snapshots of task's store live in the blob store.
func (s *snapshotter) scope(task TaskID, store string) snapshot.Scope {
	return snapshot.Scope{Application: s.a.cfg.ApplicationID, Task: task.String(), Store: store}
}

// manifest describes a snapshot of j's store holding meta.
func (s *snapshotter) manifest(j snapshotJob, meta state.SnapshotMeta) snapshot.Manifest {
	return snapshot.Manifest{
		Scope:    s.scope(j.task, j.st.spec.name),
		Identity: meta.Identity, KeyLayout: meta.KeyLayout, FormatVersion: meta.FormatVersion,
		Changelog: j.st.changelog, Partition: j.st.partition,
		ChangelogOffset: meta.Checkpoint.ChangelogOffset, StreamTime: meta.Checkpoint.StreamTime,
	}
}
