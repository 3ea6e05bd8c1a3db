package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

const testID = "app/0_1/counts"

func openStore(t *testing.T, dir string, mods ...func(*Options)) *Store {
	t.Helper()
	opts := Options{Dir: dir, Identity: testID, BlockCacheBytes: 1 << 20}
	for _, m := range mods {
		m(&opts)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func put(t *testing.T, s *Store, kvs ...string) {
	t.Helper()
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := s.Put([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, s *Store, key string) string {
	t.Helper()
	v, ok, err := s.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !ok {
		return "<none>"
	}
	return string(v)
}

// dump renders a scan as "k=v k=v".
func dump(t *testing.T, scan func(fn func(k, v []byte) bool) error) string {
	t.Helper()
	var out []string
	err := scan(func(k, v []byte) bool {
		out = append(out, string(k)+"="+string(v))
		return true
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return strings.Join(out, " ")
}

func commit(t *testing.T, s *Store, off, st int64) {
	t.Helper()
	if err := s.Commit(Checkpoint{ChangelogOffset: off, StreamTime: st}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func TestNewStoreIsEmpty(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "a", "0_1", "counts"))
	if got := s.Checkpoint(); got != (Checkpoint{0, -1}) {
		t.Errorf("Checkpoint = %+v, want {0 -1}", got)
	}
	if s.Rebuilt() != "" {
		t.Errorf("Rebuilt = %q on a new store", s.Rebuilt())
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "" {
		t.Errorf("new store scans %q (metadata must not show)", got)
	}
}

// TestReadsMergePendingAndCommitted checks every read path against a store
// whose committed data is partly overwritten and deleted by pending writes.
func TestReadsMergePendingAndCommitted(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "a", "1", "b", "1", "c", "1", "ca", "1", "d", "1")
	commit(t, s, 5, 100)
	put(t, s, "b", "2", "e", "2", "cb", "2")
	if err := s.Delete([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete([]byte("d")); err != nil {
		t.Fatal(err)
	}
	put(t, s, "d", "3") // deleted then written again in the same batch
	if got := s.Pending(); got != 6 {
		t.Errorf("Pending = %d, want 6", got)
	}

	for _, tc := range []struct{ key, want string }{
		{"a", "1"}, {"b", "2"}, {"c", "<none>"}, {"ca", "1"}, {"cb", "2"}, {"d", "3"}, {"e", "2"}, {"z", "<none>"},
	} {
		if got := get(t, s, tc.key); got != tc.want {
			t.Errorf("Get(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name       string
		start, end []byte
		want       string
	}{
		{"all", nil, nil, "a=1 b=2 ca=1 cb=2 d=3 e=2"},
		{"from b", []byte("b"), nil, "b=2 ca=1 cb=2 d=3 e=2"},
		{"to c", nil, []byte("c"), "a=1 b=2"},
		{"b to d", []byte("b"), []byte("d"), "b=2 ca=1 cb=2"},
		{"empty interval", []byte("c"), []byte("c"), ""},
		{"reversed", []byte("d"), []byte("b"), ""},
	} {
		t.Run("Range "+tc.name, func(t *testing.T) {
			got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(tc.start, tc.end, fn) })
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ prefix, want string }{
		{"", "a=1 b=2 ca=1 cb=2 d=3 e=2"},
		{"c", "ca=1 cb=2"},
		{"cb", "cb=2"},
		{"x", ""},
	} {
		t.Run("Prefix "+tc.prefix, func(t *testing.T) {
			got := dump(t, func(fn func(k, v []byte) bool) error { return s.Prefix([]byte(tc.prefix), fn) })
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	// Stop early.
	n := 0
	if err := s.Range(nil, nil, func(k, v []byte) bool { n++; return n < 2 }); err != nil || n != 2 {
		t.Errorf("Range stopped after %d keys (err %v), want 2", n, err)
	}

	// After the commit the same view is on disk.
	commit(t, s, 9, 200)
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "a=1 b=2 ca=1 cb=2 d=3 e=2" {
		t.Errorf("after commit: %q", got)
	}
}

func TestPrefixEdges(t *testing.T) {
	s := openStore(t, t.TempDir())
	keys := [][]byte{{0x00}, {0xfe, 0xff}, {0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0x01}}
	for _, k := range keys {
		if err := s.Put(k, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, s, 1, 1)
	for _, tc := range []struct {
		prefix []byte
		want   int
	}{
		{nil, 6}, {[]byte{0xff}, 4}, {[]byte{0xff, 0xff}, 2}, {[]byte{0xfe}, 1}, {[]byte{0x00}, 1},
	} {
		n := 0
		if err := s.Prefix(tc.prefix, func(k, v []byte) bool {
			if !bytes.HasPrefix(k, tc.prefix) {
				t.Errorf("Prefix(%x) gave %x", tc.prefix, k)
			}
			n++
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if n != tc.want {
			t.Errorf("Prefix(%x): %d keys, want %d", tc.prefix, n, tc.want)
		}
	}
}

func TestValuesAreCopies(t *testing.T) {
	s := openStore(t, t.TempDir())
	k, v := []byte("k"), []byte("v1")
	if err := s.Put(k, v); err != nil {
		t.Fatal(err)
	}
	k[0], v[1] = 'x', '9' // Put copied them
	got, ok, err := s.Get([]byte("k"))
	if err != nil || !ok || string(got) != "v1" {
		t.Fatalf("Get = %q %v %v, want v1", got, ok, err)
	}
	got[0] = 'z' // the caller owns the copy
	if g := get(t, s, "k"); g != "v1" {
		t.Errorf("after changing the returned slice, Get = %q", g)
	}
	// An empty value is a value.
	put(t, s, "empty", "")
	if v, ok, _ := s.Get([]byte("empty")); !ok || v == nil || len(v) != 0 {
		t.Errorf("Get(empty) = %v %v, want non-nil empty and true", v, ok)
	}
}

func TestCommitSurvivesReopen(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, func(o *Options) { o.Sync = sync })
			put(t, s, "a", "1", "b", "2")
			commit(t, s, 42, 1700)
			if got := s.Checkpoint(); got != (Checkpoint{42, 1700}) {
				t.Errorf("Checkpoint = %+v", got)
			}
			if s.Pending() != 0 {
				t.Errorf("Pending = %d after commit", s.Pending())
			}
			put(t, s, "c", "3") // pending at close: dropped
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
				t.Errorf("Get after Close: %v, want ErrClosed", err)
			}

			s = openStore(t, dir, func(o *Options) { o.Sync = sync })
			if s.Rebuilt() != "" {
				t.Fatalf("reopen rebuilt: %s", s.Rebuilt())
			}
			if got := s.Checkpoint(); got != (Checkpoint{42, 1700}) {
				t.Errorf("Checkpoint after reopen = %+v", got)
			}
			if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "a=1 b=2" {
				t.Errorf("after reopen: %q", got)
			}
		})
	}
}

func TestCommitWithoutWritesMovesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	commit(t, s, 10, 5)
	commit(t, s, 10, 5) // no-op
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if got := s.Checkpoint(); got != (Checkpoint{10, 5}) {
		t.Errorf("Checkpoint = %+v", got)
	}
}

func TestAbortDropsPending(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "a", "1")
	commit(t, s, 1, 10)
	put(t, s, "a", "2", "b", "2")
	_ = s.Delete([]byte("a"))
	s.Abort()
	if s.Pending() != 0 {
		t.Errorf("Pending = %d after Abort", s.Pending())
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "a=1" {
		t.Errorf("after Abort: %q, want a=1", got)
	}
	if got := s.Checkpoint(); got != (Checkpoint{1, 10}) {
		t.Errorf("Checkpoint = %+v", got)
	}
	// The store is usable after Abort.
	put(t, s, "c", "3")
	commit(t, s, 2, 11)
	if got := get(t, s, "c"); got != "3" {
		t.Errorf("Get(c) = %q", got)
	}
}

func TestWritesDuringScan(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "a", "1", "b", "1", "c", "1")
	var seen []string
	err := s.Range(nil, nil, func(k, v []byte) bool {
		seen = append(seen, string(k))
		// Expire what we see, and add keys the scan must not see.
		_ = s.Delete(k)
		_ = s.Put(append([]byte("z"), k...), v)
		if err := s.Commit(Checkpoint{1, 1}); err == nil {
			t.Error("Commit inside a scan callback succeeded")
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"a", "b", "c"}) {
		t.Errorf("scan saw %v", seen)
	}
	commit(t, s, 1, 1)
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "za=1 zb=1 zc=1" {
		t.Errorf("after scan with writes: %q", got)
	}
}

func TestAbortDuringScan(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "a", "1")
	commit(t, s, 1, 1)
	put(t, s, "b", "2", "c", "2")
	var seen []string
	err := s.Range(nil, nil, func(k, v []byte) bool {
		seen = append(seen, string(k))
		if string(k) == "a" {
			s.Abort()
			// Later calls see the abort at once...
			if got := get(t, s, "b"); got != "<none>" {
				t.Errorf("Get(b) after Abort in a scan = %q", got)
			}
			if err := s.Close(); err == nil {
				t.Error("Close inside a scan callback succeeded")
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	// ...while the scan finishes over the view it started with.
	if !slices.Equal(seen, []string{"a", "b", "c"}) {
		t.Errorf("scan saw %v", seen)
	}
	if s.Pending() != 0 || len(s.retired) != 0 {
		t.Errorf("Pending %d, retired batches %d after the scan", s.Pending(), len(s.retired))
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "a=1" {
		t.Errorf("after Abort: %q", got)
	}
}

func TestRestore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	put(t, s, "old", "x")
	commit(t, s, 3, 7)
	entries := []Entry{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("2")}, // later record wins
		{Key: []byte("old"), Value: nil},       // tombstone
		{Key: []byte("e"), Value: []byte{}},    // empty, not a tombstone
	}
	if err := s.Restore(entries, Checkpoint{ChangelogOffset: 8, StreamTime: 99}); err != nil {
		t.Fatal(err)
	}
	if got := s.Checkpoint(); got != (Checkpoint{8, 99}) {
		t.Errorf("Checkpoint = %+v", got)
	}
	want := "a=1 b=2 e="
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != want {
		t.Errorf("after Restore: %q, want %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if got := s.Checkpoint(); got != (Checkpoint{8, 99}) {
		t.Errorf("Checkpoint after reopen = %+v", got)
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != want {
		t.Errorf("after reopen: %q, want %q", got, want)
	}

	put(t, s, "p", "1")
	if err := s.Restore(entries, Checkpoint{9, 99}); err == nil {
		t.Error("Restore with pending writes succeeded")
	}
}

// rawPebble opens a closed store's directory with plain pebble, to forge the
// states Open must not trust.
func rawPebble(t *testing.T, dir string, fn func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		t.Fatal(err)
	}
	fn(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// files returns the names in dir matching a glob pattern.
func files(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// currentManifest returns the path of the MANIFEST pebble's marker points at.
func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	markers := files(t, dir, "marker.manifest.*")
	if len(markers) != 1 {
		t.Fatalf("manifest markers: %v", markers)
	}
	name := filepath.Base(markers[0])
	return filepath.Join(dir, name[strings.Index(name, "MANIFEST-"):])
}

func overwrite(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, int(fi.Size()/4)+1)[:fi.Size()]
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUntrustedStoresAreRebuilt forges, for each case, a store Open must not
// trust, and checks that Open wipes it: the old data is gone, the checkpoint
// is {0, -1}, Rebuilt says why, and the rebuilt store works and persists.
func TestUntrustedStoresAreRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string // expected in Rebuilt
		// flushed means the store's data is flushed to a table before
		// closing, for cases that damage tables.
		flushed bool
		damage  func(t *testing.T, dir string)
	}{
		{name: "foreign identity", reason: "foreign", damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Set(keyIdentity, []byte("other/0_1/counts"), pebble.Sync) })
		}},
		{name: "data without any metadata", reason: "no identity or checkpoint", damage: func(t *testing.T, dir string) {
			_ = os.RemoveAll(dir)
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Set([]byte("\x01k"), []byte("v"), pebble.Sync) })
		}},
		{name: "checkpoint missing", reason: "no checkpoint", damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Delete(keyCheckpoint, pebble.Sync) })
		}},
		{name: "identity missing", reason: "no identity", damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Delete(keyIdentity, pebble.Sync) })
		}},
		{name: "unknown format", reason: "unknown format", damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Set(keyFormat, []byte{0, 0, 0, 9}, pebble.Sync) })
		}},
		{name: "another key layout", reason: `keys laid out as "by time", not ""`, damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Set(keyLayout, []byte("by time"), pebble.Sync) })
		}},
		{name: "undecodable checkpoint", reason: "bad checkpoint", damage: func(t *testing.T, dir string) {
			rawPebble(t, dir, func(db *pebble.DB) { _ = db.Set(keyCheckpoint, []byte("short"), pebble.Sync) })
		}},
		{name: "garbage MANIFEST", reason: "torn", damage: func(t *testing.T, dir string) {
			overwrite(t, currentManifest(t, dir))
		}},
		{name: "truncated MANIFEST", reason: "torn", damage: func(t *testing.T, dir string) {
			if err := os.Truncate(currentManifest(t, dir), 10); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "garbage table", reason: "torn", flushed: true, damage: func(t *testing.T, dir string) {
			ssts := files(t, dir, "*.sst")
			if len(ssts) == 0 {
				t.Fatal("no table to damage")
			}
			for _, f := range ssts {
				overwrite(t, f)
			}
		}},
		{name: "missing table", reason: "torn", flushed: true, damage: func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "*.sst") {
				_ = os.Remove(f)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(Options{Dir: dir, Identity: testID})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				put(t, s, fmt.Sprintf("key%03d", i), "old")
			}
			commit(t, s, 1000, 5000)
			if tc.flushed {
				if err := s.db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)

			s = openStore(t, dir)
			if !strings.Contains(s.Rebuilt(), tc.reason) {
				t.Errorf("Rebuilt = %q, want it to mention %q", s.Rebuilt(), tc.reason)
			}
			if got := s.Checkpoint(); got != (Checkpoint{0, -1}) {
				t.Errorf("Checkpoint = %+v, want {0 -1}", got)
			}
			if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "" {
				t.Errorf("rebuilt store still has data: %.80s", got)
			}
			// Rebuilt stores are ordinary stores.
			put(t, s, "new", "1")
			commit(t, s, 1, 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir)
			if s.Rebuilt() != "" || s.Checkpoint() != (Checkpoint{1, 1}) || get(t, s, "new") != "1" {
				t.Errorf("after rebuild and reopen: rebuilt %q checkpoint %+v", s.Rebuilt(), s.Checkpoint())
			}
		})
	}
}

