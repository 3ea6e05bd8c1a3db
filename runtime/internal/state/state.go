// Package state owns a task's local key-value state: one pebble database per
// task store, in the store's own directory (<state-dir>/<app-id>/<task-id>/<store>),
// holding the store's data together with a checkpoint that says which changelog
// records that data already contains.
//
// The package is shaped around one rule (ARCHITECTURE.md, "The commit"):
// local state is transactional. Writes made while a commit interval (a Kafka
// transaction under exactly-once) is open go into a pending pebble batch that
// reads see but disk does not; Commit applies that batch and the new checkpoint (the changelog
// offset and the task's stream time) as one pebble batch, so the checkpoint can
// never disagree with the data it describes. A logged store runs pebble without
// its WAL (Options.Logged), so a crash loses what was applied since the last
// flush, data and checkpoint together; the changelog still holds it, so restart
// replays only the changelog tail past the stored offset instead of wiping the
// store. Close flushes, and a store's last flush is never much older than
// maxCheckpointAge while it commits.
//
// Everything Open cannot trust is thrown away rather than repaired: a directory
// written for another store (identity mismatch), a store with data but no
// checkpoint, an unknown format, or a database pebble reports corrupt are wiped
// and reopened empty, and Store.Rebuilt says why, so the caller restores the
// store from its changelog. Trouble with the environment (a directory that
// cannot be created or written, a full disk, a lock held by another process) is
// never a reason to wipe: it is an error naming the directory, and the task
// fails.
//
// Why one pebble per store rather than one per instance with key prefixes: see
// the comment on Open and the figures in bench_test.go. In short, the shared
// database was slower (0.68-0.96x) on the streams workload, and per-store
// directories keep isolation simple: wiping, restoring or moving one store
// never touches another.
package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultBlockCacheBytes is the block cache a store gets when
// Options.BlockCacheBytes is zero, and what an App gives each of its stores
// by default (streams.Config.StoreBlockCacheBytes). Pebble's own default is
// 8 MB, which keeps cold point reads at a third of their speed with a large
// cache (see /work/shared/notes/baselines.md: 46k vs 121k-173k Gets/s).
//
// The cache is per store, not shared by an App's stores: sharing one cache
// between per-store databases measured slower (bench_test.go). An instance
// with many stores can in the worst case hold 64 MiB for each, but pebble
// allocates cache memory on demand, block by block, so a store whose hot
// blocks are smaller costs only those; the bound is reached only by stores
// large and hot enough for the cache to pay for itself. Kafka Streams makes
// the same choice with RocksDB: a 50 MB block cache per store by default.
const DefaultBlockCacheBytes = 64 << 20

// Options configure Open.
type Options struct {
	// Dir is the store's directory, created if missing. The directory belongs
	// to the store: a rebuild removes everything in it.
	Dir string
	// Identity names the store, e.g. "app/0_1/counts". It is written on first
	// open; a directory that holds a different identity is foreign and is
	// rebuilt. Required.
	Identity string
	// KeyLayout names how the caller lays out its keys, when it has more
	// than one way. It is written on first open; a directory written with
	// another layout (a store without one has "") is rebuilt, not misread:
	// the changelog holds the keys in their own form.
	KeyLayout string
	// BlockCacheBytes sizes pebble's block cache; 0 means
	// DefaultBlockCacheBytes.
	BlockCacheBytes int64
	// Sync makes Commit and Restore fsync pebble's WAL before returning. The
	// default (false) is deliberate: the changelog is the durable copy, and the
	// checkpoint travels in the same batch as the data, so a write the OS loses
	// takes its checkpoint with it and restore simply replays more.
	Sync bool
	// Logged says the store has a changelog it is restored from. Such a
	// store, unless Sync, runs pebble without its WAL, as Kafka Streams
	// runs RocksDB: a commit lands in the memtable only, and what is on
	// disk is the last flush, data and checkpoint together (see
	// pebbleOptions). A crash takes the store back to that flush, never
	// more than maxCheckpointAge old while the store commits, and restore
	// replays the changelog from there. Close flushes.
	Logged bool
	// Logger receives rebuild reasons and pebble's own messages. May be nil.
	Logger *slog.Logger

	// fs replaces the file system, for tests that inject errors. nil means
	// the OS file system.
	fs vfs.FS
	// cache, if set, is shared with other stores instead of a cache of
	// BlockCacheBytes of the store's own (measured in bench_test.go).
	cache *pebble.Cache
	// memTableBytes overrides defaultMemTableBytes (for bench_test.go).
	memTableBytes uint64
	// now replaces time.Now, for tests of maxCheckpointAge.
	now func() time.Time
}

