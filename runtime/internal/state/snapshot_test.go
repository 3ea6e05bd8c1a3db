package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// copyDir copies the regular files of src into dst, as a download of a
// snapshot would.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotHoldsCommittedDataOnly(t *testing.T) {
	for _, logged := range []bool{true, false} {
		t.Run(fmt.Sprintf("logged=%v", logged), func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, filepath.Join(root, "live"), func(o *Options) { o.Logged, o.KeyLayout = logged, "v2" })
			put(t, s, "a", "1", "b", "2")
			commit(t, s, 40, 1000)
			put(t, s, "c", "pending")

			snap := filepath.Join(root, "snap")
			m, err := s.Snapshot(snap)
			if err != nil {
				t.Fatal(err)
			}
			want := SnapshotMeta{Identity: testID, KeyLayout: "v2", FormatVersion: FormatVersion(),
				Checkpoint: Checkpoint{ChangelogOffset: 40, StreamTime: 1000}}
			if m != want {
				t.Fatalf("Snapshot = %+v, want %+v", m, want)
			}

			fresh := filepath.Join(root, "fresh")
			copyDir(t, snap, fresh)
			r := openStore(t, fresh, func(o *Options) { o.Logged, o.KeyLayout = logged, "v2" })
			if r.Rebuilt() != "" {
				t.Fatalf("store opened on a snapshot was rebuilt: %s", r.Rebuilt())
			}
			if cp := r.Checkpoint(); cp != want.Checkpoint {
				t.Errorf("checkpoint = %+v, want %+v", cp, want.Checkpoint)
			}
			if got := dump(t, func(fn func(k, v []byte) bool) error { return r.Range(nil, nil, fn) }); got != "a=1 b=2" {
				t.Errorf("data = %q, want the committed a=1 b=2", got)
			}
		})
	}
}

// TestSnapshotBesideCommits takes snapshots while the store commits from
// another goroutine; each commit writes its own offset as the value of "n",
// so a snapshot whose data and checkpoint came from different commits shows
// at once.
func TestSnapshotBesideCommits(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, filepath.Join(root, "live"), func(o *Options) { o.Logged = true })
	done := make(chan error)
	stop := make(chan struct{})
	first := make(chan struct{})
	go func() {
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := s.Put([]byte("n"), []byte(strconv.FormatInt(i, 10))); err != nil {
				done <- err
				return
			}
			if err := s.Put([]byte(fmt.Sprintf("k%06d", i)), make([]byte, 512)); err != nil {
				done <- err
				return
			}
			if err := s.Commit(Checkpoint{ChangelogOffset: i, StreamTime: i}); err != nil {
				done <- err
				return
			}
			if i == 1 {
				close(first)
			}
		}
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("committing: %v", err)
	}
	var seen []int64
	for i := range 4 {
		snap := filepath.Join(root, fmt.Sprint("snap", i))
		m, err := s.Snapshot(snap)
		if err != nil {
			close(stop)
			t.Fatal(err)
		}
		fresh := filepath.Join(root, fmt.Sprint("fresh", i))
		copyDir(t, snap, fresh)
		r := openStore(t, fresh, func(o *Options) { o.Logged = true })
		n := m.Checkpoint.ChangelogOffset
		if got := get(t, r, "n"); got != strconv.FormatInt(n, 10) {
			t.Errorf("snapshot %d: checkpoint offset %d but n=%s", i, n, got)
		}
		seen = append(seen, n)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot offsets: %v", seen)
}

func TestSnapshotOfAnotherStoreIsRebuilt(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, filepath.Join(root, "live"))
	put(t, s, "a", "1")
	commit(t, s, 3, 7)
	snap := filepath.Join(root, "snap")
	if _, err := s.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	copyDir(t, snap, other)
	r := openStore(t, other, func(o *Options) { o.Identity = "app/0_1/other" })
	if r.Rebuilt() == "" {
		t.Fatal("a store opened on another store's snapshot was not rebuilt")
	}
}

