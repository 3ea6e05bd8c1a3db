package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// crashLog is a changelog and the commits a store made of it: what the
// crash tests replay against pebble's crashable in-memory file system.
type crashLog struct {
	entries []Entry
	// commits are the checkpoint offsets, in order; each is where a
	// Commit ended.
	commits []int64
}

// newCrashLog returns n changelog records over 150 keys, a fifth of them
// deletes, with a commit every 40 to 80 records.
func newCrashLog(seed uint64, n int) crashLog {
	r := rand.New(rand.NewPCG(seed, 1))
	var l crashLog
	for i := range n {
		e := Entry{Key: fmt.Appendf(nil, "k%03d", r.IntN(150))}
		if r.IntN(5) > 0 {
			e.Value = fmt.Appendf(nil, "%d-%s", i, strings.Repeat("v", 80+r.IntN(80)))
		}
		l.entries = append(l.entries, e)
	}
	for off := 0; off < n; {
		off = min(n, off+40+r.IntN(41))
		l.commits = append(l.commits, int64(off))
	}
	return l
}

// state renders the store state the first off records give, as dump does.
func (l crashLog) state(off int64) string {
	m := map[string]string{}
	for _, e := range l.entries[:off] {
		if e.Value == nil {
			delete(m, string(e.Key))
		} else {
			m[string(e.Key)] = string(e.Value)
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, " ")
}

func (l crashLog) checkpoint(off int64) Checkpoint {
	if off == 0 {
		return zeroCheckpoint
	}
	return Checkpoint{ChangelogOffset: off, StreamTime: 10 * off}
}

// crashClones are the file systems a crash at one moment may leave: only
// what was synced, everything, and random halves of the unsynced blocks.
func crashClones(fs *vfs.MemFS, seed uint64) map[string]*vfs.MemFS {
	clones := map[string]*vfs.MemFS{
		"synced only": fs.CrashClone(vfs.CrashCloneCfg{}),
		"everything": fs.CrashClone(vfs.CrashCloneCfg{
			UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(seed, 99)),
		}),
	}
	for i := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, i))
		clones[fmt.Sprintf("half %d", i)] = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
	}
	return clones
}

// TestCrashLeavesCheckpointAndDataAgreeing writes a changelog into a store
// in commits, with pending writes between them, on a crashable file system
// whose memtables are small enough to flush every few commits, and crashes
// it after every step (and after a clean close) at every grain of lost
// unsynced data. Each crashed copy must open to a state that is exactly
// what its checkpoint says, the checkpoint no newer than the last commit
// (and, with Sync, equal to it), and a restore from the checkpoint's
// offset must bring it to the last commit. It replaces cutting the WAL by
// hand: it covers tables, the MANIFEST and directory entries too. A logged
// store without Sync runs without pebble's WAL, which pebble v2.1.7 marks
// untested: this test is the proof that it keeps its data and checkpoint
// together.
func TestCrashLeavesCheckpointAndDataAgreeing(t *testing.T) {
	for _, mode := range crashModes {
		t.Run(mode.name, func(t *testing.T) {
			testCrashes(t, mode.logged, mode.sync)
		})
	}
}

func testCrashes(t *testing.T, logged, sync bool) {
	const dir = "/store"
	l := newCrashLog(7, 3000)
	fs := vfs.NewCrashableMem()
	opts := Options{Dir: dir, Identity: testID, BlockCacheBytes: 1 << 20, Sync: sync, Logged: logged, fs: fs, memTableBytes: 64 << 10}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	check := func(moment string, committed int64, exact bool) {
		t.Helper()
		for name, clone := range crashClones(fs, uint64(committed)) {
			off := reopenCrashed(t, opts, clone, l, committed, exact, moment+", "+name)
			seen[off]++
		}
	}
	check("after open", 0, sync)
	var committed int64
	for _, end := range l.commits {
		for i, e := range l.entries[committed:end] {
			var err error
			if e.Value == nil {
				err = s.Delete(e.Key)
			} else {
				err = s.Put(e.Key, e.Value)
			}
			if err != nil {
				t.Fatal(err)
			}
			if i == 20 {
				check(fmt.Sprintf("with writes pending after %d", committed), committed, sync)
			}
		}
		if err := s.Commit(l.checkpoint(end)); err != nil {
			t.Fatal(err)
		}
		committed = end
		check(fmt.Sprintf("after the commit at %d", committed), committed, sync)
	}
	put(t, s, "pending", "at close")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("after a clean close", committed, true)
	t.Logf("checkpoints crashed copies came back at (offset: copies): %v", seen)
}