// Checkpoint is what a store's data already contains of its changelog.
type Checkpoint struct {
	// ChangelogOffset is the offset of the next changelog record to apply;
	// 0 means restore from the start.
	ChangelogOffset int64
	// StreamTime is the task's stream time when the data was committed; -1
	// means unknown.
	StreamTime int64
}

// zeroCheckpoint is the checkpoint of an empty store.
var zeroCheckpoint = Checkpoint{ChangelogOffset: 0, StreamTime: -1}

// Entry is one changelog record to restore: a nil Value deletes Key.
type Entry struct {
	Key, Value []byte
}

// Key layout. Every key in the database starts with one byte saying what it
// is, so that user scans (bounded to userPrefix) can never see metadata and a
// store's metadata can be read without scanning user data.
const (
	metaPrefix byte = 0x00
	userPrefix byte = 0x01
	// userEnd is the exclusive upper bound of all user keys.
	userEnd byte = 0x02
)

var (
	keyIdentity   = []byte{metaPrefix, 'i', 'd', 'e', 'n', 't', 'i', 't', 'y'}
	keyFormat     = []byte{metaPrefix, 'f', 'o', 'r', 'm', 'a', 't'}
	keyCheckpoint = []byte{metaPrefix, 'c', 'h', 'e', 'c', 'k', 'p', 'o', 'i', 'n', 't'}
	keyLayout     = []byte{metaPrefix, 'l', 'a', 'y', 'o', 'u', 't'}
)

// formatVersion is the layout of keys and metadata written by this package.
// A store written in another format is rebuilt, not converted: the changelog
// is the upgrade path.
const formatVersion uint32 = 1

// Store is one task store. Its methods are meant for the goroutine that owns
// the task; only Checkpoint, Rebuilt and ApproxSize may be called from other
// goroutines (for stats) at the same time.
type Store struct {
	// opts are the options the store was opened with, for a reopen
	// (LoadSnapshot).
	opts      Options
	dir       string
	identity  string
	keyLayout string
	sync      *pebble.WriteOptions
	// walOff says pebble runs without its WAL (Options.Logged without
	// Sync): what Commit and Restore apply is on disk only once flushed.
	walOff bool
	// now is time.Now but in tests. flushedAt is when the last flush
	// for the age bound was asked for (or the store opened), unflushed
	// whether a batch was applied since; ageFlush is that flush's
	// completion, for tests.
	now       func() time.Time
	flushedAt time.Time
	unflushed bool
	ageFlush  <-chan struct{}
	log       *slog.Logger
	rebuilt   string

	fs vfs.FS
	// creating, set while Open creates the store in a new directory,
	// makes pebble skip its syncs until the one at the end of Open
	// (creatingFS); nil for a store whose directory existed.
	creating *atomic.Bool
	db       *pebble.DB
	lock     *pebble.Lock
	cache    *pebble.Cache
	bg       *stickyError

	// batch holds the pending writes. It is indexed so that Get and Range
	// see them merged with the committed data.
	batch   *pebble.Batch
	pending int
	// writeOnly holds the writes of PutWriteOnly, by reference: reads do
	// not see them, and Commit copies them into the batch it applies,
	// ahead of batch's writes. Indexing a write costs most of a Put (a
	// skiplist insert whose comparisons grow with the batch), and growing
	// a batch by doubling copies it again and again; a caller that keeps
	// what it wrote in memory pays neither. They are kept in chunks of
	// writeOnlyChunk, so that a large commit's list never grows by
	// copying; writeOnlyCount is how many there are, writeOnlyBytes the
	// size of their keys and values.
	writeOnly                      [][]writeOnlyEntry
	writeOnlyCount, writeOnlyBytes int
	// scans counts the Range and Prefix calls in progress. Their iterators
	// read the batch, so Commit (which applies it) refuses to run inside a
	// scan callback, and Abort inside one retires the batch to retired, to
	// be closed when the last scan ends.
	scans   int
	retired []*pebble.Batch
	// keyBuf is scratch for prefixed keys: pebble copies keys into batches
	// and reads them only during the call.
	keyBuf []byte

	// broken is set when pebble failed in a way that leaves the database
	// unusable (a failed WAL write); every later call returns it.
	broken error

	mu     sync.Mutex // guards cp, closed and rebuilt
	cp     Checkpoint
	closed bool
	// dbMu is held shared by the reads other goroutines make (committed.go,
	// ApproxSize) for as long as they use db, and exclusively by Close while
	// it closes db: pebble panics on a closed database.
	dbMu sync.RWMutex
}

