package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/braidstream/braid/designer"
)

// recordVersion is the version of Config.RecordFile's format.
const recordVersion = 1

// recordFile is Config.RecordFile: the deployments, by id.
type recordFile struct {
	Version     int      `json:"version"`
	Deployments []record `json:"deployments"`
}

// record is one deployment as Run redeploys it: its request with every
// default filled in (the revision it runs, not "the latest"; the
// instances it has, added ones included) and its generators.
type record struct {
	Request    Request         `json:"request"`
	Generators []GeneratorSpec `json:"generators"`
}

// recordOf is a running deployment's record.
func (m *Manager) recordOf(dep *deployment) record {
	m.mu.Lock()
	info := dep.info
	m.mu.Unlock()
	return record{
		Request: Request{
			Design: info.Design, Revision: info.Revision, Instances: info.Instances, Standbys: new(info.Standbys),
			Guarantee: info.Guarantee, CommitIntervalMs: info.CommitIntervalMs,
			Snapshots: info.SnapshotURL != "", SnapshotURL: info.SnapshotURL,
		},
		Generators: dep.gens.specs(),
	}
}

// readRecords reads a record file: nil when there is none (or no path),
// else the records by design id (empty, not nil, for a file listing
// none).
func readRecords(path string) (map[string]record, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deploy: reading the deployments' records: %w", err)
	}
	var f recordFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("deploy: reading the deployments' records in %s: %w", path, err)
	}
	if f.Version != recordVersion {
		return nil, fmt.Errorf("deploy: reading the deployments' records in %s: version %d, want %d", path, f.Version, recordVersion)
	}
	out := make(map[string]record, len(f.Deployments))
	for i, r := range f.Deployments {
		if r.Request.Design == "" {
			return nil, fmt.Errorf("deploy: reading the deployments' records in %s: deployments[%d] names no design", path, i)
		}
		out[r.Request.Design] = r
	}
	return out, nil
}

// saveRecords writes Config.RecordFile: the running deployments and the
// kept records. It writes a temporary file and renames it over the old
// one, so that a crash leaves the old file or the new one, whole. A
// failure is logged: the deployments run on, unrecorded.
func (m *Manager) saveRecords() {
	if m.cfg.RecordFile == "" {
		return
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	deps := slices.Collect(maps.Values(m.deps))
	recs := maps.Clone(m.kept)
	m.mu.Unlock()
	if recs == nil {
		recs = make(map[string]record)
	}
	for _, dep := range deps {
		recs[dep.info.ID] = m.recordOf(dep)
	}
	f := recordFile{Version: recordVersion, Deployments: make([]record, 0, len(recs))}
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		f.Deployments = append(f.Deployments, recs[id])
	}
	if err := writeAtomically(m.cfg.RecordFile, f); err != nil {
		m.log.Error("saving the deployments' records", "file", m.cfg.RecordFile, "err", err)
	}
}

func writeAtomically(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making its directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("creating a temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp.Name(), err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// restore redeploys the kept records, with their settings and
// generators, under the same application ids (so their state is
// reused). A record whose design or revision is gone is dropped; one
// that fails otherwise stays kept, for the next start.
func (m *Manager) restore() {
	m.mu.Lock()
	recs := maps.Clone(m.kept)
	m.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		r := recs[id]
		if _, err := m.deploy(r.Request, r.Generators, true); err != nil {
			var nf *designer.NotFoundError
			if errors.As(err, &nf) {
				m.log.Warn("dropping the record of a deployment whose design is gone", "deployment", id, "err", err)
				m.mu.Lock()
				delete(m.kept, id)
				m.mu.Unlock()
				m.saveRecords()
				continue
			}
			m.log.Error("redeploying a recorded deployment", "deployment", id, "err", err)
			continue
		}
		m.log.Info("redeployed a recorded deployment", "deployment", id, "revision", r.Request.Revision)
	}
}
