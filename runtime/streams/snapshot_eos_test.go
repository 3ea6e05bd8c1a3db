package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestExactlyOnceCrashPointsRestoreFromSnapshots crashes an exactly-once
// instance that takes snapshots at each crash point of a commit, then
// starts it again on an empty state dir: its stores load the newest
// snapshots and replay only the changelog after them, and the outputs,
// read committed, still hold every count and window result exactly once.
// A snapshot holds only what a committed transaction wrote, so none may
// be refused, and none may add or lose a count.
func TestExactlyOnceCrashPointsRestoreFromSnapshots(t *testing.T) {
	skipShort(t, "crashes an instance at every commit point")
	for _, point := range []string{streams.CrashBeforeCommit, streams.CrashAfterCommit, streams.CrashDuringApply} {
		t.Run(point, func(t *testing.T) {
			b := startEOSBroker(t)
			blob := "file://" + t.TempDir()
			// The record cache leaves a changelog record per key per
			// commit: a snapshot every 5 of them comes every few commits.
			snaps := streams.SnapshotConfig{URL: blob, Records: 5, Interval: time.Hour}
			tr := newEOSTruth()
			tr.produce(t, b, 1000)

			sl := &snapshotLog{}
			cfg := eosConfig(b, t.TempDir(), sl)
			cfg.Snapshots = snaps
			first, err := streams.New(eosTopology(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			arm := crashAtNextCommit(first, point)
			done := make(chan error, 1)
			go func() { done <- first.Run(context.Background()) }()
			processedAll(t, b)
			waitFor(t, time.Minute, "a snapshot of every store", func() bool { return sl.stores() == 2*eosPartitions })
			arm()
			tr.produce(t, b, 1000)
			awaitCrash(t, done)
			if f := sl.failed(); len(f) > 0 {
				t.Fatalf("a snapshot failed: %v", f[0].Err)
			}
			cfg = eosConfig(b, t.TempDir())
			cfg.Snapshots = snaps
			starts, _ := runAfterCrash(t, b, tr, cfg)
			fromSnapshot := 0
			for _, ev := range starts {
				if len(ev.Skipped) > 0 {
					t.Errorf("store %s of task %s skipped snapshots of committed state: %+v", ev.Store, ev.Task, ev.Skipped)
				}
				if ev.Snapshot != nil {
					fromSnapshot++
					t.Logf("store %s of task %s: snapshot %s at offset %d, changelog to %d", ev.Store, ev.Task, ev.Snapshot.ID, ev.StartOffset, ev.EndOffset)
				}
			}
			if fromSnapshot != len(starts) || fromSnapshot == 0 {
				t.Fatalf("%d of %d store restores started from a snapshot, want all", fromSnapshot, len(starts))
			}
		})
	}
}
