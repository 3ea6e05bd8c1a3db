package monitor

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The monitor's history on disk: each deployment's events and one
// snapshot a second, kept for HistoryOptions.Retention (10 minutes) and
// at most HistoryOptions.MaxBytes (64 MiB) per deployment, so that a
// restarted server shows the failovers of the last minutes and a page can
// replay what happened while none was open.
//
// The format is append-only JSON lines in segments, a directory per
// deployment (its id path-escaped) holding events-<ms>.jsonl (one Event a
// line) and snapshots-<ms>.jsonl (one recordedSnapshot a line), <ms> the
// unix ms of the segment's first line. A segment takes lines for
// SegmentSpan (a minute), then the next one begins; whole segments are
// deleted once older than the retention or when the deployment's bytes
// go over the cap, oldest first. A server only ever appends to segments
// it began, so a line cut short by a crash is the end of its file: on
// open, a line that does not decode ends what is read of that file, with
// an error logged naming the file and the offset.
//
// Memory holds an index: per deployment its segments, and per recorded
// snapshot its time, where its line is, and its throughput point (a
// replayed snapshot's chart is drawn from the points of the snapshots
// before it). A replay reads one snapshot line and the event segments up
// to it.

// HistoryOptions configures a History. Zero fields take their defaults.
type HistoryOptions struct {
	// Retention is how long events and snapshots are kept. Default 10
	// minutes.
	Retention time.Duration
	// MaxBytes caps one deployment's files; its oldest segments go
	// first. Default 64 MiB.
	MaxBytes int64
	// SnapshotEvery is how often a deployment's snapshot is recorded (one
	// per such slice of wall-clock time). Default 1 s.
	SnapshotEvery time.Duration
	// SegmentSpan is how long a segment takes lines. Default 1 minute.
	SegmentSpan time.Duration
	// Logger hears what cannot be read or written. Default slog.Default().
	Logger *slog.Logger
}

const (
	defaultHistoryRetention = 10 * time.Minute
	defaultHistoryMaxBytes  = 64 << 20
	defaultSnapshotEvery    = time.Second
	defaultSegmentSpan      = time.Minute
	// replayEvents is how many events a replayed snapshot carries, the
	// newest up to its time.
	replayEvents = 500
	// pendingEvents bounds the events waiting for Run to write them.
	pendingEvents = 20000
)