func TestEnvironmentErrorsNameTheDirAndNeverWipe(t *testing.T) {
	t.Run("dir under a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(file, "store")
		_, err := Open(Options{Dir: dir, Identity: testID})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Open = %v, want an error naming %s", err, dir)
		}
	})

	// Root (as CI runs) ignores permissions by its CAP_DAC_OVERRIDE: the
	// Open runs on a thread without it, where the mode bits hold for
	// root too.
	t.Run("read-only parent", func(t *testing.T) {
		parent := t.TempDir()
		if err := os.Chmod(parent, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(parent, 0o700) })
		dir := filepath.Join(parent, "store")
		var s *Store
		var err error
		if derr := withoutDACOverride(func() { s, err = Open(Options{Dir: dir, Identity: testID}) }); derr != nil {
			t.Fatal(derr)
		}
		if s != nil {
			_ = s.Close()
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("after the failed Open, %s: %v, want it not to exist", dir, serr)
		}
		if err == nil || !strings.Contains(err.Error(), dir) || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Open = %v, want a permission error naming %s", err, dir)
		}
	})

	// A store another process (here: another Store) has open is an error,
	// and the open store is untouched.
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		put(t, s, "a", "1")
		commit(t, s, 3, 3)
		_, err := Open(Options{Dir: dir, Identity: "someone/else"})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("second Open = %v, want an error naming %s", err, dir)
		}
		if get(t, s, "a") != "1" || s.Checkpoint() != (Checkpoint{3, 3}) {
			t.Error("first store damaged by the second Open")
		}
		if err := Destroy(dir); err == nil {
			t.Error("Destroy of an open store succeeded")
		}
	})

	// A full disk while opening an existing store: an error, and the store
	// is intact once the disk has room again.
	for _, code := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EACCES} {
		t.Run(code.Error(), func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			put(t, s, "a", "1")
			commit(t, s, 3, 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			full := errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpLock && op.Kind != errorfs.OpMkdirAll {
					return &os.PathError{Op: "write", Path: op.Path, Err: code}
				}
				return nil
			})
			_, err := Open(Options{Dir: dir, Identity: testID, fs: errorfs.Wrap(vfs.Default, full)})
			if err == nil || !strings.Contains(err.Error(), dir) || !errors.Is(err, code) {
				t.Fatalf("Open = %v, want %v naming %s", err, code, dir)
			}
			s = openStore(t, dir)
			if s.Rebuilt() != "" || get(t, s, "a") != "1" || s.Checkpoint() != (Checkpoint{3, 3}) {
				t.Errorf("store damaged: rebuilt %q checkpoint %+v", s.Rebuilt(), s.Checkpoint())
			}
		})
	}
}