// reopenCrashed opens the store on a crashed copy and checks it, then
// restores it from its checkpoint to committed and checks it again. It
// returns the offset the copy came back at.
func reopenCrashed(t *testing.T, opts Options, fs *vfs.MemFS, l crashLog, committed int64, exact bool, moment string) int64 {
	t.Helper()
	opts.fs = fs
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("crash %s: Open: %v", moment, err)
	}
	defer s.Close()
	all := func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) }
	cp := s.Checkpoint()
	off := cp.ChangelogOffset
	switch {
	case s.Rebuilt() != "" && off != 0:
		t.Fatalf("crash %s: rebuilt (%s) with checkpoint %+v", moment, s.Rebuilt(), cp)
	case off > committed:
		t.Fatalf("crash %s: checkpoint %+v is past the last commit, %d", moment, cp, committed)
	case exact && off != committed:
		t.Fatalf("crash %s: checkpoint %+v, want the last commit, %d", moment, cp, committed)
	case off != 0 && !slices.Contains(l.commits, off):
		t.Fatalf("crash %s: checkpoint %+v was never committed", moment, cp)
	case cp != l.checkpoint(off):
		t.Fatalf("crash %s: checkpoint %+v, want stream time %d", moment, cp, l.checkpoint(off).StreamTime)
	}
	if got, want := dump(t, all), l.state(off); got != want {
		t.Fatalf("crash %s: data disagrees with checkpoint %+v:\n got %.200s\nwant %.200s", moment, cp, got, want)
	}
	if err := s.Restore(l.entries[off:committed], l.checkpoint(committed)); err != nil {
		t.Fatalf("crash %s: restore from %d: %v", moment, off, err)
	}
	if got, want := dump(t, all), l.state(committed); got != want {
		t.Fatalf("crash %s: restore from %d to %d gave other data:\n got %.200s\nwant %.200s", moment, off, committed, got, want)
	}
	return off
}

// TestCheckpointAgeIsBounded checks that a store without WAL flushes a
// commit once its last flush is maxCheckpointAge old, an idle store's
// last commit included, and not before.
func TestCheckpointAgeIsBounded(t *testing.T) {
	const dir = "/store"
	fs := vfs.NewCrashableMem()
	now := time.Unix(1700000000, 0)
	opts := Options{Dir: dir, Identity: testID, BlockCacheBytes: 1 << 20, Logged: true, fs: fs,
		now: func() time.Time { return now }}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed := func(want Checkpoint, wantData string) {
		t.Helper()
		checkCrashClone(t, fs, opts, want, wantData)
	}

	put(t, s, "a", "1")
	commit(t, s, 1, 10)
	now = now.Add(maxCheckpointAge - time.Second)
	commit(t, s, 1, 10) // nothing new: no commit, and not old enough
	crashed(zeroCheckpoint, "")

	now = now.Add(time.Second)
	commit(t, s, 1, 10) // nothing new, but old enough: flushes
	<-s.ageFlush
	crashed(Checkpoint{1, 10}, "a=1")

	put(t, s, "b", "2")
	commit(t, s, 2, 20)
	crashed(Checkpoint{1, 10}, "a=1")
	now = now.Add(maxCheckpointAge)
	s.FlushIfOld()
	<-s.ageFlush
	crashed(Checkpoint{2, 20}, "a=1 b=2")
}

func TestClear(t *testing.T) {
	s := openStore(t, t.TempDir())
	put(t, s, "a", "1", "b", "2")
	commit(t, s, 3, 30)
	put(t, s, "c", "3")
	if err := s.Clear(Checkpoint{9, 30}); err == nil {
		t.Fatal("Clear with pending writes succeeded")
	}
	s.Abort()
	if err := s.Clear(Checkpoint{9, 30}); err != nil {
		t.Fatal(err)
	}
	got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) })
	if got != "" || s.Checkpoint() != (Checkpoint{9, 30}) {
		t.Fatalf("after Clear: %q, checkpoint %+v", got, s.Checkpoint())
	}
}

