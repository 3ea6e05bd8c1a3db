package streams

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A new standby or warm-up replica whose stores hold nothing starts them
// from snapshots too (Config.Snapshots), as an active's restore does: a
// warm-up placed on a new instance fills in the time of a download rather
// than of its whole changelog, and can take its task over sooner.
//
// The download runs without the follower's lock: the processing
// goroutine releases replicas under it in rebalances, and must never wait
// for a blob store. Meanwhile the replicas stay in pending, where a
// release finds them as it finds any replica not started yet, and takes
// them with their stores as they are (empty: their new owner restores
// them). Loading a download into a store is quick, and happens under the
// lock, for the replicas still pending only.

// replicaWant is a store of a new replica that may start from a snapshot.
type replicaWant struct {
	snapshotWant
	sb *standbyTask
}

// loadSnapshotsLocked starts the empty stores of the replicas opened from
// snapshots, and returns the replicas still to add: those no release took
// while it downloaded without mu. The caller holds mu, which it gives up
// during the downloads.
func (s *standbys) loadSnapshotsLocked(ctx context.Context, opened []*standbyTask, ends kadm.ListedOffsets) []*standbyTask {
	snaps := s.app.snaps
	if snaps == nil {
		return opened
	}
	wants := s.snapshotWants(ctx, opened, ends)
	if len(wants) == 0 {
		return opened
	}
	s.pending = append(slices.Clone(opened), s.pending...)
	s.mu.Unlock()
	fetched := make([]*fetchedSnapshot, len(wants))
	for i, w := range wants {
		fetched[i], _ = snaps.fetchNewest(ctx, w.snapshotWant)
	}
	s.mu.Lock()
	still := opened[:0:0]
	for _, sb := range opened {
		if i := slices.Index(s.pending, sb); i >= 0 {
			s.pending = slices.Delete(s.pending, i, i+1)
			still = append(still, sb)
		}
	}
	for i, w := range wants {
		s.loadReplicaStore(w, fetched[i], slices.Contains(still, w.sb))
	}
	return still
}

// snapshotWants lists the stores of opened that hold nothing while their
// changelogs hold something, with their log starts.
func (s *standbys) snapshotWants(ctx context.Context, opened []*standbyTask, ends kadm.ListedOffsets) []replicaWant {
	var wants []replicaWant
	var stores []*taskStore
	for _, sb := range opened {
		for _, st := range sb.stores {
			if !snapshotted(st) || st.db.Checkpoint().ChangelogOffset != 0 {
				continue
			}
			if end, ok := ends.Lookup(st.changelog, st.partition); ok && end.Offset > 0 {
				wants = append(wants, replicaWant{snapshotWant: snapshotWant{task: sb.id, st: st, end: end.Offset}, sb: sb})
				stores = append(stores, st)
			}
		}
	}
	if len(wants) == 0 {
		return nil
	}
	logStarts := s.app.snaps.logStarts(ctx, kadm.NewClient(s.client), wants[0].task, stores)
	kept := wants[:0]
	for _, w := range wants {
		if start, ok := logStarts[w.st.changelog]; ok {
			w.logStart = start
			kept = append(kept, w)
		}
	}
	return kept
}

// loadReplicaStore loads a replica store's fetched snapshot, when there is
// one and the replica is still to start, and drops the download
// otherwise.
func (s *standbys) loadReplicaStore(w replicaWant, f *fetchedSnapshot, starting bool) {
	if f == nil {
		return
	}
	if !starting {
		f.discard()
		return
	}
	used, err := s.app.snaps.loadFetched(w.st, f)
	if err != nil {
		s.app.log.Warn("loading a store snapshot into a replica failed; it follows the whole changelog",
			"task", w.task.String(), "store", w.st.spec.name, "err", err)
		return
	}
	w.st.loadedFrom = used
	s.app.log.Info("replica store loaded from a snapshot", "task", w.task.String(), "store", w.st.spec.name,
		"id", used.ID, "bytes", used.Bytes, "changelog_from", used.Offset)
}
