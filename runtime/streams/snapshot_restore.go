package streams

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/internal/snapshot"
	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Using a snapshot is two steps, so that a replica's follower can take
// the slow one without its lock (replica_snapshot.go): fetchNewest
// downloads and verifies the newest snapshot that fits a store, touching
// only a directory of its own; loadFetched moves it into the store, which
// takes a moment.

// snapshotWant is a store that may start from a snapshot: it holds
// nothing (checkpoint 0) and its changelog runs from logStart to end.
type snapshotWant struct {
	task          TaskID
	st            *taskStore
	logStart, end int64
}

// fetchedSnapshot is a snapshot downloaded and verified into dir.
type fetchedSnapshot struct {
	m    snapshot.Manifest
	dir  string
	took time.Duration
}

// fetchSeq numbers the download directories, which must not collide when
// an active's restore and a replica's follower download at once.
var fetchSeq atomic.Int64

// fetchNewest downloads the newest snapshot that fits w's store, trying
// older ones when one fails its checks, and returns it with the snapshots
// it skipped and why; nil when none fits.
func (s *snapshotter) fetchNewest(ctx context.Context, w snapshotWant) (*fetchedSnapshot, []SnapshotSkip) {
	scope := s.scope(w.task, w.st.spec.name)
	list, bad, err := s.bucket.List(ctx, scope)
	if err != nil {
		s.a.log.Warn("listing store snapshots failed; restoring from the changelog", "task", w.task.String(), "store", scope.Store, "err", err)
		return nil, nil
	}
	var skipped []SnapshotSkip
	skip := func(id, reason string) {
		skipped = append(skipped, SnapshotSkip{ID: id, Reason: reason})
		s.a.log.Warn("store snapshot skipped", "task", w.task.String(), "store", scope.Store, "id", id, "reason", reason)
	}
	for _, b := range bad {
		skip(b.ID, b.Error())
	}
	for _, m := range list {
		if reason := unfit(w, m); reason != "" {
			skip(m.ID, reason)
			continue
		}
		began := time.Now()
		dir := filepath.Join(s.tmp, fmt.Sprintf("load-%d", fetchSeq.Add(1)))
		if err := s.bucket.Fetch(ctx, m, dir); err != nil {
			skip(m.ID, err.Error())
			continue
		}
		return &fetchedSnapshot{m: m, dir: dir, took: time.Since(began)}, skipped
	}
	return nil, skipped
}

// unfit says why snapshot m cannot start w's store, or "".
func unfit(w snapshotWant, m snapshot.Manifest) string {
	st := w.st
	switch {
	case m.Changelog != st.changelog || m.Partition != st.partition:
		return fmt.Sprintf("of changelog %s/%d, not %s/%d", m.Changelog, m.Partition, st.changelog, st.partition)
	case m.Identity != st.db.Identity():
		return fmt.Sprintf("of store %q, not %q", m.Identity, st.db.Identity())
	case m.KeyLayout != st.db.KeyLayout():
		return fmt.Sprintf("keys laid out as %q, not %q", m.KeyLayout, st.db.KeyLayout())
	case m.FormatVersion != state.FormatVersion():
		return fmt.Sprintf("store format %d, not %d", m.FormatVersion, state.FormatVersion())
	case m.ChangelogOffset > w.end:
		// Under exactly-once the end is the last stable offset: the
		// snapshot would hold what no committed record says.
		return fmt.Sprintf("reaches changelog offset %d, past its end %d", m.ChangelogOffset, w.end)
	case m.ChangelogOffset < w.logStart:
		return fmt.Sprintf("reaches changelog offset %d, before its log start %d: the records in between are gone", m.ChangelogOffset, w.logStart)
	case m.ChangelogOffset == 0:
		return "holds nothing"
	}
	return ""
}

// loadFetched moves a fetched snapshot into st and returns what the
// store's restore reports of it; the download's directory is gone
// afterwards, loaded or not.
func (s *snapshotter) loadFetched(st *taskStore, f *fetchedSnapshot) (*SnapshotRestore, error) {
	defer os.RemoveAll(f.dir)
	began := time.Now()
	cp, err := st.db.LoadSnapshot(f.dir)
	if err != nil {
		return nil, err
	}
	if st.win != nil {
		if err := st.loadSegments(); err != nil {
			return nil, err
		}
	}
	st.snaps.at, st.snaps.offset = f.m.TakenAt, cp.ChangelogOffset
	return &SnapshotRestore{ID: f.m.ID, TakenAt: f.m.TakenAt, Offset: cp.ChangelogOffset,
		Bytes: f.m.Bytes(), Files: len(f.m.Files), Took: f.took + time.Since(began)}, nil
}