func (o HistoryOptions) withDefaults() HistoryOptions {
	if o.Retention <= 0 {
		o.Retention = defaultHistoryRetention
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultHistoryMaxBytes
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = defaultSnapshotEvery
	}
	if o.SegmentSpan <= 0 {
		o.SegmentSpan = defaultSegmentSpan
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// History is the monitor's record on disk (see the comment above). Give it
// to a Monitor in Options.History; the Monitor's Run writes it. Its
// methods are safe for concurrent use. Close it after Run returned.
type History struct {
	dir  string
	opts HistoryOptions

	mu   sync.Mutex
	deps map[string]*depHistory
	// loaded are the events read at open, by Seq, until the Monitor
	// takes them.
	loaded []Event
	// now is the clock, for the tests.
	now func() time.Time
}

// depHistory is one deployment's segments and snapshot index.
type depHistory struct {
	dir      string
	segs     []*segment // oldest first, both kinds
	cur      map[string]*segment
	snaps    []snapRef // oldest first
	size     int64
	lastSnap int64 // unix ms of the last snapshot recorded
}

// segment is one file of lines. valid is how many of its bytes are whole
// lines; f is set while lines are appended to it.
type segment struct {
	kind        string // segEvents or segSnapshots
	path        string
	first, last int64 // unix ms of its first and last line
	valid       int64
	f           *os.File
}

const (
	segEvents    = "events"
	segSnapshots = "snapshots"
)

// snapRef is where a recorded snapshot is.
type snapRef struct {
	t        int64
	seg      *segment
	off, len int64
	point    *Point
}

// recordedSnapshot is a snapshot line: a deployment's snapshot at T,
// without its throughput, timelines and failovers (rebuilt on replay from
// the points and the events), its newest throughput point, and the Seq of
// the last event before it.
type recordedSnapshot struct {
	T          int64      `json:"t"`
	Seq        uint64     `json:"seq"`
	Point      *Point     `json:"point,omitempty"`
	Deployment Deployment `json:"deployment"`
}

// OpenHistory opens (creating) the history in dir and reads its index and
// events. A line that does not decode ends what is read of its file and
// is logged; only a directory that cannot be read or created is an error.
func OpenHistory(dir string, opts HistoryOptions) (*History, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opening the monitor's history: %w", err)
	}
	h := &History{dir: dir, opts: opts, deps: map[string]*depHistory{}, now: time.Now}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the monitor's history %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id, err := url.PathUnescape(e.Name())
		if err != nil {
			opts.Logger.Error("monitor history: skipping a directory not named by a deployment id", "dir", filepath.Join(dir, e.Name()))
			continue
		}
		d, evs := h.load(filepath.Join(dir, e.Name()))
		h.deps[id] = d
		h.loaded = append(h.loaded, evs...)
	}
	slices.SortStableFunc(h.loaded, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	h.mu.Lock()
	h.trimLocked(h.now())
	h.mu.Unlock()
	return h, nil
}

// load reads one deployment's directory: its segments, the snapshots'
// index and the events.
func (h *History) load(dir string) (*depHistory, []Event) {
	d := &depHistory{dir: dir, cur: map[string]*segment{}}
	files, err := os.ReadDir(dir)
	if err != nil {
		h.opts.Logger.Error("monitor history: reading a deployment's directory", "dir", dir, "err", err)
		return d, nil
	}
	var events []Event
	for _, f := range files {
		kind, first, ok := segmentName(f.Name())
		if !ok {
			continue
		}
		s := &segment{kind: kind, path: filepath.Join(dir, f.Name()), first: first, last: first}
		evs := h.readSegment(d, s)
		events = append(events, evs...)
		d.segs = append(d.segs, s)
		d.size += s.valid
	}
	sortSegments(d.segs)
	slices.SortFunc(d.snaps, func(a, b snapRef) int { return cmp.Compare(a.t, b.t) })
	if n := len(d.snaps); n > 0 {
		d.lastSnap = d.snaps[n-1].t
	}
	return d, events
}

func sortSegments(segs []*segment) {
	slices.SortStableFunc(segs, func(a, b *segment) int { return cmp.Compare(a.first, b.first) })
}

// segmentName parses "<kind>-<ms>.jsonl".
func segmentName(name string) (kind string, first int64, ok bool) {
	base, found := strings.CutSuffix(name, ".jsonl")
	if !found {
		return "", 0, false
	}
	kind, ms, found := strings.Cut(base, "-")
	if !found || (kind != segEvents && kind != segSnapshots) {
		return "", 0, false
	}
	first, err := strconv.ParseInt(ms, 10, 64)
	return kind, first, err == nil
}

// readSegment reads a segment at open: its whole lines up to the first
// that does not decode, which is logged. It sets s.valid and s.last, adds
// a snapshot segment's lines to d's index and returns an event segment's
// events.
func (h *History) readSegment(d *depHistory, s *segment) []Event {
	f, err := os.Open(s.path)
	if err != nil {
		h.opts.Logger.Error("monitor history: opening a segment", "file", s.path, "err", err)
		return nil
	}
	defer f.Close()
	var events []Event
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		bad := ""
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			bad = err.Error()
		case err != nil:
			bad = "a line cut short (no newline at the end of the file)"
		}
		var t int64
		if bad == "" {
			switch s.kind {
			case segEvents:
				var ev Event
				if derr := json.Unmarshal(line, &ev); derr != nil {
					bad = derr.Error()
				} else {
					events, t = append(events, ev), ev.Time
				}
			case segSnapshots:
				var rs struct {
					T     int64  `json:"t"`
					Point *Point `json:"point"`
				}
				if derr := json.Unmarshal(line, &rs); derr != nil {
					bad = derr.Error()
				} else {
					d.snaps = append(d.snaps, snapRef{t: rs.T, seg: s, off: off, len: int64(len(line)), point: rs.Point})
					t = rs.T
				}
			}
		}
		if bad != "" {
			h.opts.Logger.Error("monitor history: skipping the rest of a segment from a line that does not decode",
				"file", s.path, "offset", off, "err", bad)
			break
		}
		off += int64(len(line))
		s.last = max(s.last, t)
		if err != nil {
			break
		}
	}
	s.valid = off
	return events
}

