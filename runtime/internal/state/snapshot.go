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
