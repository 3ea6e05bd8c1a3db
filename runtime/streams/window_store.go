package streams

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A windowed store is a taskStore whose keys are Windowed. Its changelog
// key is the windowed key serde's bytes (the grouping key, then the window
// start, or for sessions the end and the start, as Kafka Streams lays them
// out), and in pebble that key sits behind an 8-byte segment number and
// the key's length:
//
//	[segment][len(key)][key][start]          windows and sliding windows
//	[segment][len(key)][key][end][start]     sessions
//
// The segment is the window start (a session's end) divided by the
// segment interval. Segments expire whole: once stream time has passed
// every window in one by the retention, one range deletion drops it,
// which is why the segment leads the key. Within a segment a key's
// windows are adjacent and in time order, so that fetching a key's
// windows is a short scan per live segment.
//
// The changelog carries one more kind of record: an empty key whose value
// is the task's stream time, written at commits (see markStreamTime).
// Restore takes a windowed store's stream time from these markers only.

// windowState is what a windowed store has beyond a key-value store.
type windowState struct {
	spec      windowSpec
	emitFinal bool
	// retention is how long after its start (a session: its end) a window
	// is kept; interval is the segment length. Both in milliseconds.
	retention, interval int64
	// writeThrough stores every update in pebble's pending batch at once,
	// for the sessions and sliding windows, which find a key's windows by
	// scanning; time windows are only ever read by key, so that their
	// updates wait in the cache like a key-value store's.
	writeThrough bool
	// tsBytes is how many bytes of timestamps end a changelog key.
	tsBytes int
	inner   Serde

	// expiredBelow is the first segment not dropped yet; maxSegment the
	// highest written. expiredAt is the stream time of the last expiry:
	// windows expired by then are not written any more.
	expiredBelow, maxSegment int64
	expiredAt                int64
	// lowestSegment is the lowest segment ever written to pebble, so that
	// expiry issues no range deletion while nothing lies below it (a
	// range deletion in the pending batch slows every read of it);
	// storedUpTo the latest segment time written: a window starting later
	// is not in pebble, and looking it up there is saved. For a join
	// buffer it is its side's latest timestamp, which its retention runs
	// behind, and expires by (see expireSegments); a restart and a
	// standby take it from the records pebble holds.
	lowestSegment, storedUpTo int64
	// open indexes the windows that have not closed, for emitting final
	// results, the window-closed hooks and OpenWindows; closing is a heap
	// of their close times, with stale entries skipped when popped.
	open    map[windowBounds]*openWindow
	closing closeHeap
	// lastOpen is the open window track found last, tried first: most
	// records fall in the newest window. Whatever deletes from open
	// clears it.
	lastOpen *openWindow
	// keysHint is how many keys the last window to close had: a new
	// window's key index is made that large, so that it does not grow
	// step by step as the window's keys arrive.
	keysHint int
	// rows, lastRows and spareRows hold a time-window store's cached
	// rows by window (window_rows.go).
	rows      map[int64]*windowRows
	lastRows  *windowRows
	spareRows []map[string]*cacheEntry
	// entries is where a time window's new cached rows come from.
	entries windowEntryArena
	// closeOrder is the order the last window closed in (closingKeys).
	closeOrder closeOrder
	// marked is the stream time of the last stream-time marker written.
	marked int64
	// lateDrops counts the (record, window) pairs dropped as late.
	lateDrops int64
	// seq numbers the records of a join buffer, whose keys end with it
	// so that records with the same key and timestamp are kept apart;
	// last and lastValue are the changelog key and value of the record
	// the buffer processed last (buffered or too old to be; nil for one
	// without a key), which the join processor after the buffer uses.
	seq             uint32
	last, lastValue []byte
	// index holds a join buffer's records by serialized key, decoded:
	// what pebble holds, so that a join looks its partners up without a
	// pebble scan per record. It costs the memory of the records within
	// the buffer's retention, and is rebuilt from pebble when the task
	// starts or rolls back. The map holds pointers so that adding a
	// record to a known key assigns nothing: an assignment would allocate
	// the key's string again. A key's records share one allocation with
	// the other buffer's of the same key (joinKey).
	index map[string]*joinKey
	// lastAdded is the key the record processed last was added to, nil
	// if it was not buffered: the join after the buffer probes the other
	// buffer's records of the key without looking the key up again.
	lastAdded *joinKey
	// final holds the open windows' rows of a cached time-window store
	// that emits final results, instead of the record cache
	// (window_final.go).
	final *finalRows
	// mem is set while a logged join buffer of an active task lives in
	// memory, pebble holding a snapshot only (see join_buffer.go).
	mem *liveBuffer
}