// takeLoaded returns the events read at open, by Seq, once.
func (h *History) takeLoaded() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	evs := h.loaded
	h.loaded = nil
	return evs
}

// Close closes the segments being written. Call it after the Monitor's
// Run returned.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, d := range h.deps {
		for kind, s := range d.cur {
			if err := s.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing %s: %w", s.path, err))
			}
			s.f = nil
			delete(d.cur, kind)
		}
	}
	return errors.Join(errs...)
}

func (h *History) dep(id string) *depHistory {
	d := h.deps[id]
	if d == nil {
		d = &depHistory{dir: filepath.Join(h.dir, url.PathEscape(id)), cur: map[string]*segment{}}
		h.deps[id] = d
	}
	return d
}

// appendLocked writes lines (each ending in '\n', the first at t, the
// last at last) to d's current segment of kind, beginning one when none
// is or it has taken lines for SegmentSpan; it returns the segment and
// the offset the lines start at.
func (h *History) appendLocked(d *depHistory, kind string, t, last int64, lines []byte) (*segment, int64, error) {
	s := d.cur[kind]
	if s != nil && t-s.first >= h.opts.SegmentSpan.Milliseconds() {
		if err := s.f.Close(); err != nil {
			h.opts.Logger.Error("monitor history: closing a segment", "file", s.path, "err", err)
		}
		s.f = nil
		delete(d.cur, kind)
		s = nil
	}
	if s == nil {
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return nil, 0, fmt.Errorf("creating %s: %w", d.dir, err)
		}
		// A segment of a server before this one may have the name: the
		// next free millisecond is taken.
		var f *os.File
		var path string
		first := t
		for ; ; first++ {
			path = filepath.Join(d.dir, fmt.Sprintf("%s-%d.jsonl", kind, first))
			var err error
			f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrExist) {
				return nil, 0, fmt.Errorf("creating a segment: %w", err)
			}
		}
		s = &segment{kind: kind, path: path, first: first, last: t, f: f}
		d.cur[kind] = s
		d.segs = append(d.segs, s)
		sortSegments(d.segs)
	}
	off := s.valid
	if _, err := s.f.Write(lines); err != nil {
		// What was written of the lines is not valid: the next line
		// goes to a new segment.
		_ = s.f.Close()
		s.f = nil
		delete(d.cur, kind)
		return nil, 0, fmt.Errorf("writing %s: %w", s.path, err)
	}
	s.valid += int64(len(lines))
	s.last = max(s.last, last)
	d.size += int64(len(lines))
	return s, off, nil
}