// TestReplace checks that Replace swaps a store's whole contents and its
// checkpoint in one batch: a crash before the flush finds the old
// contents with the old checkpoint, after it the new ones with the new.
func TestReplace(t *testing.T) {
	const dir = "/store"
	fs := vfs.NewCrashableMem()
	opts := Options{Dir: dir, Identity: testID, BlockCacheBytes: 1 << 20, Logged: true, fs: fs}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed := func(want Checkpoint, wantData string) {
		t.Helper()
		checkCrashClone(t, fs, opts, want, wantData)
	}
	put(t, s, "a", "1", "b", "2")
	commit(t, s, 3, 30)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	put(t, s, "c", "3")
	if err := s.Replace([]Entry{{Key: []byte("x"), Value: []byte("9")}}, Checkpoint{7, 70}); err == nil {
		t.Fatal("Replace with pending writes succeeded")
	}
	s.Abort()
	if err := s.Replace([]Entry{{Key: []byte("b"), Value: []byte("5")}, {Key: []byte("x"), Value: []byte("9")}}, Checkpoint{7, 70}); err != nil {
		t.Fatal(err)
	}
	got := dump(t, func(fn func(k, v []byte) bool) error { return s.Range(nil, nil, fn) })
	if got != "b=5 x=9" || s.Checkpoint() != (Checkpoint{7, 70}) {
		t.Fatalf("after Replace: %q, checkpoint %+v", got, s.Checkpoint())
	}
	crashed(Checkpoint{3, 30}, "a=1 b=2")
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	crashed(Checkpoint{7, 70}, "b=5 x=9")
}

// checkCrashClone opens a crash clone of fs (what a crash now would leave
// on disk) with opts and checks the store's checkpoint and data there.
func checkCrashClone(t *testing.T, fs *vfs.MemFS, opts Options, want Checkpoint, wantData string) {
	t.Helper()
	opts.fs = fs.CrashClone(vfs.CrashCloneCfg{})
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := dump(t, func(fn func(k, v []byte) bool) error { return c.Range(nil, nil, fn) })
	if c.Checkpoint() != want || got != wantData {
		t.Fatalf("after a crash: checkpoint %+v, data %q; want %+v, %q", c.Checkpoint(), got, want, wantData)
	}
}

// TestCrashWhileCreating crashes a store's creation at every file pebble
// creates, renames or removes while Open creates it, its syncs deferred
// to the end (creatingFS), and then as it closes with nothing committed:
// every crashed copy opens as an empty store at checkpoint zero, rebuilt
// or not, and restores from there.
func TestCrashWhileCreating(t *testing.T) {
	const dir = "/tasks/0_0/store"
	for _, mode := range crashModes {
		t.Run(mode.name, func(t *testing.T) {
			l := newCrashLog(3, 100)
			mem := vfs.NewCrashableMem()
			cfs := &cloningFS{MemFS: mem}
			opts := Options{Dir: dir, Identity: testID, BlockCacheBytes: 1 << 20, Sync: mode.sync, Logged: mode.logged, fs: cfs}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if len(cfs.clones) == 0 {
				t.Fatal("no crash point met while creating")
			}
			for i, clones := range cfs.clones {
				for name, clone := range clones {
					reopenCrashed(t, opts, clone, l, 0, false, fmt.Sprintf("at step %d of the creation, %s", i, name))
				}
			}
			for name, clone := range crashClones(mem, 1) {
				reopenCrashed(t, opts, clone, l, 0, true, "after the creation, "+name)
			}
		})
	}
}

// cloningFS is a crashable file system that keeps crashed copies of
// itself (crashClones) as each file is created, renamed or removed.
type cloningFS struct {
	*vfs.MemFS
	clones []map[string]*vfs.MemFS
}

func (c *cloningFS) crash() {
	c.clones = append(c.clones, crashClones(c.MemFS, uint64(len(c.clones))))
}

func (c *cloningFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	c.crash()
	return c.MemFS.Create(name, category)
}

func (c *cloningFS) Rename(oldname, newname string) error {
	c.crash()
	return c.MemFS.Rename(oldname, newname)
}

func (c *cloningFS) Remove(name string) error {
	c.crash()
	return c.MemFS.Remove(name)
}

// crashModes are the store configurations the crash tests run under: with
// and without a changelog, and with Sync.
var crashModes = []struct {
	name         string
	logged, sync bool
}{
	{"unlogged, WAL unsynced", false, false},
	{"logged, no WAL", true, false},
	{"logged, WAL synced", true, true},
}
