package streams

import (
	"errors"
	"fmt"
	"time"
)

// Windows says how a windowed aggregation groups records in time: one of
// TimeWindows (tumbling or hopping), SlidingWindows or SessionWindows.
//
// Time is stream time, as in Kafka Streams: each task's largest record
// timestamp so far; there are no watermarks. A window closes when stream
// time reaches its end plus its grace period. A record that arrives out of
// order still counts while its window is open; a record for a closed
// window is late: it is dropped, counted in StoreStats.LateDrops and
// reported to LateRecordHook.
type Windows interface {
	// spec converts the windows to milliseconds, the unit of record
	// timestamps, or says what is wrong with them.
	spec() (windowSpec, error)
}

// TimeWindows are fixed-size windows aligned to the epoch: tumbling when
// Advance is zero or equal to Size, hopping (overlapping) when Advance is
// smaller, so that a record falls into Size/Advance windows. Window ends
// are exclusive: [start, start+Size).
type TimeWindows struct {
	Size time.Duration
	// Advance is the distance between window starts; 0 means Size.
	Advance time.Duration
	// Grace is how long after its end a window still accepts out-of-order
	// records; 0 closes it at its end, as Kafka Streams does since 3.0.
	Grace time.Duration
}

// Tumbling returns non-overlapping windows of size with the given grace.
func Tumbling(size, grace time.Duration) TimeWindows {
	return TimeWindows{Size: size, Grace: grace}
}

// Hopping returns windows of size starting every advance.
func Hopping(size, advance, grace time.Duration) TimeWindows {
	return TimeWindows{Size: size, Advance: advance, Grace: grace}
}

// SlidingWindows are the windows of Kafka Streams' SlidingWindows: one
// window for every distinct set of records whose timestamps lie within
// TimeDifference of each other. Both ends are inclusive:
// [start, start+TimeDifference].
type SlidingWindows struct {
	TimeDifference time.Duration
	Grace          time.Duration
}

// Sliding returns sliding windows with the given time difference and grace.
func Sliding(timeDifference, grace time.Duration) SlidingWindows {
	return SlidingWindows{TimeDifference: timeDifference, Grace: grace}
}

// SessionWindows group each key's records into sessions of activity
// separated by at least Gap of inactivity; a record that falls within Gap
// of two sessions merges them. A session's start and end are the
// timestamps of its first and last records, both inclusive. A session
// closes when stream time passes its end + Gap + Grace. Its results carry
// its end as their timestamp; emitting updates, a record that changes a
// session sends a tombstone (a nil value) for each session it replaces,
// the one it falls inside of included, before the new session's value, as
// Kafka Streams does.
type SessionWindows struct {
	Gap   time.Duration
	Grace time.Duration
}

// Sessions returns session windows with the given inactivity gap and grace.
func Sessions(gap, grace time.Duration) SessionWindows {
	return SessionWindows{Gap: gap, Grace: grace}
}

type windowKind uint8

const (
	timeWindowKind windowKind = iota
	slidingWindowKind
	sessionWindowKind
	// joinWindowKind is a stream-stream join's buffer of one side's
	// records (see stream_join.go).
	joinWindowKind
)

// windowSpec is Windows in milliseconds.
type windowSpec struct {
	kind windowKind
	// size is the window length (the time difference of sliding windows,
	// the inactivity gap of sessions); advance is for time windows only.
	size, advance, grace int64
	// joinSide is a join buffer's side, 0 the left and 1 the right: the
	// slot of its records in each joinKey it shares with the other side.
	joinSide int
}

// millis converts d to whole milliseconds, the resolution of record
// timestamps, naming field in the error.
func millis(field string, d time.Duration, min int64) (int64, error) {
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("%s %v is not a whole number of milliseconds", field, d)
	}
	ms := d.Milliseconds()
	if ms < min {
		if min == 0 {
			return 0, fmt.Errorf("%s %v is negative", field, d)
		}
		return 0, fmt.Errorf("%s %v must be at least %dms", field, d, min)
	}
	return ms, nil
}