// writeEvents appends events (by Seq) to their deployments' segments.
func (h *History) writeEvents(events []Event) {
	if len(events) == 0 {
		return
	}
	byDep := map[string][]Event{}
	var order []string
	for _, ev := range events {
		if _, ok := byDep[ev.Deployment]; !ok {
			order = append(order, ev.Deployment)
		}
		byDep[ev.Deployment] = append(byDep[ev.Deployment], ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range order {
		evs := byDep[id]
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for i := range evs {
			if err := enc.Encode(&evs[i]); err != nil {
				h.opts.Logger.Error("monitor history: encoding an event", "deployment", id, "kind", evs[i].Kind, "err", err)
			}
		}
		d := h.dep(id)
		if _, _, err := h.appendLocked(d, segEvents, evs[0].Time, evs[len(evs)-1].Time, buf.Bytes()); err != nil {
			h.opts.Logger.Error("monitor history: writing events", "deployment", id, "err", err)
		}
	}
	h.trimLocked(h.now())
}

// record writes the snapshot's deployments, each at most once per
// SnapshotEvery slice of time; seq is the last event's before it.
func (h *History) record(snap *Snapshot, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	every := h.opts.SnapshotEvery.Milliseconds()
	for _, dep := range snap.Deployments {
		d := h.dep(dep.ID)
		if len(d.snaps) > 0 && snap.Time/every == d.lastSnap/every {
			continue
		}
		rs := recordedSnapshot{T: snap.Time, Seq: seq, Deployment: dep}
		if n := len(dep.Throughput); n > 0 {
			p := dep.Throughput[n-1]
			rs.Point = &p
		}
		rs.Deployment.Throughput, rs.Deployment.Timelines, rs.Deployment.Failovers = nil, nil, nil
		line, err := json.Marshal(rs)
		if err != nil {
			h.opts.Logger.Error("monitor history: encoding a snapshot", "deployment", dep.ID, "err", err)
			continue
		}
		line = append(line, '\n')
		s, off, err := h.appendLocked(d, segSnapshots, snap.Time, snap.Time, line)
		if err != nil {
			h.opts.Logger.Error("monitor history: writing a snapshot", "deployment", dep.ID, "err", err)
			continue
		}
		d.snaps = append(d.snaps, snapRef{t: snap.Time, seg: s, off: off, len: int64(len(line)), point: rs.Point})
		d.lastSnap = snap.Time
	}
	h.trimLocked(h.now())
}

// trimLocked deletes the segments older than the retention, and each
// deployment's oldest while it is over MaxBytes.
func (h *History) trimLocked(now time.Time) {
	horizon := now.Add(-h.opts.Retention).UnixMilli()
	for id, d := range h.deps {
		// A segment is older than the horizon when its last line is.
		keep := d.segs[:0]
		var drop []*segment
		for _, s := range d.segs {
			if s.last < horizon {
				drop = append(drop, s)
			} else {
				keep = append(keep, s)
			}
		}
		d.segs = keep
		for len(d.segs) > 1 && d.size-sizeOf(drop) > h.opts.MaxBytes {
			drop = append(drop, d.segs[0])
			d.segs = d.segs[1:]
		}
		for _, s := range drop {
			h.removeLocked(d, s)
		}
		if len(d.segs) == 0 && len(d.cur) == 0 {
			if err := os.Remove(d.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				h.opts.Logger.Error("monitor history: removing an empty directory", "dir", d.dir, "err", err)
			}
			delete(h.deps, id)
		}
	}
}

func sizeOf(segs []*segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.valid
	}
	return n
}

// removeLocked deletes a segment no longer in d.segs.
func (h *History) removeLocked(d *depHistory, s *segment) {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
		delete(d.cur, s.kind)
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		h.opts.Logger.Error("monitor history: deleting a segment", "file", s.path, "err", err)
	}
	d.size -= s.valid
	if s.kind == segSnapshots {
		d.snaps = slices.DeleteFunc(d.snaps, func(r snapRef) bool { return r.seg == s })
	}
}

// HistorySpan is the span of a deployment's recorded history: from the
// first recorded snapshot to the last (unix ms, 0 when none is), and the
// instant of each.
type HistorySpan struct {
	Deployment  string  `json:"deployment"`
	From        int64   `json:"from"`
	To          int64   `json:"to"`
	Instants    []int64 `json:"instants"`
	RetentionMs int64   `json:"retentionMs"`
}

// span returns a deployment's span.
func (h *History) span(id string) HistorySpan {
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := HistorySpan{Deployment: id, Instants: []int64{}, RetentionMs: h.opts.Retention.Milliseconds()}
	d := h.deps[id]
	if d == nil || len(d.snaps) == 0 {
		return sp
	}
	for _, r := range d.snaps {
		sp.Instants = append(sp.Instants, r.t)
	}
	sp.From, sp.To = d.snaps[0].t, d.snaps[len(d.snaps)-1].t
	return sp
}

// NoSnapshotError says a deployment has no snapshot recorded at or before
// At.
type NoSnapshotError struct {
	Deployment string
	At         int64
	// From is the first recorded snapshot's time, 0 when none is.
	From int64
}

