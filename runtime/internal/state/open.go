package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// defaultMemTableBytes is the largest memtable of a store (pebble starts at
// 256 KiB and doubles, so an idle store stays small). BenchmarkMemTable found
// no speed difference between 4, 16 and 64 MiB on the streams workload
// (within ±10%, 4 MiB as often ahead as behind), so the smallest wins: an
// instance hosts dozens of stores, each with up to
// MemTableStopWritesThreshold memtables. Larger restore batches are not
// hurt: pebble flushes a batch over half a memtable as it is, without
// copying it into a memtable.
const defaultMemTableBytes = 4 << 20

// lockFile is the name of pebble's lock file in a store directory. A rebuild
// removes everything else while holding the lock, so no other process can
// open the store half-wiped.
const lockFile = "LOCK"

// Open opens the store in opts.Dir, creating it if missing.
//
// Open trusts nothing it cannot check. It wipes the directory, reopens it
// empty and reports why through Rebuilt when: pebble fails to open the
// database for any reason other than the environment (a torn or corrupt
// MANIFEST, WAL or table, a crash during creation); the identity found is not
// opts.Identity (a foreign directory) or its key layout not opts.KeyLayout;
// the store has data but no checkpoint,
// or metadata it cannot decode; a table's footer or properties cannot be read;
// an earlier read or pebble's background work found the store corrupt (and
// left a BRAID-CORRUPT file in it). It never wipes for the environment: a
// directory that cannot be created, locked or written, a full disk or a lock
// held by another process is an error naming the directory.
//
// Layout decision (measured by bench_test.go, figures in its header): one
// pebble per task store, in its own directory, rather than one pebble per
// instance with a key prefix per store. On the workload (8 stores,
// read-modify-write of counters over 10,000 keys each, commit every 1,000
// writes) one shared database reached 0.68-0.96 of per-store throughput and
// never more, since its stores share one memtable, WAL and commit pipeline;
// on larger state per-store stays ahead with its own caches. Not being
// faster, the shared database loses on isolation: with one database per
// store a rebuild, a restore or a task moving to another instance is one
// directory, and one corrupt store cannot take the others with it.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("state: Options.Dir is empty")
	}
	if opts.Identity == "" {
		return nil, fmt.Errorf("state: Options.Identity is empty (store %s)", opts.Dir)
	}
	if opts.BlockCacheBytes <= 0 {
		opts.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if opts.fs == nil {
		opts.fs = vfs.Default
	}
	if opts.memTableBytes == 0 {
		opts.memTableBytes = defaultMemTableBytes
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("store", opts.Identity, "dir", opts.Dir)

	// A store created in a directory of its own syncs its creation once,
	// at the end (creatingFS).
	var creating *atomic.Bool
	if _, err := opts.fs.Stat(opts.Dir); errors.Is(err, fs.ErrNotExist) {
		creating = new(atomic.Bool)
		creating.Store(true)
	}
	if err := opts.fs.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: create store dir %s: %w", opts.Dir, err)
	}
	// Take pebble's directory lock ourselves and hand it to pebble.Open: a
	// lock failure is then told apart from a corrupt database (it must never
	// cause a wipe), and the lock is held across a wipe and the reopen.
	lock, err := pebble.LockDirectory(opts.Dir, opts.fs)
	if err != nil {
		return nil, lockError("lock store dir", opts.Dir, err)
	}

	s := &Store{
		opts:      opts,
		dir:       opts.Dir,
		identity:  opts.Identity,
		keyLayout: opts.KeyLayout,
		sync:      pebble.NoSync,
		walOff:    opts.Logged && !opts.Sync,
		now:       opts.now,
		flushedAt: opts.now(),
		log:       log,
		fs:        opts.fs,
		lock:      lock,
		creating:  creating,
	}
	if opts.cache != nil {
		opts.cache.Ref()
		s.cache = opts.cache
	} else {
		s.cache = pebble.NewCache(opts.BlockCacheBytes)
	}
	if opts.Sync {
		s.sync = pebble.Sync
	}
	err = s.open(opts)
	if err == nil && creating != nil {
		if err = syncCreated(opts.fs, opts.Dir, creating); err != nil {
			s.closeDB()
		}
	}
	if err != nil {
		s.cache.Unref()
		_ = lock.Close()
		return nil, err
	}
	s.batch = s.db.NewIndexedBatch()
	return s, nil
}