func TestReadSnapshotRejectsWhatIsNotOne(t *testing.T) {
	empty := t.TempDir()
	if _, err := ReadSnapshot(empty); err == nil {
		t.Error("ReadSnapshot of an empty directory succeeded")
	}
	// A pebble database without a store's metadata.
	raw := filepath.Join(t.TempDir(), "raw")
	rawPebble(t, raw, func(db *pebble.DB) { _ = db.Set([]byte("x"), []byte("y"), nil) })
	if _, err := ReadSnapshot(raw); !errors.Is(err, ErrNoSnapshotMeta) {
		t.Errorf("ReadSnapshot of a bare pebble database = %v, want ErrNoSnapshotMeta", err)
	}
}

func TestLoadSnapshotReplacesTheStore(t *testing.T) {
	root := t.TempDir()
	a := openStore(t, filepath.Join(root, "a"), func(o *Options) { o.Logged = true })
	put(t, a, "a", "1", "b", "2")
	commit(t, a, 40, 1000)
	snap := filepath.Join(root, "snap")
	if _, err := a.Snapshot(snap); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(root, "b")
	b := openStore(t, dir, func(o *Options) { o.Logged = true })
	put(t, b, "stale", "x")
	commit(t, b, 3, 3)
	put(t, b, "pending", "y")
	cp, err := b.LoadSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := Checkpoint{ChangelogOffset: 40, StreamTime: 1000}
	if cp != want || b.Checkpoint() != want {
		t.Fatalf("LoadSnapshot = %+v, Checkpoint() = %+v, want %+v", cp, b.Checkpoint(), want)
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return b.Range(nil, nil, fn) }); got != "a=1 b=2" {
		t.Fatalf("after LoadSnapshot the store holds %q, want the snapshot's a=1 b=2", got)
	}
	if _, err := os.Stat(snap); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot directory is still there (%v); its files were to move", err)
	}
	// The store goes on as any other: commits, closes, reopens.
	put(t, b, "c", "3")
	commit(t, b, 41, 1001)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, dir, func(o *Options) { o.Logged = true })
	if r.Rebuilt() != "" || r.Checkpoint().ChangelogOffset != 41 {
		t.Fatalf("reopened: rebuilt %q, checkpoint %+v", r.Rebuilt(), r.Checkpoint())
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return r.Range(nil, nil, fn) }); got != "a=1 b=2 c=3" {
		t.Fatalf("reopened store holds %q", got)
	}
}

func TestLoadSnapshotRefusesWhatDoesNotFit(t *testing.T) {
	root := t.TempDir()
	a := openStore(t, filepath.Join(root, "a"), func(o *Options) { o.KeyLayout = "v2" })
	put(t, a, "a", "1")
	commit(t, a, 5, 5)
	snap := filepath.Join(root, "snap")
	if _, err := a.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*Options)
	}{
		{"identity", func(o *Options) { o.Identity, o.KeyLayout = "app/0_1/other", "v2" }},
		{"layout", func(o *Options) { o.KeyLayout = "v3" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := openStore(t, filepath.Join(root, c.name), c.mod)
			put(t, b, "mine", "1")
			commit(t, b, 9, 9)
			_, err := b.LoadSnapshot(snap)
			var me *SnapshotMismatchError
			if !errors.As(err, &me) {
				t.Fatalf("LoadSnapshot = %v, want a SnapshotMismatchError", err)
			}
			if got := get(t, b, "mine"); got != "1" || b.Checkpoint().ChangelogOffset != 9 {
				t.Fatalf("a refused snapshot changed the store: mine=%s, checkpoint %+v", got, b.Checkpoint())
			}
		})
	}
	t.Run("not a snapshot", func(t *testing.T) {
		b := openStore(t, filepath.Join(root, "c"))
		put(t, b, "mine", "1")
		commit(t, b, 9, 9)
		if _, err := b.LoadSnapshot(t.TempDir()); err == nil {
			t.Fatal("LoadSnapshot of an empty directory succeeded")
		}
		if got := get(t, b, "mine"); got != "1" {
			t.Fatalf("a refused snapshot changed the store: mine=%s", got)
		}
	})
}