func (e *NoSnapshotError) Error() string {
	at := time.UnixMilli(e.At).UTC().Format(time.RFC3339Nano)
	if e.From == 0 {
		return fmt.Sprintf("deployment %q has no recorded snapshot (none at or before %s)", e.Deployment, at)
	}
	return fmt.Sprintf("deployment %q has no snapshot recorded at or before %s: its history begins at %s", e.Deployment, at,
		time.UnixMilli(e.From).UTC().Format(time.RFC3339Nano))
}

// snapshotAt reads the deployment's recorded snapshot nearest at or
// before at, with the throughput points of the throughputPoints seconds
// up to it, and the events before it (by Seq), oldest first.
func (h *History) snapshotAt(id string, at int64) (recordedSnapshot, []Point, []Event, error) {
	ref, points, segs, err := h.locate(id, at)
	if err != nil {
		return recordedSnapshot{}, nil, nil, err
	}
	// The files are read without the lock, which Run's writes take: a
	// segment trimmed meanwhile is missing, and its events with it.
	rs, err := readSnapshot(ref)
	if err != nil {
		return recordedSnapshot{}, nil, nil, err
	}
	var events []Event
	for _, s := range segs {
		evs, err := readEvents(s, rs.Seq)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return recordedSnapshot{}, nil, nil, err
		}
		events = append(events, evs...)
	}
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return rs, points, events, nil
}

// locate finds the snapshot at or before at, the throughput points up to
// it and the event segments that may hold the events before it.
func (h *History) locate(id string, at int64) (snapRef, []Point, []segment, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.deps[id]
	if d == nil || len(d.snaps) == 0 {
		return snapRef{}, nil, nil, &NoSnapshotError{Deployment: id, At: at}
	}
	i, found := slices.BinarySearchFunc(d.snaps, at, func(r snapRef, t int64) int { return cmp.Compare(r.t, t) })
	if found {
		for i+1 < len(d.snaps) && d.snaps[i+1].t == at {
			i++
		}
	} else {
		i--
	}
	if i < 0 {
		return snapRef{}, nil, nil, &NoSnapshotError{Deployment: id, At: at, From: d.snaps[0].t}
	}
	ref := d.snaps[i]
	ref.seg = &segment{path: ref.seg.path}
	var points []Point
	from := ref.t - throughputPoints*1000
	for _, r := range d.snaps[:i+1] {
		if r.point != nil && r.t > from {
			points = append(points, *r.point)
		}
	}
	var segs []segment
	for _, s := range d.segs {
		// A segment is in Seq order and its first event's time is its
		// name's: one that begins after the snapshot holds none before.
		if s.kind == segEvents && s.first <= ref.t {
			segs = append(segs, segment{kind: s.kind, path: s.path, valid: s.valid})
		}
	}
	return ref, points, segs, nil
}

func readSnapshot(ref snapRef) (recordedSnapshot, error) {
	f, err := os.Open(ref.seg.path)
	if err != nil {
		return recordedSnapshot{}, fmt.Errorf("reading a recorded snapshot: %w", err)
	}
	defer f.Close()
	buf := make([]byte, ref.len)
	if _, err := f.ReadAt(buf, ref.off); err != nil {
		return recordedSnapshot{}, fmt.Errorf("reading a recorded snapshot of %s at offset %d: %w", ref.seg.path, ref.off, err)
	}
	var rs recordedSnapshot
	if err := json.Unmarshal(buf, &rs); err != nil {
		return recordedSnapshot{}, fmt.Errorf("decoding a recorded snapshot of %s at offset %d: %w", ref.seg.path, ref.off, err)
	}
	return rs, nil
}

// readEvents reads the valid lines of an event segment with Seq <= to.
func readEvents(s segment, to uint64) ([]Event, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("reading recorded events: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, s.valid))
	var out []Event
	for {
		var ev Event
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding recorded events of %s at offset %d: %w", s.path, dec.InputOffset(), err)
		}
		if ev.Seq <= to {
			out = append(out, ev)
		}
	}
}
