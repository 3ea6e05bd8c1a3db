package streams

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/braidstream/braid/runtime/internal/snapshot"
	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kadm"
)

// restore loads, into each store of a task's restore that holds nothing
// (a new instance, a wiped or rebuilt store), the newest snapshot it can
// trust, so that the changelog is replayed only past it. It runs in the
// restore's goroutine, which owns the stores until the task starts. It
// returns the restores still to replay; those the snapshot brought to
// their changelog's end are finished, their events sent. Any trouble
// leaves a store as it was, restored from the changelog: a snapshot
// never fails a restore.
func (s *snapshotter) restore(ctx context.Context, t *task, stores []*storeRestore) []*storeRestore {
	logStarts := s.logStarts(ctx, t, stores)
	left := stores[:0:0]
	for _, sr := range stores {
		if logStart, ok := logStarts[sr.store.changelog]; ok && sr.start == 0 && !(sr.store.win != nil && sr.store.win.mem != nil) {
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

// logStarts lists the log start offsets of the stores' changelog
// partitions: a snapshot older than its changelog's log start cannot be
// brought forward. None, when they cannot be listed.
func (s *snapshotter) logStarts(ctx context.Context, t *task, stores []*storeRestore) map[string]int64 {
	topics := make([]string, 0, len(stores))
	for _, sr := range stores {
		topics = append(topics, sr.store.changelog)
	}
	lctx, cancel := context.WithTimeout(ctx, s.a.brokerTimeout())
	defer cancel()
	listed, err := kadm.NewClient(s.a.kc()).ListStartOffsets(lctx, topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		s.a.log.Warn("listing changelog start offsets for snapshots failed; restoring from the changelog",
			"task", t.id.String(), "err", err)
		return nil
	}
	starts := make(map[string]int64, len(stores))
	for _, sr := range stores {
		if o, ok := listed.Lookup(sr.store.changelog, sr.store.partition); ok {
			starts[sr.store.changelog] = o.Offset
		}
	}
	return starts
}

// load tries the snapshots of sr's store, newest first, and loads the
// first that fits its changelog and passes every check, recording what it
// used and what it skipped in sr.
func (s *snapshotter) load(ctx context.Context, t *task, sr *storeRestore, logStart int64) {
	scope := s.scope(t.id, sr.store.spec.name)
	list, bad, err := s.bucket.List(ctx, scope)
	if err != nil {
		s.a.log.Warn("listing store snapshots failed; restoring from the changelog", "task", t.id.String(), "store", scope.Store, "err", err)
		return
	}
	for _, b := range bad {
		s.skip(t, sr, b.ID, b.Error())
	}
	for _, m := range list {
		if reason := s.unfit(sr, m, logStart); reason != "" {
			s.skip(t, sr, m.ID, reason)
			continue
		}
		began := time.Now()
		cp, err := s.fetchAndLoad(ctx, sr.store, m)
		if err != nil {
			s.skip(t, sr, m.ID, err.Error())
			continue
		}
		sr.start = cp.ChangelogOffset
		sr.snapshot = &SnapshotRestore{ID: m.ID, TakenAt: m.TakenAt, Offset: cp.ChangelogOffset,
			Bytes: m.Bytes(), Files: len(m.Files), Took: time.Since(began)}
		s.a.log.Info("store loaded from a snapshot", "task", t.id.String(), "store", scope.Store, "id", m.ID,
			"bytes", m.Bytes(), "took", sr.snapshot.Took.Round(time.Millisecond), "changelog_from", sr.start, "changelog_to", sr.end)
		return
	}
}

// unfit says why snapshot m cannot start sr's restore, or "".
func (s *snapshotter) unfit(sr *storeRestore, m snapshot.Manifest, logStart int64) string {
	switch {
	case m.Changelog != sr.store.changelog || m.Partition != sr.store.partition:
		return fmt.Sprintf("of changelog %s/%d, not %s/%d", m.Changelog, m.Partition, sr.store.changelog, sr.store.partition)
	case m.FormatVersion != state.FormatVersion():
		return fmt.Sprintf("store format %d, not %d", m.FormatVersion, state.FormatVersion())
	case m.ChangelogOffset > sr.end:
		// Under exactly-once the end is the last stable offset: the
		// snapshot would hold what no committed record says.
		return fmt.Sprintf("reaches changelog offset %d, past its end %d", m.ChangelogOffset, sr.end)
	case m.ChangelogOffset < logStart:
		return fmt.Sprintf("reaches changelog offset %d, before its log start %d: the records in between are gone", m.ChangelogOffset, logStart)
	case m.ChangelogOffset <= sr.start:
		return fmt.Sprintf("reaches changelog offset %d, no further than the store's own %d", m.ChangelogOffset, sr.start)
	}
	return ""
}

// fetchAndLoad downloads snapshot m, verifies it and loads it into st.
func (s *snapshotter) fetchAndLoad(ctx context.Context, st *taskStore, m snapshot.Manifest) (state.Checkpoint, error) {
	dir := filepath.Join(s.tmp, fmt.Sprintf("load-%s-%s", m.Task, m.Store))
	_ = os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	if err := s.bucket.Fetch(ctx, m, dir); err != nil {
		return state.Checkpoint{}, err
	}
	cp, err := st.db.LoadSnapshot(dir)
	if err != nil {
		var mismatch *state.SnapshotMismatchError
		if errors.As(err, &mismatch) {
			return state.Checkpoint{}, errors.New(mismatch.Reason)
		}
		return state.Checkpoint{}, err
	}
	if st.win != nil {
		if err := st.loadSegments(); err != nil {
			return state.Checkpoint{}, err
		}
	}
	st.snaps.at, st.snaps.offset = m.TakenAt, cp.ChangelogOffset
	return cp, nil
}

// skip records that sr's restore did not use snapshot id, and why.
func (s *snapshotter) skip(t *task, sr *storeRestore, id, reason string) {
	sr.skipped = append(sr.skipped, SnapshotSkip{ID: id, Reason: reason})
	s.a.log.Warn("store snapshot skipped", "task", t.id.String(), "store", sr.store.spec.name, "id", id, "reason", reason)
}
