package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A snapshot is a pebble checkpoint of a store: its tables hard-linked (a
// copy only where links are impossible), with pebble's manifest and options,
// in a directory of its own that the live store never writes again. It is
// what a blob store keeps so that a new instance can start from files rather
// than from the whole changelog (runtime/internal/snapshot).
//
// Its checkpoint needs no coordination with the task: the checkpoint key
// travels in the same pebble batch as the data it describes (Commit), and a
// flush writes whole memtables, so whatever data a snapshot holds, the
// checkpoint key it holds is the one that goes with it. That is why
// Snapshot may run beside the task's commits, and why the checkpoint is
// read back from the snapshot rather than from the live store.

// SnapshotMeta is what a snapshot's own metadata says it holds.
type SnapshotMeta struct {
	// Identity, KeyLayout and FormatVersion are those of the store that
	// wrote it: Open rebuilds a store whose directory disagrees with its
	// own, so a snapshot that disagrees is no use to it.
	Identity      string
	KeyLayout     string
	FormatVersion uint32
	// Checkpoint is the changelog position and stream time of its data.
	Checkpoint Checkpoint
}

// FormatVersion is the layout of keys and metadata this package writes;
// a snapshot written in another is not usable.
func FormatVersion() uint32 { return formatVersion }

// Snapshot writes a pebble checkpoint of the store's committed data into
// dir, which must not exist, and returns what it holds. It flushes the
// memtables first: a store without its WAL (Options.Logged) has committed
// data nowhere else, and a checkpoint copies tables, not memtables. Pending
// writes are not in it. Snapshot is safe to call from any goroutine while
// the store is open; the task goes on committing meanwhile, and the
// snapshot holds the data of some commit at or after the last one before
// the call.
func (s *Store) Snapshot(dir string) (SnapshotMeta, error) {
	if err := s.lockDB(); err != nil {
		return SnapshotMeta{}, err
	}
	defer s.dbMu.RUnlock()
	if err := s.db.Flush(); err != nil {
		return SnapshotMeta{}, fmt.Errorf("state: flushing %s for a snapshot: %w", s.dir, err)
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return SnapshotMeta{}, fmt.Errorf("state: checkpointing %s into %s: %w", s.dir, dir, err)
	}
	m, err := ReadSnapshot(dir)
	if err != nil {
		return SnapshotMeta{}, err
	}
	if m.Identity != s.identity {
		return SnapshotMeta{}, fmt.Errorf("state: snapshot %s of %s holds identity %q", dir, s.dir, m.Identity)
	}
	return m, nil
}

// ErrNoSnapshotMeta says a directory opened as a snapshot holds no store
// metadata: not a snapshot of a store, or one torn beyond pebble's notice.
var ErrNoSnapshotMeta = errors.New("state: snapshot holds no store metadata")

// ReadSnapshot opens the snapshot in dir read-only and returns its metadata.
// An error means the directory cannot serve as a store: pebble cannot open
// it, or its metadata is missing or malformed.
func ReadSnapshot(dir string) (SnapshotMeta, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, FS: vfs.Default, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		return SnapshotMeta{}, fmt.Errorf("state: opening snapshot %s: %w", dir, err)
	}
	defer db.Close()
	read := func(key []byte) ([]byte, error) {
		v, closer, err := db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, fmt.Errorf("reading %q of snapshot %s: %w", key[1:], dir, ErrNoSnapshotMeta)
		}
		if err != nil {
			return nil, fmt.Errorf("state: reading %q of snapshot %s: %w", key[1:], dir, err)
		}
		defer closer.Close()
		return append([]byte(nil), v...), nil
	}
	var m SnapshotMeta
	id, err1 := read(keyIdentity)
	format, err2 := read(keyFormat)
	cpb, err3 := read(keyCheckpoint)
	if err := errors.Join(err1, err2, err3); err != nil {
		return SnapshotMeta{}, err
	}
	if len(format) != 4 {
		return SnapshotMeta{}, fmt.Errorf("state: snapshot %s: format is %d bytes, want 4", dir, len(format))
	}
	m.Identity, m.FormatVersion = string(id), binary.BigEndian.Uint32(format)
	if m.Checkpoint, err = decodeCheckpoint(cpb); err != nil {
		return SnapshotMeta{}, fmt.Errorf("state: snapshot %s: %w", dir, err)
	}
	if layout, err := read(keyLayout); err == nil {
		m.KeyLayout = string(layout)
	} else if !errors.Is(err, ErrNoSnapshotMeta) {
		return SnapshotMeta{}, err
	}
	return m, nil
}

