package streams

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/state"
)

// cleanupApp is an App that never connects, with the state dir and
// cleanup delay of a test.
func cleanupApp(t *testing.T, delay time.Duration) *App {
	t.Helper()
	b := NewBuilder()
	b.Stream([]string{"clicks"}, WithSerdes(String, String)).GroupByKey().
		Count(Materialized(StoreOptions{Name: "counts"})).To("click-counts", WithSerdes(String, Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(topo, Config{ApplicationID: "tidy", Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(),
		StateCleanupDelay: delay, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// storeDir is the directory of task id's store "counts".
func storeDir(a *App, id TaskID) string {
	return filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, id.String(), "counts")
}

// openCounts opens task id's pebble store as the App would.
func openCounts(t *testing.T, a *App, id TaskID) *state.Store {
	t.Helper()
	db, err := state.Open(state.Options{Dir: storeDir(a, id), Identity: "tidy/" + id.String() + "/counts"})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// writeCounts leaves a store with one row on disk.
func writeCounts(t *testing.T, a *App, id TaskID) {
	t.Helper()
	db := openCounts(t, a, id)
	if err := db.Put([]byte("user"), []byte("7")); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(state.Checkpoint{ChangelogOffset: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func taskDirExists(t *testing.T, a *App, id TaskID) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, id.String()))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestStateCleanupKeepsWhatWasOwnedWithinTheDelay runs the check at
// chosen times on real pebble directories: a task directory goes only
// once it has been unowned for longer than the delay, never while its
// task is owned or its store open, and a task that comes back finds its
// state.
func TestStateCleanupKeepsWhatWasOwnedWithinTheDelay(t *testing.T) {
	const delay = time.Minute
	a := cleanupApp(t, delay)
	gone, owned, open, touched := TaskID{0, 0}, TaskID{0, 1}, TaskID{0, 2}, TaskID{0, 3}
	for _, id := range []TaskID{gone, owned, open, touched} {
		writeCounts(t, a, id)
	}
	t0 := time.Now()
	a.startCleanup(t0)
	a.onDisk[gone] = 1
	a.suspended[owned] = &task{id: owned}
	held := openCounts(t, a, open) // open but not owned: a store being handed over
	a.released(touched, t0.Add(delay))

	a.cleanStateDirs(t0.Add(delay / 2))
	for _, id := range []TaskID{gone, owned, open, touched} {
		if !taskDirExists(t, a, id) {
			t.Fatalf("task %s deleted half a delay after the start", id)
		}
	}

	a.cleanStateDirs(t0.Add(delay + time.Millisecond))
	if taskDirExists(t, a, gone) {
		t.Errorf("task %s kept though unowned for longer than the delay", gone)
	}
	if _, ok := a.onDisk[gone]; ok {
		t.Errorf("task %s still told to the assignor as held on disk", gone)
	}
	for _, id := range []TaskID{owned, open, touched} {
		if !taskDirExists(t, a, id) {
			t.Errorf("task %s deleted: it is owned, open or was owned within the delay", id)
		}
	}
	if n := a.Stats().StateDirsCleaned; n != 1 {
		t.Errorf("StateDirsCleaned = %d, want 1", n)
	}

	// The owned task comes back as an active: its store is reused.
	db := openCounts(t, a, owned)
	if v, ok, err := db.Get([]byte("user")); err != nil || !ok || string(v) != "7" {
		t.Errorf("owned task's row = %q, %v, %v; want its state kept", v, ok, err)
	}
	if cp := db.Checkpoint().ChangelogOffset; cp != 1 {
		t.Errorf("owned task's checkpoint = %d, want 1", cp)
	}
	db.Close()

	held.Close()
	a.cleanStateDirs(t0.Add(2*delay + 2*time.Millisecond))
	for _, id := range []TaskID{open, touched} {
		if taskDirExists(t, a, id) {
			t.Errorf("task %s kept though closed and unowned for longer than the delay", id)
		}
	}
	if !taskDirExists(t, a, owned) {
		t.Errorf("task %s deleted while owned", owned)
	}
	if n := a.Stats().StateDirsCleaned; n != 3 {
		t.Errorf("StateDirsCleaned = %d, want 3", n)
	}
}

// TestStateCleanupDisabledKeepsEverything checks StateCleanupDisabled:
// no check is ever due.
func TestStateCleanupDisabledKeepsEverything(t *testing.T) {
	a := cleanupApp(t, StateCleanupDisabled)
	writeCounts(t, a, TaskID{0, 0})
	a.startCleanup(time.Now())
	if w := a.cleanupWake(); !w.IsZero() {
		t.Fatalf("a check is due at %v with cleanup disabled", w)
	}
	a.maybeCleanStateDirs(time.Now().Add(time.Hour))
	if !taskDirExists(t, a, TaskID{0, 0}) {
		t.Error("task dir deleted with cleanup disabled")
	}
}