// discard drops a fetched snapshot that will not be loaded.
func (f *fetchedSnapshot) discard() { _ = os.RemoveAll(f.dir) }

// restore loads, into each store of a task's restore that holds nothing
// (a new instance, a wiped or rebuilt store), the newest snapshot it can
// trust, so that the changelog is replayed only past it. It runs in the
// restore's goroutine, which owns the stores until the task starts. It
// returns the restores still to replay; those the snapshot brought to
// their changelog's end are finished, their events sent. Any trouble
// leaves a store as it was, restored from the changelog: a snapshot
// never fails a restore.
func (s *snapshotter) restore(ctx context.Context, t *task, stores []*storeRestore) []*storeRestore {
	logStarts := s.logStarts(ctx, kadm.NewClient(s.a.kc()), t.id, storesOf(stores))
	left := stores[:0:0]
	for _, sr := range stores {
		if logStart, ok := logStarts[sr.store.changelog]; ok && sr.start == 0 && snapshotted(sr.store) {
			s.load(ctx, t, sr, logStart)
		}
		if sr.start < sr.end {
			left = append(left, sr)
			continue
		}
		sr.next, sr.began = sr.end, time.Now()
		sr.store.lastOffset.Store(sr.end - 1)
		sr.store.restored = 0
		s.a.restoreEvent(t, sr, "start")
		s.a.restoreEvent(t, sr, "end")
	}
	return left
}

// load fetches and loads the newest snapshot that fits sr's store,
// recording in sr what it used and what it skipped.
func (s *snapshotter) load(ctx context.Context, t *task, sr *storeRestore, logStart int64) {
	f, skipped := s.fetchNewest(ctx, snapshotWant{task: t.id, st: sr.store, logStart: logStart, end: sr.end})
	sr.skipped = skipped
	if f == nil {
		return
	}
	used, err := s.loadFetched(sr.store, f)
	if err != nil {
		sr.skipped = append(sr.skipped, SnapshotSkip{ID: f.m.ID, Reason: err.Error()})
		s.a.log.Warn("loading a store snapshot failed; restoring from the changelog", "task", t.id.String(), "store", sr.store.spec.name, "err", err)
		return
	}
	sr.start, sr.snapshot = used.Offset, used
	s.a.log.Info("store loaded from a snapshot", "task", t.id.String(), "store", sr.store.spec.name, "id", used.ID,
		"bytes", used.Bytes, "took", used.Took.Round(time.Millisecond), "changelog_from", sr.start, "changelog_to", sr.end)
}

// snapshotted reports whether st is a store snapshots are taken of: one
// with a changelog to replay the rest from, whose data lives in pebble (a
// join buffer lives in memory).
func snapshotted(st *taskStore) bool {
	return st.changelog != "" && !(st.win != nil && st.win.mem != nil)
}

func storesOf(srs []*storeRestore) []*taskStore {
	out := make([]*taskStore, len(srs))
	for i, sr := range srs {
		out[i] = sr.store
	}
	return out
}

// logStarts lists the log start offsets of the stores' changelog
// partitions: a snapshot older than its changelog's log start cannot be
// brought forward. None, when they cannot be listed.
func (s *snapshotter) logStarts(ctx context.Context, adm *kadm.Client, task TaskID, stores []*taskStore) map[string]int64 {
	topics := make([]string, 0, len(stores))
	for _, st := range stores {
		topics = append(topics, st.changelog)
	}
	lctx, cancel := context.WithTimeout(ctx, s.a.brokerTimeout())
	defer cancel()
	listed, err := adm.ListStartOffsets(lctx, topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		s.a.log.Warn("listing changelog start offsets for snapshots failed; restoring from the changelog",
			"task", task.String(), "err", err)
		return nil
	}
	starts := make(map[string]int64, len(stores))
	for _, st := range stores {
		if o, ok := listed.Lookup(st.changelog, st.partition); ok {
			starts[st.changelog] = o.Offset
		}
	}
	return starts
}