type writeOnlyEntry struct{ key, value []byte }

const writeOnlyChunk = 4096

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("state: store closed")

// Checkpoint returns the last committed checkpoint; {0, -1} for an empty
// store. Without Options.Sync it may be ahead of what a crash would leave on
// disk, but whatever is on disk agrees with its own data.
func (s *Store) Checkpoint() Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cp
}

// Rebuilt says why Open threw the directory's old contents away, or "" if it
// did not. A rebuilt store is empty with checkpoint {0, -1}: restore it from
// the start of its changelog.
func (s *Store) Rebuilt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rebuilt
}

// BlockCacheBytes returns the size of the block cache pebble was opened
// with.
func (s *Store) BlockCacheBytes() int64 { return s.cache.MaxSize() }

// Identity and KeyLayout are the store's, as opened: a snapshot is of use
// to it only when written with both (LoadSnapshot).
func (s *Store) Identity() string  { return s.identity }
func (s *Store) KeyLayout() string { return s.keyLayout }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// usable returns the error that stops any operation, if any.
func (s *Store) usable() error {
	if s.batch == nil {
		return ErrClosed
	}
	if s.broken != nil {
		return s.broken
	}
	return nil
}

// userKey returns key with the user prefix, in s.keyBuf. The result is valid
// until the next call.
func (s *Store) userKey(key []byte) []byte {
	s.keyBuf = append(append(s.keyBuf[:0], userPrefix), key...)
	return s.keyBuf
}

// Get returns the value of key, seeing pending writes. The returned slice is
// a copy the caller owns; an empty stored value is a non-nil empty slice.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	v, closer, err := s.batch.Get(s.userKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.readError("get", err)
	}
	value = make([]byte, len(v))
	copy(value, v)
	_ = closer.Close()
	return value, true, nil
}

// Put sets key to value in the pending batch (pebble copies both). A nil
// value is stored as an empty value; use Delete to remove a key.
func (s *Store) Put(key, value []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.batch.Set(s.userKey(key), value, nil); err != nil {
		return fmt.Errorf("state: put in %s: %w", s.dir, err)
	}
	s.pending++
	return nil
}