// SnapshotMismatchError says a snapshot was written by another store, key
// layout or format than the one asked to load it: Open would rebuild a
// directory like it, so loading it would only throw it away.
type SnapshotMismatchError struct {
	Dir    string
	Reason string
}

func (e *SnapshotMismatchError) Error() string {
	return fmt.Sprintf("state: snapshot %s does not fit the store: %s", e.Dir, e.Reason)
}

// LoadSnapshot replaces the store's data and checkpoint with the snapshot
// in dir, whose files it moves into the store's directory (dir must be on
// the same file system, and is gone afterwards), and returns the
// checkpoint the store now has. It is for a store that holds nothing worth
// keeping (a new or rebuilt one, before its restore): pending writes are
// dropped. A snapshot that does not fit (*SnapshotMismatchError) or cannot
// be opened leaves the store as it was; a failure after the store's files
// were removed leaves it empty, which a full restore fills as it would
// have anyway.
func (s *Store) LoadSnapshot(dir string) (Checkpoint, error) {
	if s.scans > 0 {
		return Checkpoint{}, fmt.Errorf("state: loading a snapshot into %s inside a scan callback", s.dir)
	}
	m, err := ReadSnapshot(dir)
	if err != nil {
		return Checkpoint{}, err
	}
	switch {
	case m.Identity != s.identity:
		return Checkpoint{}, &SnapshotMismatchError{dir, fmt.Sprintf("written for %q, not %q", m.Identity, s.identity)}
	case m.KeyLayout != s.keyLayout:
		return Checkpoint{}, &SnapshotMismatchError{dir, fmt.Sprintf("keys laid out as %q, not %q", m.KeyLayout, s.keyLayout)}
	case m.FormatVersion != formatVersion:
		return Checkpoint{}, &SnapshotMismatchError{dir, fmt.Sprintf("format %d, not %d", m.FormatVersion, formatVersion)}
	}
	if err := s.usable(); err != nil {
		return Checkpoint{}, err
	}
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	_ = s.batch.Close()
	s.batch = nil
	s.dropWriteOnly()
	s.pending = 0
	s.closeDB()
	if err := s.swapIn(dir); err != nil {
		return Checkpoint{}, errors.Join(err, s.reopenEmpty())
	}
	if reason, err := s.tryOpen(s.opts); err != nil || reason != "" {
		if err == nil {
			err = fmt.Errorf("state: snapshot loaded into %s cannot be trusted: %s", s.dir, reason)
		}
		return Checkpoint{}, errors.Join(err, s.reopenEmpty())
	}
	s.batch = s.db.NewIndexedBatch()
	s.setCheckpoint(m.Checkpoint)
	s.flushedAt, s.unflushed = s.now(), false
	return m.Checkpoint, nil
}

// swapIn replaces the files of the store's directory (but its lock) with
// those of dir.
func (s *Store) swapIn(dir string) error {
	if err := wipe(s.fs, s.dir); err != nil {
		return fmt.Errorf("state: clearing %s for a snapshot: %w", s.dir, err)
	}
	names, err := s.fs.List(dir)
	if err != nil {
		return fmt.Errorf("state: reading snapshot %s: %w", dir, err)
	}
	for _, name := range names {
		if name == lockFile {
			continue
		}
		if err := s.fs.Rename(s.fs.PathJoin(dir, name), s.fs.PathJoin(s.dir, name)); err != nil {
			return fmt.Errorf("state: moving snapshot file %s into %s: %w", name, s.dir, err)
		}
	}
	return s.fs.RemoveAll(dir)
}

// reopenEmpty leaves the store empty and open after a failed load.
func (s *Store) reopenEmpty() error {
	s.closeDB()
	if err := wipe(s.fs, s.dir); err != nil {
		return fmt.Errorf("state: clearing %s after a failed snapshot load: %w", s.dir, err)
	}
	reason, err := s.tryOpen(s.opts)
	if err == nil && reason != "" {
		err = fmt.Errorf("state: reopening %s empty: %s", s.dir, reason)
	}
	if err != nil {
		s.broken = err
		return err
	}
	s.batch = s.db.NewIndexedBatch()
	s.setCheckpoint(zeroCheckpoint)
	s.mu.Lock()
	s.rebuilt = "a snapshot failed to load"
	s.mu.Unlock()
	return nil
}
