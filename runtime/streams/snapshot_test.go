package streams_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/snapshot/s3test"
	"github.com/braidstream/braid/runtime/streams"
)

// snapshotLog keeps the snapshots an App took.
type snapshotLog struct {
	mu    sync.Mutex
	taken []streams.SnapshotEvent
}

func (l *snapshotLog) OnSnapshotTaken(e streams.SnapshotEvent) {
	l.mu.Lock()
	l.taken = append(l.taken, e)
	l.mu.Unlock()
}

// newest returns the newest snapshot taken without error.
func (l *snapshotLog) newest() (streams.SnapshotEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.taken) - 1; i >= 0; i-- {
		if l.taken[i].Err == nil {
			return l.taken[i], true
		}
	}
	return streams.SnapshotEvent{}, false
}

// stores counts the stores with a snapshot taken without error.
func (l *snapshotLog) stores() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, e := range l.taken {
		if e.Err == nil {
			seen[e.Task.String()+"/"+e.Store] = true
		}
	}
	return len(seen)
}

func (l *snapshotLog) failed() []streams.SnapshotEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []streams.SnapshotEvent
	for _, e := range l.taken {
		if e.Err != nil {
			out = append(out, e)
		}
	}
	return out
}

// snapshotRun counts users with snapshots on, then crashes the only
// instance and wipes its disk after damage (which may do nothing) was
// done to the blob store, and returns the wiped store's restore. Every
// count is checked after the restore, whatever it started from.
//
// The count is uncached, so the changelog has a record per click: 30,000
// before the tail (20,000 users, the first 10,000 twice), so that with a
// snapshot due every 5,000 changelog records one reaches past 25,000;
// then a tail of 3,000 (2,000 second clicks of users the snapshot holds,
// 1,000 new users), too few for another.
func snapshotRun(t *testing.T, damage func(t *testing.T, blobDir string)) (start, end streams.RestoreEvent) {
	blobDir := t.TempDir()
	return snapshotRunAt(t, "file://"+blobDir, func(t *testing.T) { damage(t, blobDir) })
}

// snapshotRunAt is snapshotRun with the blob store at url.
func snapshotRunAt(t *testing.T, url string, damage func(t *testing.T)) (start, end streams.RestoreEvent) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	rl, sl := &restoreLog{}, &snapshotLog{}
	cfg := testConfig(b, "snap")
	cfg.StateDir = t.TempDir()
	cfg.Hooks = []streams.Hook{rl, sl}
	cfg.Snapshots = streams.SnapshotConfig{URL: url, Records: 5_000, Interval: time.Hour}
	sup := runSupervisor(t, countTopology(t, false), cfg, 1)
	clicks := func(from, to int) { produceUsers(t, b, from, to) }
	want := func(i int) int64 {
		if i < 12_000 {
			return 2
		}
		return 1
	}
	counted := func() bool {
		for i := 0; i < 21_000; i += 499 {
			if v, ok, err := sup.Get("clicks-per-user", fmt.Sprintf("user-%06d", i)); err != nil || !ok || v.(int64) != want(i) {
				return false
			}
		}
		v, ok, err := sup.Get("clicks-per-user", "user-020999")
		return err == nil && ok && v.(int64) == 1
	}
	clicks(0, 20_000)
	clicks(0, 10_000)
	waitFor(t, 2*time.Minute, "a snapshot past changelog offset 25,000", func() bool {
		e, ok := sl.newest()
		return ok && e.ChangelogOffset >= 25_000
	})
	clicks(10_000, 12_000)
	clicks(20_000, 21_000)
	waitFor(t, 2*time.Minute, "every user counted", counted)
	changelog := "snap-clicks-per-user-changelog"
	waitFor(t, time.Minute, "every count in the changelog", func() bool {
		return endOffsets(t, b, changelog)[0] >= 33_000
	})
	if f := sl.failed(); len(f) > 0 {
		t.Fatalf("snapshots failed: %v", f[0].Err)
	}
	damage(t)
	if err := sup.CrashAndWipe("instance-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the restore's end", func() bool { return rl.ended() == 1 })
	waitFor(t, time.Minute, "every user counted again", counted)
	starts, _, ends := rl.snapshot()
	return starts[0], ends[0]
}

// TestRestoreFromSnapshotReplaysOnlyTheTail: a wiped instance loads the
// newest snapshot and replays only the changelog after it, and ends with
// every count the input makes; with the snapshots in a directory, and in
// an S3-compatible store on loopback.
func TestRestoreFromSnapshotReplaysOnlyTheTail(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		start, end := snapshotRun(t, func(*testing.T, string) {})
		checkTailRestore(t, start, end)
	})
	t.Run("s3", func(t *testing.T) {
		start, end := snapshotRunAt(t, s3test.Bucket(t), func(*testing.T) {})
		checkTailRestore(t, start, end)
	})
}

func checkTailRestore(t *testing.T, start, end streams.RestoreEvent) {
	if start.Snapshot == nil {
		t.Fatalf("the restore did not use a snapshot (skipped: %+v)", start.Skipped)
	}
	if start.StartOffset != start.Snapshot.Offset || start.StartOffset == 0 {
		t.Fatalf("restore started at %d, the snapshot reaches %d", start.StartOffset, start.Snapshot.Offset)
	}
	if end.Restored != end.EndOffset-start.StartOffset {
		t.Errorf("restored %d records, want the tail's %d (%d to %d)", end.Restored, end.EndOffset-start.StartOffset, start.StartOffset, end.EndOffset)
	}
	if end.Restored >= end.EndOffset/2 {
		t.Errorf("restored %d of %d changelog records: the snapshot saved little", end.Restored, end.EndOffset)
	}
	t.Logf("snapshot %s: %d bytes in %d files loaded in %v; then %d changelog records of %d",
		start.Snapshot.ID, start.Snapshot.Bytes, start.Snapshot.Files, start.Snapshot.Took, end.Restored, end.EndOffset)
}

// TestDamagedSnapshotsFallBackToTheChangelog: with every snapshot's
// tables corrupted, the restore skips each, saying why, and restores the
// whole changelog, right.
func TestDamagedSnapshotsFallBackToTheChangelog(t *testing.T) {
	start, end := snapshotRun(t, func(t *testing.T, blobDir string) {
		n := 0
		err := filepath.WalkDir(blobDir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sst") {
				return err
			}
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			body[len(body)/2] ^= 0xff
			n++
			return os.WriteFile(path, body, 0o644)
		})
		if err != nil || n == 0 {
			t.Fatalf("corrupting the snapshots' tables: %d corrupted, %v", n, err)
		}
	})
	if start.Snapshot != nil {
		t.Fatalf("the restore used snapshot %s, whose tables were corrupted", start.Snapshot.ID)
	}
	if len(start.Skipped) == 0 || !strings.Contains(start.Skipped[0].Reason, "checksum differs") {
		t.Fatalf("skipped %+v, want the corrupted snapshots skipped for their checksums", start.Skipped)
	}
	if start.StartOffset != 0 || end.Restored != end.EndOffset {
		t.Errorf("restored %d records from %d, want the whole changelog's %d", end.Restored, start.StartOffset, end.EndOffset)
	}
}