// PutWriteOnly sets key to value in the pending writes like Put, but Get,
// Range and Prefix do not see it until Commit, and it keeps key and value
// rather than copying them: the caller must not change them before Commit
// or Abort. It skips what a Put costs once the pending batch is large (the
// batch's index, and copying the batch each time it grows), for keys the
// caller never reads back before the commit: a join buffer, which indexes
// its records in memory. Commit applies the write-only writes before the
// others, so a key written here must not be deleted or written by the other
// calls earlier in the same commit; later is fine.
func (s *Store) PutWriteOnly(key, value []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	n := len(s.writeOnly)
	if n == 0 || len(s.writeOnly[n-1]) == writeOnlyChunk {
		s.writeOnly = append(s.writeOnly, make([]writeOnlyEntry, 0, writeOnlyChunk))
		n++
	}
	s.writeOnly[n-1] = append(s.writeOnly[n-1], writeOnlyEntry{key: key, value: value})
	s.writeOnlyCount++
	s.writeOnlyBytes += len(key) + len(value)
	s.pending++
	return nil
}

// Delete removes key in the pending batch.
func (s *Store) Delete(key []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.batch.Delete(s.userKey(key), nil); err != nil {
		return fmt.Errorf("state: delete in %s: %w", s.dir, err)
	}
	s.pending++
	return nil
}

// DeleteRange removes every key in [start, end) in the pending batch: one
// range tombstone, however many keys it covers. Time-segmented stores drop
// an expired segment this way; pebble reclaims the space in compactions.
func (s *Store) DeleteRange(start, end []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if bytes.Compare(start, end) >= 0 {
		return nil
	}
	lower := append([]byte{userPrefix}, start...)
	upper := append([]byte{userPrefix}, end...)
	if err := s.batch.DeleteRange(lower, upper, nil); err != nil {
		return fmt.Errorf("state: delete range in %s: %w", s.dir, err)
	}
	s.pending++
	return nil
}

// Pending returns the number of Put, PutWriteOnly, Delete and DeleteRange
// calls since the last Commit or Abort (not the number of distinct keys).
func (s *Store) Pending() int { return s.pending }

// Range calls fn for each key in [start, end) in key order, pending writes
// included, until fn returns false. A nil start or end is unbounded. The
// slices passed to fn are valid only during the call. fn may Put and Delete;
// the scan does not see those writes. fn may Abort (see Abort); Commit and
// Close inside fn return an error.
func (s *Store) Range(start, end []byte, fn func(key, value []byte) bool) error {
	lower := append([]byte{userPrefix}, start...)
	var upper []byte
	if end == nil {
		upper = []byte{userEnd}
	} else {
		if start != nil && bytes.Compare(start, end) >= 0 {
			return s.usable()
		}
		upper = append([]byte{userPrefix}, end...)
	}
	return s.scan(lower, upper, fn)
}

// Prefix calls fn for each key that starts with prefix, in key order, like
// Range. A nil or empty prefix scans every key.
func (s *Store) Prefix(prefix []byte, fn func(key, value []byte) bool) error {
	lower := append([]byte{userPrefix}, prefix...)
	return s.scan(lower, prefixEnd(lower), fn)
}

// prefixEnd returns the smallest key greater than every key starting with p.
// p starts with userPrefix, so the result is at most userEnd.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{userEnd} // unreachable: p[0] is userPrefix
}

func (s *Store) scan(lower, upper []byte, fn func(key, value []byte) bool) (err error) {
	if err := s.usable(); err != nil {
		return err
	}
	// The iterator reads the batch as it is now: pebble fixes an indexed
	// batch iterator's view at creation, which is what lets fn write.
	it, err := s.batch.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return s.readError("scan", err)
	}
	s.scans++
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = s.readError("scan", cerr)
		}
		if s.scans--; s.scans == 0 {
			for _, b := range s.retired {
				_ = b.Close()
			}
			s.retired = s.retired[:0]
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return s.readError("scan", verr)
		}
		if !fn(it.Key()[1:], v) {
			return nil
		}
	}
	if err := it.Error(); err != nil {
		return s.readError("scan", err)
	}
	return nil
}

// readError wraps a pebble read error with the store's directory. A
// corruption error marks the store so that the next Open rebuilds it, and
// stays recognisable (IsCorruption).
func (s *Store) readError(op string, err error) error {
	if pebble.IsCorruptionError(err) {
		s.markCorrupt(err)
	}
	return fmt.Errorf("state: %s in %s: %w", op, s.dir, err)
}

