package snapshot

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// manifestVersion is the layout of MANIFEST.json this package writes and
// reads; a manifest of another version is skipped, not guessed at.
const manifestVersion = 1

// manifestName is the name of a snapshot's manifest among its files.
const manifestName = "MANIFEST.json"

// Scope names one store of one task of one application: the snapshots a
// restore of that store may choose from.
type Scope struct {
	Application string `json:"application"`
	Task        string `json:"task"`
	Store       string `json:"store"`
}

// Validate reports a scope whose names cannot be used as blob key parts.
func (s Scope) Validate() error {
	for _, f := range []struct{ name, v string }{{"application", s.Application}, {"task", s.Task}, {"store", s.Store}} {
		switch {
		case f.v == "":
			return fmt.Errorf("snapshot scope: %s is empty", f.name)
		case strings.Contains(f.v, "/"), f.v == ".", f.v == "..":
			return fmt.Errorf("snapshot scope: %s %q cannot be a blob key part", f.name, f.v)
		}
	}
	return nil
}

// prefix is the key prefix of the scope's snapshots, ending in "/".
func (s Scope) prefix() string {
	return path.Join(s.Application, s.Task, s.Store) + "/"
}

func (s Scope) String() string { return path.Join(s.Application, s.Task, s.Store) }

// Manifest describes one snapshot: whose it is, what its data holds and
// the files it is made of.
type Manifest struct {
	Version int `json:"version"`
	// ID orders a scope's snapshots (see newID).
	ID string `json:"id"`
	Scope
	// Identity, KeyLayout and FormatVersion are the store's (state.Store):
	// a snapshot is usable only by a store that agrees on all three.
	Identity      string `json:"identity"`
	KeyLayout     string `json:"keyLayout"`
	FormatVersion uint32 `json:"formatVersion"`
	// Changelog and Partition name the changelog partition the store is
	// restored from; ChangelogOffset is the offset of the first changelog
	// record its data does not hold.
	Changelog       string `json:"changelog"`
	Partition       int32  `json:"partition"`
	ChangelogOffset int64  `json:"changelogOffset"`
	// StreamTime is the task's stream time at the commit the data is of;
	// -1 when unknown.
	StreamTime int64     `json:"streamTime"`
	TakenAt    time.Time `json:"takenAt"`
	Files      []File    `json:"files"`
}

// File is one file of a snapshot.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Bytes is the size of the snapshot's files.
func (m Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// newID is the id of a snapshot at changelog offset taken at t: ids sort
// as the snapshots' offsets, then their times, so the newest state sorts
// last.
func newID(offset int64, t time.Time) string {
	return fmt.Sprintf("%020d-%013d", offset, t.UnixMilli())
}

// key is the blob key of the snapshot's file name.
func (m Manifest) key(name string) string {
	return m.prefix() + m.ID + "/" + name
}

// decodeManifest parses a manifest read from key and checks it describes
// a snapshot of scope with id.
func decodeManifest(b []byte, scope Scope, id string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("decoding manifest: %w", err)
	}
	switch {
	case m.Version != manifestVersion:
		return Manifest{}, fmt.Errorf("manifest version %d, want %d", m.Version, manifestVersion)
	case m.ID != id:
		return Manifest{}, fmt.Errorf("manifest names snapshot %q, found under %q", m.ID, id)
	case m.Scope != scope:
		return Manifest{}, fmt.Errorf("manifest is of %s, found under %s", m.Scope, scope)
	case len(m.Files) == 0:
		return Manifest{}, fmt.Errorf("manifest lists no files")
	}
	for _, f := range m.Files {
		if f.Name == "" || strings.ContainsAny(f.Name, `/\`) || f.Name == "." || f.Name == ".." || f.Name == manifestName {
			return Manifest{}, fmt.Errorf("manifest lists a file named %q", f.Name)
		}
	}
	return m, nil
}