type windowBounds struct{ start, end int64 }

// openWindow is one window bounds of a store that is still open, with the
// keys that have a result in it: changelog key bytes to Windowed key, in
// an interface, as the window's results are emitted with it: boxed once,
// when the key is tracked (a new time-window row's own box: windowEntry),
// not once per result.
type openWindow struct {
	windowBounds
	closesAt int64
	keys     map[string]any
}

type closeItem struct {
	at int64
	windowBounds
}

type closeHeap []closeItem

func (h closeHeap) Len() int { return len(h) }
func (h closeHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].start < h[j].start
}
func (h closeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *closeHeap) Push(x any)   { *h = append(*h, x.(closeItem)) }
func (h *closeHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func newWindowState(spec *storeSpec, inner Serde) *windowState {
	w := &windowState{
		spec:         *spec.window,
		emitFinal:    spec.emitFinal,
		retention:    spec.retention,
		writeThrough: spec.window.kind != timeWindowKind,
		tsBytes:      8,
		inner:        inner,
		open:         make(map[windowBounds]*openWindow),
		marked:       -1,
		expiredAt:    -1,

		lowestSegment: math.MaxInt64,
		storedUpTo:    -1,
	}
	switch w.spec.kind {
	case sessionWindowKind:
		w.tsBytes = 16
	case joinWindowKind:
		w.tsBytes = 12 // the timestamp and the sequence number
		w.index = make(map[string]*joinKey)
	}
	if keepsFinalRows(spec) {
		w.final = &finalRows{keys: make(map[string]*finalKey)}
	}
	// Kafka Streams' rule: half the retention, at least a minute, so that
	// a store has few segments and drops one every half retention.
	w.interval = max(w.retention/2, 60_000)
	return w
}

// keySerde returns the serde of the store's Windowed keys.
func (w *windowState) keySerde() Serde {
	if w.spec.kind == sessionWindowKind {
		return SessionWindowedSerde(w.inner)
	}
	return TimeWindowedSerde(w.inner, w.spec.size)
}

// segmentTime returns the time a changelog key is segmented by: the start
// of a window, the end of a session.
func (w *windowState) segmentTime(kb []byte) int64 {
	return int64(binary.BigEndian.Uint64(kb[len(kb)-w.tsBytes:]))
}

// storeKey returns the pebble key of changelog key kb, appended to dst:
// the segment, the grouping key's length and kb, so that a key's windows
// in a segment are together. A join buffer's keys are in time order
// instead (segment, timestamp, sequence number, grouping key): the buffer
// is read from its in-memory index, never by key from pebble, and keys
// written in about the order they sort in make pebble's work at commit
// (sorting a large batch, or inserting into the memtable) and its flushes
// cheap.
func (w *windowState) storeKey(dst, kb []byte) []byte {
	seg := w.segmentTime(kb) / w.interval
	dst = binary.BigEndian.AppendUint64(dst, uint64(seg))
	if w.spec.kind == joinWindowKind {
		n := len(kb) - w.tsBytes
		return append(append(dst, kb[n:]...), kb[:n]...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(kb)-w.tsBytes))
	return append(dst, kb...)
}

// changelogKey returns the changelog key of pebble key sk, appended to
// dst: storeKey's inverse.
func (w *windowState) changelogKey(dst, sk []byte) []byte {
	if w.spec.kind == joinWindowKind {
		return append(append(dst, sk[8+w.tsBytes:]...), sk[8:8+w.tsBytes]...)
	}
	return append(dst, sk[12:]...)
}

// keyPrefix returns the pebble prefix of a grouping key's windows in seg.
func (w *windowState) keyPrefix(seg int64, inner []byte) []byte {
	p := binary.BigEndian.AppendUint64(make([]byte, 0, 12+len(inner)+16), uint64(seg))
	p = binary.BigEndian.AppendUint32(p, uint32(len(inner)))
	return append(p, inner...)
}

// stored notes that a window with segment time ts is in pebble. It
// raises maxSegment too, which the writers of the active raise already
// when a row enters the cache, but a standby applying its changelog
// raises only here: its reads (a stale query) scan up to it.
func (w *windowState) stored(ts int64) {
	w.maxSegment = max(w.maxSegment, ts/w.interval)
	w.lowestSegment = min(w.lowestSegment, ts/w.interval)
	w.storedUpTo = max(w.storedUpTo, ts)
}

// notStored reports whether the window of changelog key kb cannot be in
// pebble: nothing that late was ever written there.
func (w *windowState) notStored(kb []byte) bool {
	return w.segmentTime(kb) > w.storedUpTo
}

// expired reports whether the window of changelog key kb was past its
// retention at the last expiry: its segment may be gone, and writing it
// would bring a dropped window back.
func (w *windowState) expired(kb []byte) bool {
	return w.expiredAt >= 0 && w.segmentTime(kb)+w.retention <= w.expiredAt
}

// keyBytes serializes a Windowed key the way the store's changelog keys
// it; inner is the grouping key already serialized.
func (w *windowState) keyBytes(inner []byte, wk Windowed) []byte {
	return w.appendKey(make([]byte, 0, len(inner)+w.tsBytes), inner, wk)
}

// appendKey is keyBytes appending to kb.
func (w *windowState) appendKey(kb, inner []byte, wk Windowed) []byte {
	kb = append(kb, inner...)
	if w.spec.kind == sessionWindowKind {
		kb = binary.BigEndian.AppendUint64(kb, uint64(wk.End))
	}
	return binary.BigEndian.AppendUint64(kb, uint64(wk.Start))
}

// openWindow returns the open index's entry of wk's window, adding it. A
// store keeping finalRows lists in it only the stored rows memory does
// not hold, so its keys are made when the first is.
func (w *windowState) openWindow(wk Windowed) *openWindow {
	b := windowBounds{wk.Start, wk.End}
	if ow := w.lastOpen; ow != nil && ow.windowBounds == b {
		return ow
	}
	ow := w.open[b]
	if ow == nil {
		ow = &openWindow{windowBounds: b, closesAt: w.spec.closesAt(wk.Start, wk.End)}
		if w.final == nil {
			ow.keys = make(map[string]any, w.keysHint)
		}
		w.open[b] = ow
		heap.Push(&w.closing, closeItem{at: ow.closesAt, windowBounds: b})
	}
	w.lastOpen = ow
	return ow
}

// track adds a window a key has a result in to the open index: k is its
// changelog key, which the index keeps, so a string that nothing writes
// (a cached row's cacheKey costs no allocation). boxed is wk in an
// interface, or nil to box it here if the key is new.
func (w *windowState) track(k string, wk Windowed, boxed any) {
	ow := w.openWindow(wk)
	if ow.keys == nil {
		ow.keys = make(map[string]any)
	}
	if boxed != nil {
		// One map operation: a key already there keeps its string, and
		// its value is an equal Windowed.
		ow.keys[k] = boxed
	} else if _, ok := ow.keys[k]; !ok {
		ow.keys[k] = wk
	}
}

// untrack removes a key's window from the open index: a session merged
// into another.
func (w *windowState) untrack(kb []byte, wk Windowed) {
	b := windowBounds{wk.Start, wk.End}
	if ow := w.open[b]; ow != nil {
		delete(ow.keys, string(kb))
		if len(ow.keys) == 0 {
			delete(w.open, b)
			w.lastOpen = nil
		}
	}
}

// writeWindow writes one window row to pebble's pending batch.
func (st *taskStore) writeWindow(kb, vb []byte) error {
	st.win.stored(st.win.segmentTime(kb))
	sk := st.win.storeKey(st.scratch[:0], kb)
	st.scratch = sk
	var err error
	if vb == nil {
		err = st.db.Delete(sk)
	} else {
		err = st.db.Put(sk, vb)
	}
	if err != nil {
		return fmt.Errorf("writing store %q: %w", st.spec.name, err)
	}
	return nil
}

// forwardWindowed sends a flushed windowed row downstream, unless results
// wait for their window to close: the aggregate, at the largest timestamp
// of its records; a deletion (a merged session), at the window's end.
func (st *taskStore) forwardWindowed(t *task, e *cacheEntry) error {
	if st.win.emitFinal {
		return nil
	}
	r := record{key: e.key, value: unstamp(e.value), timestamp: e.timestamp}
	if e.oldFound {
		r.old = unstamp(e.old)
	}
	if e.value != nil {
		r.timestamp = e.value.(stamped).ts
	}
	return forward(t, st.downstream, r)
}

// dropLate counts a record that came for a closed window and reports it.
func (st *taskStore) dropLate(t *task, r record, wk Windowed) {
	st.win.lateDrops++
	if len(t.app.hooks.late) == 0 {
		return
	}
	ev := LateRecordEvent{
		ApplicationID: t.app.cfg.ApplicationID, InstanceID: t.app.cfg.InstanceID,
		Task: t.id, Store: st.spec.name, Timestamp: r.timestamp, StreamTime: t.streamTime,
		WindowStart: wk.Start, WindowEnd: wk.End, Offset: -1,
	}
	if c := t.current; c != nil {
		ev.Topic, ev.Partition, ev.Offset = c.Topic, c.Partition, c.Offset
	}
	for _, h := range t.app.hooks.late {
		h.OnLateRecordDropped(ev)
	}
}

// advanceWindows closes the windows that stream time has reached, sending
// their final results when the store emits on close, and then drops the
// segments past retention.
func (st *taskStore) advanceWindows(t *task) error {
	w := st.win
	for len(w.closing) > 0 && w.closing[0].at <= t.streamTime {
		it := heap.Pop(&w.closing).(closeItem)
		ow := w.open[it.windowBounds]
		if ow == nil || ow.closesAt != it.at {
			continue // every key of it merged away or deleted
		}
		delete(w.open, it.windowBounds)
		w.lastOpen = nil
		w.keysHint = len(ow.keys)
		if err := st.closeWindow(t, ow); err != nil {
			return err
		}
	}
	return st.expireSegments(t.streamTime)
}

// closeWindow emits a closed window's final results, keys in byte order,
// and reports the close.
func (st *taskStore) closeWindow(t *task, ow *openWindow) error {
	w := st.win
	keys := len(ow.keys)
	if w.final != nil {
		var err error
		if keys, err = st.closeFinal(t, ow); err != nil {
			return err
		}
	} else if w.emitFinal {
		for _, kb := range w.closingKeys(ow) {
			// Most closing rows are in the cache: read the entry once, for
			// the result and for flushing it.
			e := st.row(kb)
			var v any
			if e != nil && e.valueBytes != nil && st.typed.decodesAs(e.value) {
				v = e.value
			} else {
				var found bool
				var err error
				if v, found, err = st.getBytes([]byte(kb)); err != nil {
					return err
				} else if !found {
					continue
				}
			}
			sv := v.(stamped)
			var key any
			if e != nil {
				key = e.key // the same Windowed, looked up already
			} else {
				key = ow.keys[kb]
			}
			if err := forward(t, st.downstream, record{key: key, value: sv.value, timestamp: sv.ts}); err != nil {
				return err
			}
			if e != nil {
				if err := st.flushClosed(t, kb, e); err != nil {
					return err
				}
			}
		}
	}
	if len(t.app.hooks.closed) == 0 {
		return nil
	}
	ev := WindowClosedEvent{
		ApplicationID: t.app.cfg.ApplicationID, InstanceID: t.app.cfg.InstanceID,
		Task: t.id, Store: st.spec.name, Start: ow.start, End: ow.end,
		Grace: time.Duration(w.spec.grace) * time.Millisecond, ClosesAt: ow.closesAt,
		StreamTime: t.streamTime, Keys: keys, Emitted: w.emitFinal,
	}
	for _, h := range t.app.hooks.closed {
		h.OnWindowClosed(ev)
	}
	return nil
}

// flushClosed writes a closed window's cached row to pebble and the
// changelog at once: nothing updates it any more, and the cache is better
// spent on open windows. A window whose retention ends as it closes (the
// default) is not written at all: no record or query will read it again,
// and a restore that lands before the close rebuilds it from the records
// after the last commit, whose changelog holds all it had before.
func (st *taskStore) flushClosed(t *task, kb string, e *cacheEntry) error {
	st.forget(t, kb) // evict skips its entry in st.order
	if st.win.segmentTime(e.keyBytes)+st.win.retention <= t.streamTime {
		return nil
	}
	return st.flushEntry(t, e)
}

// expireSegments drops the segments whose every window is past retention
// at stream time now: segment s holds segment times below (s+1)*interval.
// A join buffer's retention runs behind its own side's latest record
// instead, as Kafka Streams' buffers expire by the time they have seen: a
// side that falls behind the other keeps its records for the other side's
// records out of order.
func (st *taskStore) expireSegments(now int64) error {
	w := st.win
	if w.mem != nil {
		return nil // expired at commits (commitBuffer)
	}
	if w.spec.kind == joinWindowKind {
		now = min(now, w.storedUpTo)
	}
	if now < 0 {
		return nil
	}
	w.expiredAt = now
	below, ok := w.expiryBelow(now)
	if !ok {
		return nil
	}
	if w.lowestSegment >= below {
		w.expiredBelow = below // nothing stored below: nothing to drop
		return nil
	}
	lo := binary.BigEndian.AppendUint64(nil, uint64(w.expiredBelow))
	hi := binary.BigEndian.AppendUint64(nil, uint64(below))
	if err := st.db.DeleteRange(lo, hi); err != nil {
		return fmt.Errorf("dropping expired segments of store %q: %w", st.spec.name, err)
	}
	w.expiredBelow = below
	w.dropIndexed(below * w.interval)
	return nil
}

// expiryBelow returns the first segment that stays at time now, and
// whether segments below it are left to drop.
func (w *windowState) expiryBelow(now int64) (int64, bool) {
	if now < 0 || now-w.retention+1 < 0 {
		return 0, false
	}
	below := (now - w.retention + 1) / w.interval
	return below, below > w.expiredBelow
}

// loadSegments finds the lowest and highest segments in pebble, for a
// store a standby starts following with rows already there (left by an
// earlier run, or by the task it was, whose rollBack forgot them): its
// reads scan up to the highest, its expiry deletes from the lowest. It
// seeks to each segment's first row, so it reads one row per segment.
func (st *taskStore) loadSegments() error {
	w := st.win
	var from []byte
	for {
		seg := int64(-1)
		if err := st.db.Range(from, nil, func(sk, _ []byte) bool {
			seg = int64(binary.BigEndian.Uint64(sk))
			return false
		}); err != nil {
			return fmt.Errorf("reading the segments of store %q: %w", st.spec.name, err)
		}
		if seg < 0 || seg == math.MaxInt64 {
			return nil
		}
		w.maxSegment = max(w.maxSegment, seg)
		w.lowestSegment = min(w.lowestSegment, seg)
		from = binary.BigEndian.AppendUint64(nil, uint64(seg+1))
	}
}

// loadOpenWindows rebuilds the open index from pebble when a task starts:
// every stored window that stream time has not closed yet. Windows that
// closed before are not in it, so they are neither reopened nor emitted
// twice.
func (st *taskStore) loadOpenWindows(streamTime int64) error {
	w := st.win
	if w.mem != nil {
		return nil // a join buffer in memory: its index is current
	}
	clear(w.open)
	w.lastOpen = nil
	w.closing = w.closing[:0]
	w.marked = streamTime
	var decodeErr error
	err := st.db.Range(nil, nil, func(sk, vb []byte) bool {
		w.maxSegment = max(w.maxSegment, int64(binary.BigEndian.Uint64(sk)))
		kb := w.changelogKey(nil, sk)
		w.stored(w.segmentTime(kb))
		if w.spec.kind == joinWindowKind {
			// A join buffer tracks no windows; it numbers on from its
			// highest sequence number and indexes its records.
			w.seq = max(w.seq, binary.BigEndian.Uint32(kb[len(kb)-4:])+1)
			v, err := st.valueSerde.Deserialize(st.changelogOrName(), bytes.Clone(vb))
			if err != nil {
				decodeErr = fmt.Errorf("store %q: decoding buffered value: %w", st.spec.name, err)
				return false
			}
			w.addIndexed(kb[:len(kb)-12], bufferedRecord{kb: kb, ts: w.segmentTime(kb), value: v}, st.joinPartner())
			return true
		}
		k, err := st.keySerde.Deserialize(st.changelogOrName(), kb)
		if err != nil {
			decodeErr = fmt.Errorf("store %q: decoding stored key: %w", st.spec.name, err)
			return false
		}
		wk := k.(Windowed)
		if w.spec.closesAt(wk.Start, wk.End) > streamTime {
			w.track(string(kb), wk, nil)
		}
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return err
	}
	if w.spec.kind == joinWindowKind && st.changelog != "" {
		st.goLive(streamTime)
		return nil
	}
	return st.expireSegments(streamTime)
}

// markStreamTime writes the task's stream time to the changelog when it
// moved since the last marker, and reports whether it wrote. The caller
// flushed the producer before, so every result emitted up to that stream
// time is acknowledged: a restore that takes its stream time from the
// marker never skips a close whose result was lost.
func (st *taskStore) markStreamTime(t *task) bool {
	w := st.win
	if st.changelog == "" || t.streamTime <= w.marked {
		return false
	}
	w.marked = t.streamTime
	t.app.send(&kgo.Record{
		Topic:     st.changelog,
		Partition: st.partition,
		Key:       []byte{},
		Value:     binary.BigEndian.AppendUint64(nil, uint64(t.streamTime)),
		Timestamp: time.UnixMilli(t.streamTime),
	}, st.promise)
	return true
}

// storedWindow is a window or session found in the store; value is
// stamped.
type storedWindow struct {
	kb    []byte
	wk    Windowed
	value any
}

// keyWindows returns the stored windows of a key (inner serialized, key
// decoded), oldest first: of time and sliding windows those starting
// within [from, to], of sessions those ending at or after from and
// starting at or before to. It scans one range per live segment. With
// committed it reads what the last commit applied, as queries from other
// goroutines must; else the pending writes too, which hold every window of
// the write-through stores (sessions, sliding windows).
func (st *taskStore) keyWindows(inner []byte, key any, from, to int64, committed bool) ([]storedWindow, error) {
	w := st.win
	from = max(from, 0)
	session := w.spec.kind == sessionWindowKind
	// No window lies past the highest segment written, whatever to says
	// (a caller may ask up to math.MaxInt64).
	lastSeg := min(to/w.interval, w.maxSegment)
	if session {
		lastSeg = w.maxSegment // segmented by end, which may be past to
	}
	scan := st.db.Range
	if committed {
		scan = st.db.RangeCommitted
	}
	firstSeg := max(from/w.interval, w.expiredBelow)
	if committed {
		// A query from 0 would otherwise try every segment since the
		// epoch on a store whose expiry has not run yet (a standby that
		// has seen no stream-time marker): nothing lies below the
		// lowest segment written, which every write to pebble and every
		// load of its rows lowers (stored).
		firstSeg = max(firstSeg, min(w.lowestSegment, lastSeg+1))
	}
	var out []storedWindow
	var decodeErr error
	for seg := firstSeg; seg <= lastSeg; seg++ {
		prefix := w.keyPrefix(seg, inner)
		// Within a segment a key's rows are in time order: by start, or
		// for sessions by end and then start.
		lower := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(from))
		upper := prefixUpper(prefix)
		if !session {
			upper = binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(to+1))
		}
		err := scan(lower, upper, func(sk, vb []byte) bool {
			kb := sk[12:]
			wk := Windowed{Key: key, Start: int64(binary.BigEndian.Uint64(kb[len(kb)-8:]))}
			if session {
				if wk.Start > to {
					return true
				}
				wk.End = int64(binary.BigEndian.Uint64(kb[len(kb)-16:]))
			} else {
				wk.End = wk.Start + w.spec.size
			}
			v, err := st.valueSerde.Deserialize(st.changelogOrName(), bytes.Clone(vb))
			if err != nil {
				decodeErr = fmt.Errorf("store %q: decoding stored value: %w", st.spec.name, err)
				return false
			}
			out = append(out, storedWindow{kb: bytes.Clone(kb), wk: wk, value: v})
			return true
		})
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// restoreKey maps a changelog record of a windowed store to its pebble
// key, or reports a stream-time marker.
func (w *windowState) restoreKey(dst, kb, value []byte) (sk []byte, marker int64, isMarker bool, err error) {
	if len(kb) == 0 {
		if len(value) != 8 {
			return nil, 0, false, fmt.Errorf("stream-time marker has %d bytes, want 8", len(value))
		}
		return nil, int64(binary.BigEndian.Uint64(value)), true, nil
	}
	if len(kb) < w.tsBytes {
		return nil, 0, false, fmt.Errorf("windowed changelog key of %d bytes is shorter than its %d bytes of timestamps", len(kb), w.tsBytes)
	}
	return w.storeKey(dst, kb), 0, false, nil
}

// prefixUpper returns the smallest key above every key starting with p.
func prefixUpper(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