// IsCorruption reports whether err says the store's files are corrupt. The
// store has then marked itself: Close it and Open it again, and Open
// rebuilds it empty for a restore from the changelog.
func IsCorruption(err error) bool { return pebble.IsCorruptionError(err) }

// Commit applies the pending writes and cp in one pebble batch, so either
// both are in pebble or neither is. On error the stored checkpoint is
// unchanged and the pending writes are kept (not applied); the caller fails
// the task. If pebble failed writing its WAL, the store is unusable from then
// on and every later call returns the same error.
func (s *Store) Commit(cp Checkpoint) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.scans > 0 {
		return fmt.Errorf("state: commit of %s inside a scan callback", s.dir)
	}
	if s.pending == 0 && cp == s.Checkpoint() {
		s.FlushIfOld()
		return nil
	}
	// A flush or compaction that failed for lack of space or a read-only or
	// corrupt disk means what we commit now may never leave the memtable; fail
	// before applying so the task stops while the offset on disk is still
	// one that matches the data.
	if err := s.bg.get(); err != nil {
		return fmt.Errorf("state: commit of %s: pebble failed in the background: %w", s.dir, err)
	}
	b := s.batch
	if s.writeOnlyCount > 0 {
		// One batch, so that both kinds of writes and the checkpoint land
		// together, allocated once at its final size.
		var err error
		if b, err = s.writeOnlyBatch(); err != nil {
			return fmt.Errorf("state: commit of %s: %w", s.dir, err)
		}
		defer b.Close()
	}
	if err := b.Set(keyCheckpoint, encodeCheckpoint(cp), nil); err != nil {
		return fmt.Errorf("state: commit of %s: %w", s.dir, err)
	}
	// The checkpoint Set stays in the batch if Apply fails: a retried Commit
	// sets it again (the later Set wins) and Abort drops it with the rest.
	if err := s.apply(b); err != nil {
		return err
	}
	s.setCheckpoint(cp)
	_ = s.batch.Close()
	s.batch = s.db.NewIndexedBatch()
	s.dropWriteOnly()
	s.pending = 0
	return nil
}

// writeOnlyBatch returns a batch of the write-only writes followed by the
// pending batch's.
func (s *Store) writeOnlyBatch() (*pebble.Batch, error) {
	// A record takes its kind, two varint lengths and the user prefix.
	size := len(s.batch.Repr()) + s.writeOnlyBytes + 12*s.writeOnlyCount + 64
	b := s.db.NewBatchWithSize(size)
	for _, chunk := range s.writeOnly {
		for _, e := range chunk {
			if err := b.Set(s.userKey(e.key), e.value, nil); err != nil {
				b.Close()
				return nil, err
			}
		}
	}
	// Copying the indexed batch's records is a memmove: b keeps no index.
	if err := b.Apply(s.batch, nil); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// dropWriteOnly forgets the write-only writes, keeping one chunk.
func (s *Store) dropWriteOnly() {
	if len(s.writeOnly) > 0 {
		first := s.writeOnly[0]
		clear(first)
		clear(s.writeOnly)
		s.writeOnly = append(s.writeOnly[:0], first[:0])
	}
	s.writeOnlyCount, s.writeOnlyBytes = 0, 0
}

// apply commits b. Pebble treats a failed WAL write as fatal: it panics, or
// calls Logger.Fatalf, which our logger turns into a panic. Either way the
// database is unusable afterwards, so the store is marked broken and the
// error returned instead of taking the process down.
func (s *Store) apply(b *pebble.Batch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.broken = fmt.Errorf("state: write to %s failed, store unusable: %v", s.dir, r)
			err = s.broken
		}
	}()
	if err := s.db.Apply(b, s.sync); err != nil {
		return fmt.Errorf("state: commit of %s: %w", s.dir, err)
	}
	s.unflushed = true
	s.FlushIfOld()
	return nil
}