func (w TimeWindows) spec() (windowSpec, error) {
	size, err1 := millis("TimeWindows.Size", w.Size, 1)
	advance, err2 := millis("TimeWindows.Advance", w.Advance, 0)
	grace, err3 := millis("TimeWindows.Grace", w.Grace, 0)
	if advance == 0 {
		advance = size
	}
	err := errors.Join(err1, err2, err3)
	if err == nil && advance > size {
		err = fmt.Errorf("TimeWindows.Advance %v is larger than the size %v: records between windows would be lost", w.Advance, w.Size)
	}
	return windowSpec{kind: timeWindowKind, size: size, advance: advance, grace: grace}, err
}

func (w SlidingWindows) spec() (windowSpec, error) {
	size, err1 := millis("SlidingWindows.TimeDifference", w.TimeDifference, 1)
	grace, err2 := millis("SlidingWindows.Grace", w.Grace, 0)
	return windowSpec{kind: slidingWindowKind, size: size, grace: grace}, errors.Join(err1, err2)
}

func (w SessionWindows) spec() (windowSpec, error) {
	gap, err1 := millis("SessionWindows.Gap", w.Gap, 1)
	grace, err2 := millis("SessionWindows.Grace", w.Grace, 0)
	return windowSpec{kind: sessionWindowKind, size: gap, grace: grace}, errors.Join(err1, err2)
}

// Windowed is the key of a windowed aggregation's results: the grouping
// key and the window it was aggregated over, in milliseconds since the
// epoch. End is exclusive for TimeWindows and inclusive for sliding and
// session windows, as in Kafka Streams. Its JSON form is
// {"key":...,"start":...,"end":...}.
type Windowed struct {
	Key   any   `json:"key"`
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

func (w Windowed) String() string { return fmt.Sprintf("%v@[%d,%d]", w.Key, w.Start, w.End) }

// closesAt is the stream time at which the window [start, end] of a
// record stops accepting records: records arriving when stream time is at
// or past it are late.
func (w windowSpec) closesAt(start, end int64) int64 {
	switch w.kind {
	case sessionWindowKind:
		// A session is late once stream time passes end + gap + grace.
		return end + w.size + w.grace + 1
	case slidingWindowKind:
		// Sliding ends are inclusive: the window covers up to end.
		return end + w.grace + 1
	default:
		return end + w.grace
	}
}

// defaultRetention is how long a store keeps a window after its start (a
// session after its end) when StoreOptions.Retention is not set: until it
// closes, the least that still sees every record it accepts.
func (w windowSpec) defaultRetention() int64 {
	switch w.kind {
	case sessionWindowKind:
		return w.size + w.grace + 1
	case slidingWindowKind:
		// A record's left window takes its aggregate from the newest
		// window ending before the record, up to 2 time differences back.
		return 2*w.size + w.grace + 1
	default:
		return w.size + w.grace
	}
}

// timeWindowStarts appends the starts of the time windows that contain ts,
// in ascending order: the windows [s, s+size) with s a multiple of advance.
func (w windowSpec) timeWindowStarts(dst []int64, ts int64) []int64 {
	first := max(0, ts-w.size+w.advance) / w.advance * w.advance
	for s := first; s <= ts; s += w.advance {
		dst = append(dst, s)
	}
	return dst
}

// EmitStrategy says when a windowed aggregation sends its results.
type EmitStrategy uint8

const (
	// EmitOnWindowUpdate sends every update of a window's result, through
	// the record cache (which sends each key's latest update at a commit
	// or when it evicts), as Kafka Streams does by default.
	EmitOnWindowUpdate EmitStrategy = iota
	// EmitOnWindowClose sends exactly one result per window, when stream
	// time closes it: Kafka Streams' EmitStrategy.onWindowClose.
	EmitOnWindowClose
)

func (e EmitStrategy) String() string {
	if e == EmitOnWindowClose {
		return "on-window-close"
	}
	return "on-window-update"
}