// open opens pebble and checks the metadata, rebuilding once if either
// cannot be trusted.
func (s *Store) open(opts Options) error {
	reason, err := s.tryOpen(opts)
	if err != nil || reason == "" {
		return err
	}
	s.rebuilt = reason
	s.log.Warn("state: rebuilding store, restore it from its changelog", "reason", reason)
	if err := wipe(opts.fs, s.dir); err != nil {
		return fmt.Errorf("state: rebuild of %s (%s): %w", s.dir, reason, err)
	}
	reason, err = s.tryOpen(opts)
	if err != nil {
		return fmt.Errorf("state: rebuild of %s: %w", s.dir, err)
	}
	if reason != "" {
		s.closeDB()
		return fmt.Errorf("state: rebuild of %s left a store that cannot be trusted: %s", s.dir, reason)
	}
	return nil
}

// tryOpen opens pebble and validates the store's metadata. It returns a
// non-empty reason (and no open database) when the directory must be wiped,
// and an error when the store cannot be opened without wiping being the
// answer.
func (s *Store) tryOpen(opts Options) (reason string, err error) {
	if b, err := readFile(s.fs, s.fs.PathJoin(s.dir, corruptFile)); err == nil {
		return fmt.Sprintf("torn: found corrupt before: %s", b), nil
	}
	// Each pebble instance gets its own sticky error: one reported by the
	// instance a rebuild threw away must not fail the new one.
	s.bg = &stickyError{}
	db, err := openPebble(s.dir, s.pebbleOptions(opts, s.bg))
	if err != nil {
		if environmental(err) {
			return "", fmt.Errorf("state: open store %s: %w", s.dir, err)
		}
		return fmt.Sprintf("torn: pebble cannot open it: %v", err), nil
	}
	s.db = db
	reason, err = s.checkTables()
	if err == nil && reason == "" {
		reason, err = s.checkMeta()
	}
	if err != nil || reason != "" {
		s.closeDB()
	}
	return reason, err
}

// checkTables opens every table's footer and properties block, which is
// cheap (one small read per table, kept in pebble's table cache) and finds
// a table that was torn, truncated or replaced, which pebble.Open does not
// read. A flipped bit inside a data block is found by the read that hits
// it: that read fails with a corruption error and marks the store for
// rebuild at the next Open (see markCorrupt).
func (s *Store) checkTables() (reason string, err error) {
	if _, err := s.db.SSTables(pebble.WithProperties()); err != nil {
		if environmental(err) {
			return "", fmt.Errorf("state: read tables of %s: %w", s.dir, err)
		}
		return fmt.Sprintf("torn: table unreadable: %v", err), nil
	}
	return "", nil
}

// checkMeta reads the identity, format, key layout and checkpoint,
// initialising them in an empty store.
func (s *Store) checkMeta() (reason string, err error) {
	read := func(key []byte) ([]byte, bool, error) {
		v, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		defer closer.Close()
		return append([]byte(nil), v...), true, nil
	}
	id, idOK, err1 := read(keyIdentity)
	format, formatOK, err2 := read(keyFormat)
	cpb, cpOK, err3 := read(keyCheckpoint)
	layout, _, err4 := read(keyLayout)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		if environmental(err) {
			return "", fmt.Errorf("state: read metadata of %s: %w", s.dir, err)
		}
		return fmt.Sprintf("torn: metadata unreadable: %v", err), nil
	}

	if !idOK && !formatOK && !cpOK {
		empty, err := s.isEmpty()
		if err != nil {
			if environmental(err) {
				return "", fmt.Errorf("state: scan %s: %w", s.dir, err)
			}
			return fmt.Sprintf("torn: unreadable: %v", err), nil
		}
		if !empty {
			return "store has data but no identity or checkpoint", nil
		}
		return "", s.initMeta()
	}
	switch {
	case idOK && string(id) != s.identity:
		return fmt.Sprintf("foreign: written for %q, not %q", id, s.identity), nil
	case !idOK:
		return "store has no identity", nil
	case !formatOK:
		return "store has no format version", nil
	case len(format) != 4 || binary.BigEndian.Uint32(format) != formatVersion:
		return fmt.Sprintf("unknown format %x (want %d)", format, formatVersion), nil
	case !cpOK:
		return "store has data but no checkpoint", nil
	case string(layout) != s.keyLayout:
		return fmt.Sprintf("keys laid out as %q, not %q", layout, s.keyLayout), nil
	}
	cp, err := decodeCheckpoint(cpb)
	if err != nil {
		return "bad checkpoint: " + err.Error(), nil
	}
	s.setCheckpoint(cp)
	return "", nil
}