// maxCheckpointAge bounds how old the checkpoint on disk of a store
// without WAL may grow while the store commits: a crash takes the store
// back to it, and the restore that follows needs every changelog record
// written since, tombstones included. A compacted changelog keeps a
// tombstone for delete.retention.ms (24 hours by Kafka's default) once
// cleaned, so a restore from an older checkpoint could miss a delete;
// five minutes is well inside that, and costs one flush per store per five
// minutes at most (pebble flushes a full memtable sooner by itself). A
// checkpoint older than the changelog's log start is restored in full
// (runtime/streams, skipDeletedChangelog).
const maxCheckpointAge = 5 * time.Minute

// FlushIfOld starts a flush in the background if the store runs without
// WAL, applied something since its last one and that was asked for
// maxCheckpointAge ago or more. Commit and Restore call it; a caller that
// skips Commit when it has nothing new should call it instead, so that
// an idle store's last commit reaches the disk too. A flush that fails is
// reported by pebble's background error and fails the next Commit.
func (s *Store) FlushIfOld() {
	if !s.walOff || !s.unflushed || s.usable() != nil || s.now().Sub(s.flushedAt) < maxCheckpointAge {
		return
	}
	done, err := s.db.AsyncFlush()
	if err != nil {
		s.log.Warn("state: cannot start a flush", "err", err)
		return
	}
	s.flushedAt, s.unflushed, s.ageFlush = s.now(), false, done
}

func (s *Store) setCheckpoint(cp Checkpoint) {
	s.mu.Lock()
	s.cp = cp
	s.mu.Unlock()
}

// Abort drops the pending writes, as when a transaction aborts. Inside a
// scan callback it takes effect at once for every later call; the scan
// itself goes on over the view it started with.
func (s *Store) Abort() {
	if s.batch == nil {
		return
	}
	if s.scans > 0 {
		s.retired = append(s.retired, s.batch)
	} else {
		_ = s.batch.Close()
	}
	s.batch = s.db.NewIndexedBatch()
	s.dropWriteOnly()
	s.pending = 0
}

// Restore writes changelog entries and cp in one batch, straight to pebble.
// It is the restore and standby path: one call per polled chunk of the
// changelog, with no pending writes (it returns an error if there are any,
// since it is unclear whether they should land before or after the chunk).
func (s *Store) Restore(entries []Entry, cp Checkpoint) error {
	return s.write("restore", false, entries, cp)
}

// Clear removes every key and sets cp, in one batch: a store whose
// checkpoint the changelog cannot continue from (its log start is past
// it) is emptied for a restore from the log start. Like Restore, it
// refuses to run with pending writes.
func (s *Store) Clear(cp Checkpoint) error {
	return s.write("clear", true, nil, cp)
}

// Replace makes entries the store's whole contents, with cp, in one batch:
// a snapshot of state kept in memory (a join buffer's), which a crash
// leaves whole or not at all. Like Restore, it refuses to run with pending
// writes.
func (s *Store) Replace(entries []Entry, cp Checkpoint) error {
	return s.write("replace", true, entries, cp)
}

// write applies one batch: every user key removed first when clear is
// set, then entries, then cp.
func (s *Store) write(op string, clear bool, entries []Entry, cp Checkpoint) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.pending > 0 {
		return fmt.Errorf("state: %s of %s with %d pending writes", op, s.dir, s.pending)
	}
	if err := s.bg.get(); err != nil {
		return fmt.Errorf("state: %s of %s: pebble failed in the background: %w", op, s.dir, err)
	}
	size := 64
	for _, e := range entries {
		size += len(e.Key) + len(e.Value) + 16
	}
	b := s.db.NewBatchWithSize(size)
	defer b.Close()
	if clear {
		if err := b.DeleteRange([]byte{userPrefix}, []byte{userEnd}, nil); err != nil {
			return fmt.Errorf("state: %s of %s: %w", op, s.dir, err)
		}
	}
	for _, e := range entries {
		var err error
		if e.Value == nil {
			err = b.Delete(s.userKey(e.Key), nil)
		} else {
			err = b.Set(s.userKey(e.Key), e.Value, nil)
		}
		if err != nil {
			return fmt.Errorf("state: %s of %s: %w", op, s.dir, err)
		}
	}
	if err := b.Set(keyCheckpoint, encodeCheckpoint(cp), nil); err != nil {
		return fmt.Errorf("state: %s of %s: %w", op, s.dir, err)
	}
	if err := s.apply(b); err != nil {
		return err
	}
	s.setCheckpoint(cp)
	return nil
}