// TestCommitFailureKeepsCheckpoint fails the WAL write of a commit. Commit
// must return an error, keep the checkpoint and the pending writes, and what
// is on disk must still be the previous commit.
func TestCommitFailureKeepsCheckpoint(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "store")
			toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
				if strings.HasSuffix(op.Path, ".log") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
					return &os.PathError{Op: "write", Path: op.Path, Err: syscall.EIO}
				}
				return nil
			})}
			s, err := Open(Options{Dir: dir, Identity: testID, Sync: sync, fs: errorfs.Wrap(vfs.Default, toggle)})
			if err != nil {
				t.Fatal(err)
			}
			put(t, s, "a", "1")
			commit(t, s, 1, 10)
			// Let the WAL reach the disk before the failure.
			if !sync {
				if err := s.db.LogData(nil, pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}

			toggle.On()
			// Without fsync the failed write surfaces at a later commit.
			// (pebble's WAL writer reports a failed write once its 32 KiB
			// block is full, hence the large values).
			big := strings.Repeat("x", 4096)
			// Commit until one fails, however long the WAL writer takes
			// on a loaded machine to meet the failing write.
			var cerr error
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; cerr == nil && time.Now().Before(deadline); i++ {
				put(t, s, "a", fmt.Sprint(i+2), "b", "2", "big", big)
				if cerr = s.Commit(Checkpoint{int64(i + 2), 20}); cerr == nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if cerr == nil {
				t.Fatal("Commit never failed")
			}
			t.Logf("Commit: %v", cerr)
			if !strings.Contains(cerr.Error(), dir) {
				t.Errorf("error %q does not name %s", cerr, dir)
			}
			if sync {
				if got := s.Checkpoint(); got != (Checkpoint{1, 10}) {
					t.Errorf("Checkpoint after failed commit = %+v, want {1 10}", got)
				}
			}
			if s.Pending() == 0 {
				t.Error("pending writes dropped by a failed commit")
			}
			if _, _, err := s.Get([]byte("a")); err == nil {
				t.Error("a broken store still serves reads")
			}
			if err := s.Commit(Checkpoint{99, 99}); err == nil {
				t.Error("a broken store still commits")
			}
			_ = s.Close()

			// What a restart would find: copy the directory as it is on disk
			// (the broken store keeps its lock) and open the copy.
			cp := filepath.Join(base, "copy")
			if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			r := openStore(t, cp)
			got := fmt.Sprintf("%v a=%s b=%s", r.Checkpoint(), get(t, r, "a"), get(t, r, "b"))
			if sync && got != "{1 10} a=1 b=<none>" {
				t.Errorf("on disk after a failed synced commit: %s", got)
			}
			// Unsynced commits before the failure may or may not be there,
			// but data and checkpoint must agree.
			if !sync && got != "{1 10} a=1 b=<none>" && !strings.Contains(got, "b=2") {
				t.Errorf("on disk: %s", got)
			}
			t.Logf("on disk: %s (rebuilt %q)", got, r.Rebuilt())
		})
	}
}