// isEmpty reports whether the database holds no key at all.
func (s *Store) isEmpty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	return !found, errors.Join(it.Error(), it.Close())
}

// initMeta writes a new store's identity, format, key layout and zero
// checkpoint as one synced batch, so a store is either fully described or
// empty.
func (s *Store) initMeta() error {
	b := s.db.NewBatch()
	defer b.Close()
	var format [4]byte
	binary.BigEndian.PutUint32(format[:], formatVersion)
	_ = b.Set(keyIdentity, []byte(s.identity), nil)
	_ = b.Set(keyFormat, format[:], nil)
	if s.keyLayout != "" {
		_ = b.Set(keyLayout, []byte(s.keyLayout), nil)
	}
	_ = b.Set(keyCheckpoint, encodeCheckpoint(zeroCheckpoint), nil)
	// Without WAL a crash before the first flush leaves an empty store,
	// which the next Open describes again.
	sync := s.sync
	if !s.walOff {
		s.sync = pebble.Sync
	}
	err := s.apply(b)
	s.sync = sync
	if err != nil {
		return err
	}
	s.setCheckpoint(zeroCheckpoint)
	return nil
}

func (s *Store) closeDB() {
	if s.db != nil && s.broken == nil {
		_ = s.db.Close()
	}
	s.db = nil
}

// pebbleOptions are the pebble settings for a streams state store.
func (s *Store) pebbleOptions(opts Options, bg *stickyError) *pebble.Options {
	fsys := opts.fs
	if s.creating != nil {
		fsys = creatingFS{FS: fsys, creating: s.creating}
	}
	po := &pebble.Options{
		FS:    fsys,
		Lock:  s.lock,
		Cache: s.cache,
		// The newest format with row-based sstables (Pebblev4), not the
		// columnar blocks of the formats after it: measured on
		// 2026-12-07 (braid bench restore, alternating runs), columnar
		// tables cost enough to write that a restore ran at 0.94-0.96
		// of a raw consumer writing pebble's default format, and at
		// 1.02-1.06 with this one; the count and windowed benches, which
		// read what they wrote, moved within noise. A store made at a
		// newer format keeps it: pebble never moves a format back.
		FormatMajorVersion: pebble.FormatFlushableIngestExcises,
		// See defaultMemTableBytes.
		MemTableSize:                opts.memTableBytes,
		MemTableStopWritesThreshold: 4,
		// A logged store without Sync runs without the WAL, as Kafka
		// Streams runs RocksDB: the changelog is the durable copy, and
		// the checkpoint rides in the same batch as the data, so a flush
		// writes both or neither, and a crash leaves the store at its
		// last flush, which restore replays forward. pebble marks
		// DisableWAL untested; TestCrashLeavesCheckpointAndDataAgreeing
		// is our proof. Any other store keeps the WAL (fsynced with
		// Sync), which makes each commit atomic on disk: a torn tail is
		// discarded whole on replay.
		DisableWAL: s.walOff,
		Logger:     pebbleLogger{s.log},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) { s.backgroundError(bg, err) },
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				s.backgroundError(bg, info.Details)
			},
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				s.log.Warn("state: pebble write stall", "reason", info.Reason)
			},
		},
	}
	// Bloom filters: aggregations read many keys that are not there yet
	// (the first record of a key), and a filter answers those without
	// touching a data block.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].FilterType = pebble.TableFilter
	}
	return po
}

// backgroundError records a flush or compaction failure that will not go
// away by itself, so the next Commit fails the task instead of piling
// writes into memtables that cannot be flushed (pebble retries and, once
// its memtables are full, stalls writes forever).
func (s *Store) backgroundError(bg *stickyError, err error) {
	s.log.Error("state: pebble background error", "err", err)
	if pebble.IsCorruptionError(err) {
		s.markCorrupt(err)
	}
	if environmental(err) || pebble.IsCorruptionError(err) {
		bg.set(err)
	}
}

// corruptFile is written into a store's directory when pebble reports
// corrupt data after Open trusted the store. The next Open finds it and
// rebuilds, so a task restart does not trust the store again and fail on the
// same block forever.
const corruptFile = "BRAID-CORRUPT"