// ApproxSize returns pebble's estimate of the store's size on disk in bytes
// (tables, WAL and manifest), for stats. 0 once closed.
func (s *Store) ApproxSize() int64 {
	if s.lockDB() != nil {
		return 0
	}
	defer s.dbMu.RUnlock()
	return int64(s.db.Metrics().DiskSpaceUsage())
}

// lockDB read-locks dbMu for a read from another goroutine; on success the
// caller must RUnlock it.
func (s *Store) lockDB() error {
	s.dbMu.RLock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.dbMu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Close drops any pending writes, flushes what was committed to tables and
// closes the store. The flush is what makes a clean close durable without
// pebble's WAL (see pebbleOptions): pebble's own Close drops the memtable,
// and the next Open would find the checkpoint of the last flush and replay
// the changelog from there. It also spares the next Open a WAL replay when
// the WAL is on. A store made unusable by a failed write is abandoned rather
// than closed (pebble may hold an internal lock forever after such a
// failure): its directory stays locked until the process exits.
func (s *Store) Close() error {
	if s.scans > 0 {
		return fmt.Errorf("state: close of %s inside a scan callback", s.dir)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	_ = s.batch.Close()
	s.batch = nil
	s.dropWriteOnly()
	var err error
	if s.broken == nil {
		err = s.flush()
		s.dbMu.Lock()
		err = errors.Join(err, s.db.Close())
		s.dbMu.Unlock()
		err = errors.Join(err, s.lock.Close())
	}
	s.cache.Unref()
	if err != nil {
		return fmt.Errorf("state: close %s: %w", s.dir, err)
	}
	return nil
}

// flush writes the memtables to tables and waits for them. A flush that
// fails in the background (a full or read-only disk) is retried by pebble
// for ever, so it waits for that failure too and returns it: what the
// memtable held is then lost at Close, and the checkpoint on disk, older,
// still agrees with its data.
func (s *Store) flush() (err error) {
	if err := s.bg.get(); err != nil {
		return fmt.Errorf("state: flushing %s: pebble failed in the background: %w", s.dir, err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("state: flushing %s: %v", s.dir, r)
		}
	}()
	done, err := s.db.AsyncFlush()
	if err != nil {
		return fmt.Errorf("state: flushing %s: %w", s.dir, err)
	}
	select {
	case <-done:
		return nil
	case <-s.bg.failed():
		return fmt.Errorf("state: flushing %s: %w", s.dir, s.bg.get())
	}
}

func encodeCheckpoint(cp Checkpoint) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(cp.ChangelogOffset))
	binary.BigEndian.PutUint64(b[8:], uint64(cp.StreamTime))
	return b[:]
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) != 16 {
		return Checkpoint{}, fmt.Errorf("checkpoint is %d bytes, want 16", len(b))
	}
	cp := Checkpoint{
		ChangelogOffset: int64(binary.BigEndian.Uint64(b[:8])),
		StreamTime:      int64(binary.BigEndian.Uint64(b[8:])),
	}
	if cp.ChangelogOffset < 0 || cp.StreamTime < -1 {
		return Checkpoint{}, fmt.Errorf("checkpoint %+v out of range", cp)
	}
	return cp, nil
}
