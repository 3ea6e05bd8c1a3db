package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/snapshot/s3test"
	"github.com/braidstream/braid/runtime/internal/state"
	"gocloud.dev/blob"
)

// stores are the blob stores every test runs against: a directory, and an
// S3 protocol server on loopback.
var stores = []struct {
	name string
	open func(t *testing.T) string
}{
	{"file", func(t *testing.T) string { return "file://" + t.TempDir() }},
	{"s3", func(t *testing.T) string { return s3test.Bucket(t) }},
}

var testScope = Scope{Application: "app", Task: "0_1", Store: "counts"}

// storeSnapshot writes n committed keys to a store and returns a snapshot
// directory of it with its metadata.
func storeSnapshot(t *testing.T, n int, offset int64) (string, state.SnapshotMeta) {
	t.Helper()
	root := t.TempDir()
	s, err := state.Open(state.Options{Dir: filepath.Join(root, "live"), Identity: "app/0_1/counts", Logged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		if err := s.Put(fmt.Appendf(nil, "key-%06d", i), fmt.Appendf(nil, "value-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(state.Checkpoint{ChangelogOffset: offset, StreamTime: 5000}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "snap")
	m, err := s.Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func manifestOf(m state.SnapshotMeta) Manifest {
	return Manifest{Scope: testScope, Identity: m.Identity, KeyLayout: m.KeyLayout, FormatVersion: m.FormatVersion,
		Changelog: "app-counts-changelog", Partition: 1, ChangelogOffset: m.Checkpoint.ChangelogOffset, StreamTime: m.Checkpoint.StreamTime}
}

func openBucket(t *testing.T, url string) *Bucket {
	t.Helper()
	b, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestPutListFetchOpens(t *testing.T) {
	for _, bs := range stores {
		t.Run(bs.name, func(t *testing.T) {
			ctx := context.Background()
			b := openBucket(t, bs.open(t))
			dir, meta := storeSnapshot(t, 2000, 2000)
			put, err := b.Put(ctx, dir, manifestOf(meta), PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			list, bad, err := b.List(ctx, testScope)
			if err != nil || len(bad) != 0 || len(list) != 1 {
				t.Fatalf("List = %d snapshots, %v unusable, %v; want the one put", len(list), bad, err)
			}
			if got := list[0]; got.ID != put.ID || got.Bytes() != put.Bytes() || got.ChangelogOffset != 2000 || !got.TakenAt.Equal(put.TakenAt) {
				t.Fatalf("listed %+v, put %+v", got, put)
			}
			into := filepath.Join(t.TempDir(), "restored")
			if err := b.Fetch(ctx, list[0], into); err != nil {
				t.Fatal(err)
			}
			s, err := state.Open(state.Options{Dir: into, Identity: "app/0_1/counts", Logged: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Rebuilt() != "" || s.Checkpoint().ChangelogOffset != 2000 {
				t.Fatalf("restored store: rebuilt %q, checkpoint %+v", s.Rebuilt(), s.Checkpoint())
			}
			v, ok, err := s.Get([]byte("key-001999"))
			if err != nil || !ok || string(v) != "value-1999" {
				t.Fatalf("restored key-001999 = %q, %v, %v", v, ok, err)
			}
		})
	}
}

// TestDamagedSnapshotsAreUnusable damages an uploaded snapshot in each way
// a blob store might and checks Fetch refuses it, naming the file, and
// leaves nothing behind.
func TestDamagedSnapshotsAreUnusable(t *testing.T) {
	damages := []struct {
		name, reason string
		damage       func(ctx context.Context, b *blob.Bucket, key string) error
	}{
		{"missing", "file missing", func(ctx context.Context, b *blob.Bucket, key string) error { return b.Delete(ctx, key) }},
		{"corrupted", "checksum differs", func(ctx context.Context, b *blob.Bucket, key string) error {
			body, err := b.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			body[len(body)/2] ^= 0xff
			return b.WriteAll(ctx, key, body, nil)
		}},
		{"truncated", "file size differs", func(ctx context.Context, b *blob.Bucket, key string) error {
			body, err := b.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			return b.WriteAll(ctx, key, body[:len(body)-1], nil)
		}},
		{"grown", "file size differs", func(ctx context.Context, b *blob.Bucket, key string) error {
			body, err := b.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			return b.WriteAll(ctx, key, append(body, 0), nil)
		}},
	}
	for _, bs := range stores {
		for _, d := range damages {
			t.Run(bs.name+"/"+d.name, func(t *testing.T) {
				ctx := context.Background()
				b := openBucket(t, bs.open(t))
				dir, meta := storeSnapshot(t, 500, 10)
				m, err := b.Put(ctx, dir, manifestOf(meta), PutOptions{})
				if err != nil {
					t.Fatal(err)
				}
				victim := m.Files[len(m.Files)/2]
				for _, f := range m.Files {
					if filepath.Ext(f.Name) == ".sst" {
						victim = f
					}
				}
				if err := d.damage(ctx, b.b, m.key(victim.Name)); err != nil {
					t.Fatal(err)
				}
				into := filepath.Join(t.TempDir(), "restored")
				err = b.Fetch(ctx, m, into)
				var ue *UnusableError
				if !errors.As(err, &ue) || ue.Reason != d.reason || ue.File != victim.Name || ue.ID != m.ID {
					t.Fatalf("Fetch = %v, want an UnusableError %q naming %s", err, d.reason, victim.Name)
				}
				if _, err := os.Stat(into); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a refused snapshot left %s behind (%v)", into, err)
				}
			})
		}
	}
}

// TestUploadCutShortIsNotListed checks that files without their manifest
// (an upload that died) are no snapshot, and that a manifest of the wrong
// scope or garbage is reported unusable rather than trusted.
func TestUploadCutShortIsNotListed(t *testing.T) {
	for _, bs := range stores {
		t.Run(bs.name, func(t *testing.T) {
			ctx := context.Background()
			b := openBucket(t, bs.open(t))
			dir, meta := storeSnapshot(t, 100, 7)
			m, err := b.Put(ctx, dir, manifestOf(meta), PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.b.Delete(ctx, m.key(manifestName)); err != nil {
				t.Fatal(err)
			}
			if list, bad, err := b.List(ctx, testScope); err != nil || len(list)+len(bad) != 0 {
				t.Fatalf("List after the manifest went = %v, %v, %v; want nothing", list, bad, err)
			}
			if err := b.b.WriteAll(ctx, m.key(manifestName), []byte("{not json"), nil); err != nil {
				t.Fatal(err)
			}
			list, bad, err := b.List(ctx, testScope)
			if err != nil || len(list) != 0 || len(bad) != 1 || bad[0].ID != m.ID {
				t.Fatalf("List with a garbled manifest = %v, %v, %v; want it unusable", list, bad, err)
			}
		})
	}
}

func TestPruneKeepsTheNewest(t *testing.T) {
	for _, bs := range stores {
		t.Run(bs.name, func(t *testing.T) {
			ctx := context.Background()
			b := openBucket(t, bs.open(t))
			dir, meta := storeSnapshot(t, 50, 1)
			var ids []string
			at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
			for i := range 4 {
				m := manifestOf(meta)
				m.ChangelogOffset = int64(100 * (i + 1))
				put, err := b.Put(ctx, dir, m, PutOptions{Now: at.Add(time.Duration(i) * time.Minute)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, put.ID)
			}
			deleted, err := b.Prune(ctx, testScope, 2)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(deleted) != fmt.Sprint(ids[:2]) {
				t.Fatalf("Prune deleted %v, want the oldest two %v", deleted, ids[:2])
			}
			list, _, err := b.List(ctx, testScope)
			if err != nil || len(list) != 2 || list[0].ID != ids[3] || list[1].ID != ids[2] {
				t.Fatalf("after Prune, List = %v, %v; want %v newest first", list, err, ids[2:])
			}
			left, err := b.ids(ctx, testScope)
			if err != nil || len(left) != 2 {
				t.Fatalf("after Prune the bucket holds %v (%v): files of deleted snapshots remain", left, err)
			}
		})
	}
}

func TestPacerHoldsTheRate(t *testing.T) {
	p := newPacer(1000)
	now := p.start
	p.now = func() time.Time { return now }
	p.sleep = func(_ context.Context, d time.Duration) error {
		now = now.Add(d)
		return nil
	}
	data := make([]byte, 5000)
	r := p.reader(context.Background(), &byteReader{data})
	buf := make([]byte, 4096)
	total := 0
	for {
		n, err := r.Read(buf)
		if n > 100 {
			t.Fatalf("read %d bytes at once, want at most a tenth of a second's 100", n)
		}
		total += n
		if err != nil {
			break
		}
	}
	if total != 5000 {
		t.Fatalf("read %d bytes, want 5000", total)
	}
	if got := now.Sub(p.start); got < 5*time.Second || got > 5*time.Second+time.Millisecond {
		t.Fatalf("5000 bytes at 1000 B/s took %v, want 5s", got)
	}
}

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

var errCrash = errors.New("crashed here")

// TestCrashWhileTakingLeavesNothingTrusted cuts an upload short after each
// of its files and a prune after it deleted a manifest: no listing returns
// what either left, the snapshots before stay usable, and the next prune
// clears the leftovers.
func TestCrashWhileTakingLeavesNothingTrusted(t *testing.T) {
	for _, bs := range stores {
		t.Run(bs.name, func(t *testing.T) {
			ctx := context.Background()
			b := openBucket(t, bs.open(t))
			dir, meta := storeSnapshot(t, 300, 1)
			at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
			good, err := b.Put(ctx, dir, manifestOf(meta), PutOptions{Now: at})
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k <= len(good.Files); k++ {
				b.crashAt = func(p string) error {
					if p == fmt.Sprintf("file %d", k) {
						return errCrash
					}
					return nil
				}
				m := manifestOf(meta)
				m.ChangelogOffset = int64(100 + k)
				if _, err := b.Put(ctx, dir, m, PutOptions{Now: at.Add(time.Duration(k) * time.Minute)}); !errors.Is(err, errCrash) {
					t.Fatalf("Put cut after file %d = %v", k, err)
				}
				list, bad, err := b.List(ctx, testScope)
				if err != nil || len(bad) != 0 || len(list) != 1 || list[0].ID != good.ID {
					t.Fatalf("after an upload cut after file %d of %d, List = %v, %v, %v; want only %s", k, len(good.Files), list, bad, err, good.ID)
				}
			}
			b.crashAt = nil
			newer := manifestOf(meta)
			newer.ChangelogOffset = 1000
			newest, err := b.Put(ctx, dir, newer, PutOptions{Now: at.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			b.crashAt = func(p string) error {
				if p == "pruned manifest" {
					return errCrash
				}
				return nil
			}
			if _, err := b.Prune(ctx, testScope, 1); !errors.Is(err, errCrash) {
				t.Fatalf("Prune cut after a manifest = %v", err)
			}
			list, _, err := b.List(ctx, testScope)
			if err != nil || len(list) != 1 || list[0].ID != newest.ID {
				t.Fatalf("after a prune cut short, List = %v, %v; want only %s", list, err, newest.ID)
			}
			if err := b.Fetch(ctx, list[0], filepath.Join(t.TempDir(), "f")); err != nil {
				t.Fatalf("the newest snapshot is no longer usable: %v", err)
			}
			b.crashAt = nil
			if _, err := b.Prune(ctx, testScope, 1); err != nil {
				t.Fatal(err)
			}
			if ids, err := b.ids(ctx, testScope); err != nil || len(ids) != 1 || ids[0] != newest.ID {
				t.Fatalf("after the next prune the bucket holds %v (%v), want only %s", ids, err, newest.ID)
			}
		})
	}
}