// markCorrupt writes corruptFile, best effort: if the disk cannot take it
// either, the error the caller gets still says corruption (IsCorruption).
func (s *Store) markCorrupt(cause error) {
	f, err := s.fs.Create(s.fs.PathJoin(s.dir, corruptFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		s.log.Error("state: cannot mark store corrupt", "err", err)
		return
	}
	_, err = f.Write([]byte(cause.Error()))
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		s.log.Error("state: cannot mark store corrupt", "err", err)
	}
}

// readFile reads a small file through fsys.
func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// openPebble calls pebble.Open, turning a panic (pebble's reaction to some
// corrupt files, and our Logger's Fatalf) into an error.
func openPebble(dir string, po *pebble.Options) (db *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("pebble panicked opening %s: %v", dir, r)
		}
	}()
	return pebble.Open(dir, po)
}

// environmental reports whether err is trouble with the disk or the
// operating system rather than with the store's contents: such errors fail
// the task and are never a reason to wipe.
func environmental(err error) bool {
	for _, target := range []error{
		fs.ErrPermission, syscall.EACCES, syscall.EPERM, syscall.EROFS,
		syscall.ENOSPC, syscall.EIO, syscall.ENOTDIR, syscall.EMFILE,
		syscall.ENFILE, syscall.ENOMEM, syscall.EAGAIN, syscall.EBUSY,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return errors.Is(err, errDiskQuota)
}

// wipe removes everything in dir except pebble's lock file, which the caller
// holds.
func wipe(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == lockFile {
			continue
		}
		if err := fsys.RemoveAll(fsys.PathJoin(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// ErrLocked says a directory is locked: a store in it is open, or an App
// holds it (LockDir), in this process or another one. Open, Destroy and
// LockDir wrap it.
var ErrLocked = errors.New("in use in this or another process (its lock is held)")

// lockError wraps a failure to lock a store's directory, with ErrLocked
// when the lock is held: by this process (pebble keeps a list of the
// locks it holds) or by another (fcntl refuses with EAGAIN or EACCES). A
// lock file that cannot be created (a *fs.PathError) is not that.
func lockError(op, dir string, err error) error {
	var pe *fs.PathError
	held := !errors.As(err, &pe) && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process"))
	if held {
		return fmt.Errorf("state: %s %s: %w: %w", op, dir, ErrLocked, err)
	}
	return fmt.Errorf("state: %s %s: %w", op, dir, err)
}

// dirLockFile is the lock file LockDir takes in a directory.
const dirLockFile = ".lock"

// LockDir creates dir if missing and takes a lock on it, held until the
// returned Closer is closed or the process ends, so that two owners of
// the directory, in one process or two, are told apart: the second gets
// an error wrapping ErrLocked. An App locks its application's state dir
// with it before it opens any store there.
func LockDir(dir string) (io.Closer, error) {
	if err := vfs.Default.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: create dir %s: %w", dir, err)
	}
	l, err := vfs.Default.Lock(vfs.Default.PathJoin(dir, dirLockFile))
	if err != nil {
		return nil, lockError("lock dir", dir, err)
	}
	return l, nil
}

// Destroy removes a store's directory. It fails with ErrLocked if the
// store is open (its lock is held), and succeeds if the directory does
// not exist.
func Destroy(dir string) error {
	if _, err := vfs.Default.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return lockError("destroy", dir, err)
	}
	// Remove the contents while holding the lock, then the directory.
	err = wipe(vfs.Default, dir)
	err = errors.Join(err, lock.Close())
	if err == nil {
		err = vfs.Default.RemoveAll(dir)
	}
	if err != nil {
		return fmt.Errorf("state: destroy %s: %w", dir, err)
	}
	return nil
}

// stickyError keeps the first error reported from pebble's background
// goroutines.
type stickyError struct {
	mu  sync.Mutex
	err error
	// done is closed when err is set, for a wait on pebble that would
	// otherwise outlast the failure (see Store.flush).
	done chan struct{}
}

func (e *stickyError) set(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
		close(e.doneLocked())
	}
	e.mu.Unlock()
}

// failed returns a channel closed once an error is set.
func (e *stickyError) failed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.doneLocked()
}

func (e *stickyError) doneLocked() chan struct{} {
	if e.done == nil {
		e.done = make(chan struct{})
	}
	return e.done
}

func (e *stickyError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// pebbleLogger sends pebble's messages to slog. Pebble calls Fatalf when it
// cannot go on (a failed WAL sync, for one) and expects the process to end;
// this logger panics instead, and the store recovers the panic where it
// called pebble, marks itself unusable and returns an error, so the task
// fails rather than the process.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble: fatal: " + msg)
	panic(msg)
}