// TestFullDiskInFlushFailsCommit makes pebble's memtable flush fail with
// ENOSPC: the next Commit must fail naming the directory, before applying.
func TestFullDiskInFlushFailsCommit(t *testing.T) {
	dir := t.TempDir()
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".sst") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	s, err := Open(Options{Dir: dir, Identity: testID, fs: errorfs.Wrap(vfs.Default, toggle)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "1")
	commit(t, s, 1, 10)

	toggle.On()
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.bg.get() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	toggle.Off()

	put(t, s, "b", "2")
	err = s.Commit(Checkpoint{2, 20})
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Commit = %v, want ENOSPC naming %s", err, dir)
	}
	if got := s.Checkpoint(); got != (Checkpoint{1, 10}) {
		t.Errorf("Checkpoint = %+v, want {1 10}", got)
	}
	if s.Pending() != 1 || get(t, s, "b") != "2" {
		t.Errorf("pending writes lost: Pending %d", s.Pending())
	}
}

// TestCorruptBlockFoundByReadRebuildsAtNextOpen flips bytes inside a data
// block, where Open does not look: the read that hits it fails with a
// corruption error, and the next Open rebuilds the store.
func TestCorruptBlockFoundByReadRebuildsAtNextOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Identity: testID})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 100)
	for i := range 5000 {
		put(t, s, fmt.Sprintf("key%05d", i), val)
	}
	commit(t, s, 5000, 1)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ssts := files(t, dir, "*.sst")
	if len(ssts) != 1 {
		t.Fatalf("tables: %v", ssts)
	}
	f, err := os.OpenFile(ssts[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt([]byte("garbage!"), fi.Size()/3); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	s, err = Open(Options{Dir: dir, Identity: testID})
	if err != nil {
		t.Fatal(err)
	}
	if s.Rebuilt() != "" {
		t.Fatalf("rebuilt at open (%s); the test wants the damage found by a read", s.Rebuilt())
	}
	var readErr error
	for i := 0; i < 5000 && readErr == nil; i++ {
		_, _, readErr = s.Get(fmt.Appendf(nil, "key%05d", i))
	}
	if readErr == nil {
		readErr = s.Range(nil, nil, func(k, v []byte) bool { return true })
	}
	if !IsCorruption(readErr) || !strings.Contains(readErr.Error(), dir) {
		t.Fatalf("read error %v, want a corruption error naming %s", readErr, dir)
	}
	_ = s.Close()

	s = openStore(t, dir)
	if !strings.Contains(s.Rebuilt(), "corrupt") || s.Checkpoint() != (Checkpoint{0, -1}) || get(t, s, "key00000") != "<none>" {
		t.Errorf("after reopen: rebuilt %q, checkpoint %+v", s.Rebuilt(), s.Checkpoint())
	}
}

func TestOptionsValidation(t *testing.T) {
	if _, err := Open(Options{Identity: "x"}); err == nil {
		t.Error("Open without Dir succeeded")
	}
	if _, err := Open(Options{Dir: t.TempDir()}); err == nil {
		t.Error("Open without Identity succeeded")
	}
}

func TestDestroy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openStore(t, dir)
	put(t, s, "a", "1")
	commit(t, s, 1, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Destroy(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dir still there: %v", err)
	}
	if err := Destroy(dir); err != nil {
		t.Errorf("Destroy of a missing dir: %v", err)
	}
	s = openStore(t, dir)
	if s.Rebuilt() != "" || get(t, s, "a") != "<none>" {
		t.Errorf("after Destroy: rebuilt %q", s.Rebuilt())
	}
}

// TestReadersFromOtherGoroutines runs the stats and committed readers beside
// the owner, through Close, under -race.
func TestReadersFromOtherGoroutines(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "k", "v")
	commit(t, s, 1, 1)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				_ = s.Checkpoint()
				_ = s.Rebuilt()
				size := s.ApproxSize()
				_, _, gerr := s.GetCommitted([]byte("k"))
				rerr := s.RangeCommitted(nil, nil, func(k, v []byte) bool { return true })
				if errors.Is(gerr, ErrClosed) && errors.Is(rerr, ErrClosed) && size == 0 {
					return
				}
				if gerr != nil && !errors.Is(gerr, ErrClosed) || rerr != nil && !errors.Is(rerr, ErrClosed) {
					t.Errorf("committed reads: %v, %v", gerr, rerr)
					return
				}
			}
		})
	}
	for i := range 50 {
		put(t, s, fmt.Sprint(i), "v")
		commit(t, s, int64(i+2), int64(i))
	}
	if s.ApproxSize() <= 0 {
		t.Errorf("ApproxSize = %d", s.ApproxSize())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// TestDeleteRange checks that a range tombstone in the pending batch hides
// committed and pending keys alike from reads at once, leaves keys outside
// the range, and reaches disk with the next Commit.
func TestDeleteRange(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	put(t, s, "a1", "1", "b1", "2", "b2", "3", "c1", "4")
	if err := s.Commit(Checkpoint{ChangelogOffset: 4, StreamTime: 10}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "b3", "5")
	if err := s.DeleteRange([]byte("b"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }), "a1=1 c1=4"; got != want {
		t.Fatalf("after DeleteRange: %s, want %s", got, want)
	}
	if got := get(t, s, "b2"); got != "<none>" {
		t.Fatalf("Get(b2) = %s after DeleteRange", got)
	}
	put(t, s, "b4", "6") // written after the tombstone: it stays
	if err := s.DeleteRange([]byte("z"), []byte("a")); err != nil {
		t.Fatalf("an empty range must be a no-op: %v", err)
	}
	if err := s.Commit(Checkpoint{ChangelogOffset: 6, StreamTime: 20}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	if got, want := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }), "a1=1 b4=6 c1=4"; got != want {
		t.Fatalf("after reopen: %s, want %s", got, want)
	}
}

