package state

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// creatingFS is the file system pebble gets for a store that Open creates,
// in a directory that did not exist. While creating is set it skips every
// sync: pebble creates a database at its oldest supported format and
// moves it up one format at a time, each step an atomic marker file with
// an fsync of the file and one of the directory, 11 fsyncs in all at
// FormatFlushableIngestExcises (25 at FormatNewest) for a store that holds
// nothing, and bench join opens 8 beside its first fetch. Open then syncs
// the directory's files, the directory and its parent once (syncCreated,
// 7 fsyncs) and clears creating, so that from then on every sync pebble
// asks for is made, as with vfs.Default.
//
// A crash before the end of that sync may leave any part of the creation
// on disk: a directory pebble cannot open (Open wipes it as torn, and
// creates the store again) or a database without identity or without
// data (Open describes it again): an empty store at checkpoint zero
// either way, which is what the crash interrupted.
type creatingFS struct {
	vfs.FS
	creating *atomic.Bool
}

func (c creatingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return creatingFile{File: f, creating: c.creating}, nil
}

func (c creatingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return c.wrap(c.FS.Create(name, category))
}

func (c creatingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return c.wrap(c.FS.Open(name, opts...))
}

func (c creatingFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return c.wrap(c.FS.OpenReadWrite(name, category, opts...))
}

func (c creatingFS) OpenDir(name string) (vfs.File, error) {
	return c.wrap(c.FS.OpenDir(name))
}

func (c creatingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return c.wrap(c.FS.ReuseForWrite(oldname, newname, category))
}

func (c creatingFS) Unwrap() vfs.FS { return c.FS }

// creatingFile is a file of a creatingFS: its syncs are skipped while the
// store is being created.
type creatingFile struct {
	vfs.File
	creating *atomic.Bool
}

func (f creatingFile) Sync() error {
	if f.creating.Load() {
		return nil
	}
	return f.File.Sync()
}

func (f creatingFile) SyncData() error {
	if f.creating.Load() {
		return nil
	}
	return f.File.SyncData()
}

func (f creatingFile) SyncTo(length int64) (fullSync bool, err error) {
	if f.creating.Load() {
		return true, nil
	}
	return f.File.SyncTo(length)
}

// syncCreated ends the creation of the store in dir: it clears creating
// and syncs every file there but the empty lock file, then the
// directory and its parent, through fsys (the unwrapped file system).
func syncCreated(fsys vfs.FS, dir string, creating *atomic.Bool) error {
	creating.Store(false)
	names, err := fsys.List(dir)
	if err != nil {
		return fmt.Errorf("state: list new store %s: %w", dir, err)
	}
	for _, name := range names {
		if name == lockFile {
			continue // empty: its name is the directory's
		}
		path := fsys.PathJoin(dir, name)
		st, err := fsys.Stat(path)
		if err != nil {
			return fmt.Errorf("state: sync new store %s: %w", dir, err)
		}
		if st.IsDir() {
			continue
		}
		f, err := fsys.Open(path)
		if err != nil {
			return fmt.Errorf("state: sync new store %s: %w", dir, err)
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return fmt.Errorf("state: sync new store file %s: %w", path, err)
		}
	}
	// The parent too, as pebble.Open syncs it (mkdirAllAndSyncParents),
	// so that the store's directory is there after a crash.
	for _, d := range []string{dir, fsys.PathDir(dir)} {
		f, err := fsys.OpenDir(d)
		if err != nil {
			return fmt.Errorf("state: sync new store %s: %w", dir, err)
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return fmt.Errorf("state: sync new store dir %s: %w", d, err)
		}
	}
	return nil
}