// PutWriteOnly's writes are invisible until Commit, land with the
// checkpoint in it, and apply before the indexed writes of the same commit.
func TestPutWriteOnly(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	scan := func() string {
		return dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) })
	}
	putWO := func(kvs ...string) {
		t.Helper()
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := s.PutWriteOnly([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(t, s, "a", "1")
	commit(t, s, 1, 10)

	putWO("b1", "wo", "b2", "wo", "c", "wo")
	put(t, s, "a", "2")
	if got, want := scan(), "a=2"; got != want {
		t.Fatalf("before commit: %s, want %s (write-only writes are not read)", got, want)
	}
	if got := get(t, s, "b1"); got != "<none>" {
		t.Fatalf("Get(b1) = %s before commit", got)
	}
	if s.Pending() != 4 {
		t.Errorf("Pending = %d, want 4", s.Pending())
	}
	// Indexed writes issued after the write-only ones win over them.
	if err := s.DeleteRange([]byte("b"), []byte("b2")); err != nil {
		t.Fatal(err)
	}
	put(t, s, "c", "indexed")
	commit(t, s, 5, 20)
	if got, want := scan(), "a=2 b2=wo c=indexed"; got != want {
		t.Fatalf("after commit: %s, want %s", got, want)
	}

	// Abort drops them; the store goes on with both kinds afterwards.
	putWO("d", "dropped")
	s.Abort()
	putWO("e", "5")
	commit(t, s, 6, 30)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if got, want := scan(), "a=2 b2=wo c=indexed e=5"; got != want {
		t.Fatalf("after reopen: %s, want %s", got, want)
	}
	if got := s.Checkpoint(); got != (Checkpoint{6, 30}) {
		t.Errorf("Checkpoint after reopen = %+v", got)
	}
	if err := s.Restore(nil, Checkpoint{7, 31}); err != nil {
		t.Fatalf("Restore with nothing pending: %v", err)
	}
	putWO("f", "6")
	if err := s.Restore(nil, Checkpoint{8, 32}); err == nil {
		t.Fatal("Restore with a write-only write pending: no error")
	}
}

// A store keeps the key layout it was first opened with: reopened with the
// same one it is trusted, with another (or none) it is rebuilt.
func TestKeyLayout(t *testing.T) {
	dir := t.TempDir()
	withLayout := func(l string) func(*Options) { return func(o *Options) { o.KeyLayout = l } }
	s := openStore(t, dir, withLayout("by time"))
	put(t, s, "a", "1")
	commit(t, s, 1, 10)
	s.Close()

	s = openStore(t, dir, withLayout("by time"))
	if s.Rebuilt() != "" || get(t, s, "a") != "1" {
		t.Fatalf("same layout: rebuilt %q, a=%s", s.Rebuilt(), get(t, s, "a"))
	}
	s.Close()
	s = openStore(t, dir)
	if want := `keys laid out as "by time", not ""`; !strings.Contains(s.Rebuilt(), want) {
		t.Fatalf("no layout: Rebuilt() = %q, want it to say %q", s.Rebuilt(), want)
	}
	if got := get(t, s, "a"); got != "<none>" {
		t.Errorf("a=%s after the rebuild", got)
	}
}

// TestCloseFlushes checks that a clean close leaves what was committed in
// tables, not only in the WAL: the store opens at its last commit with every
// WAL removed.
func TestCloseFlushes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	put(t, s, "a", "1", "b", "2")
	commit(t, s, 7, 70)
	put(t, s, "c", "3") // pending at close: dropped
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, wal := range files(t, dir, "*.log") {
		if err := os.Remove(wal); err != nil {
			t.Fatal(err)
		}
	}
	s = openStore(t, dir)
	if s.Rebuilt() != "" || s.Checkpoint() != (Checkpoint{7, 70}) {
		t.Fatalf("after close and reopen without WAL: rebuilt %q, checkpoint %+v", s.Rebuilt(), s.Checkpoint())
	}
	if got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }); got != "a=1 b=2" {
		t.Errorf("after close and reopen without WAL: %q", got)
	}
}
