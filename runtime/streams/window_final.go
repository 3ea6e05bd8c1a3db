package streams

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"
)

// A time-window store that emits final results keeps its open windows'
// rows apart from the record cache, in finalRows: by grouping key, each
// key holding its open windows' rows, as a program written for the
// windowed count alone would (bench.WindowedCeiling). A record looks its
// key up in one map that lives across windows, as a plain count's cache
// does, and finds its window among the key's few open rows; the record
// cache would make a new entry, with its own key, flush-order slot and
// open-index entry, for every key in every window, and drop them all
// again at the close. Measured on `braid bench windowed`, the windowed
// count went from 0.76-0.83 of the plain count to 0.83-0.92.
//
// The rows play the record cache's part and keep its rules:
//   - A commit writes the rows changed since the last one to pebble's
//     pending batch and the changelog (flushFinal); they stay in memory,
//     clean, until their window closes.
//   - A closing window's rows go downstream in the byte order of their
//     changelog keys and leave memory; one whose retention outlasts the
//     close is written first if it changed (closeFinal).
//   - Over the cache budget, every row is written and dropped
//     (evictFinal); the open index (openWindow.keys) then lists the
//     stored rows of open windows that memory does not hold, as it does
//     after a restart (loadOpenWindows), and a record of such a key
//     reads its row back from pebble (openFinalRow).
//
// Keys stay in the map while they have rows, and for one close after
// their last row left, so that a key seen every window is not dropped and
// added again at each close (sweepIdle).

// finalRows are the rows of a time-window store's open windows that emits
// final results.
type finalRows struct {
	keys map[string]*finalKey
	// windows are the open windows with rows here, by start.
	windows []*finalWindow
	// dirty lists the rows changed since the last flush.
	dirty []*finalRow
	// emptied holds the keys the last close left without rows
	// (sweepIdle).
	emptied []*finalKey
	// counts is set for Count, whose aggregate is the row's n (see
	// aggregation.counts); the store's processor sets it.
	counts bool
	// rowArena and boxes hand out rows and the boxes of results'
	// Windowed keys in chunks, as windowEntryArena does.
	rowArena []finalRow
	boxes    []Windowed
	// closeSeq numbers the closes; lastOrder holds the keys of the last
	// close in the order emitted, and ordered is reused for the next
	// (window_final_close.go). closing and closeKeys are reused by a
	// close that reads rows back from pebble too.
	closeSeq           uint64
	lastOrder, ordered []*finalKey
	closing            []closingRow
	closeKeys          []byte
}

// finalKey is a grouping key with rows in open windows.
type finalKey struct {
	// inner is the key serialized, a string over innerBytes.
	inner      string
	innerBytes []byte
	// key is the grouping key as records carry it.
	key any
	// rows are the key's rows in memory, by window start.
	rows []*finalRow
	// idle is set while the key is on finalRows.emptied.
	idle bool
	// closing is the key's row in the window closing now, while closeSeq
	// is that close's number and the key is not ordered yet.
	closing  *finalRow
	closeSeq uint64
}

// finalRow is a key's row in one open window.
type finalRow struct {
	k     *finalKey
	start int64
	// value is the aggregate (n for a Count), nil when the row has no
	// result: new, or deleted by an aggregator returning nil.
	value any
	n     int64
	has   bool
	// ts is the largest timestamp of the row's records, which its result
	// carries; logTS the timestamp of the record that changed it last,
	// which its changelog record carries, as the record cache logs it.
	ts, logTS int64
	// vb is the row's encoding when the serde may fail on its value (see
	// typedValues.decodesAs), made as the record changes it so that the
	// failure is that record's; nil means encode at the flush.
	vb []byte
	// stored says pebble holds the row (flushed, or read back).
	stored, dirty, closed bool
}

// finalWindow is an open window's rows in memory.
type finalWindow struct {
	start int64
	rows  []*finalRow
}

// finalRowOverhead and finalKeyOverhead approximate what a row and a key
// cost beside the key's bytes, for the cache's budget.
const (
	finalRowOverhead = 96
	finalKeyOverhead = 96
)

// keepsFinalRows reports whether a store of spec keeps its rows in
// finalRows: a cached time-window store that emits final results.
func keepsFinalRows(spec *storeSpec) bool {
	return spec.window != nil && spec.window.kind == timeWindowKind && spec.emitFinal && spec.cached
}

// key returns the entry of grouping key inner (serialized; key as the
// record carries it), adding it if new.
func (fr *finalRows) key(t *task, st *taskStore, inner []byte, key any) *finalKey {
	if fk := fr.keys[keyView(inner)]; fk != nil {
		return fk
	}
	fk := &finalKey{innerBytes: append(t.keys.alloc(len(inner)), inner...)}
	fk.inner = keyView(fk.innerBytes)
	fk.key = ownKey(&fk.innerBytes, key)
	fr.keys[fk.inner] = fk
	st.charge(t, len(inner)+finalKeyOverhead)
	return fk
}

// newRow returns a zeroed row.
func (fr *finalRows) newRow() *finalRow { return nextOf(&fr.rowArena, windowEntryChunk) }

// window returns the open window starting at start, adding it.
func (fr *finalRows) window(start int64) *finalWindow {
	i := len(fr.windows)
	for i > 0 && fr.windows[i-1].start >= start {
		if fr.windows[i-1].start == start {
			return fr.windows[i-1]
		}
		i--
	}
	fw := &finalWindow{start: start}
	fr.windows = slices.Insert(fr.windows, i, fw)
	return fw
}

// takeWindow removes the window starting at start and returns it, or nil.
func (fr *finalRows) takeWindow(start int64) *finalWindow {
	for i, fw := range fr.windows {
		if fw.start == start {
			fr.windows = slices.Delete(fr.windows, i, i+1)
			return fw
		}
	}
	return nil
}

// markDirty lists row for the next flush.
func (fr *finalRows) markDirty(row *finalRow) {
	if !row.dirty {
		row.dirty = true
		fr.dirty = append(fr.dirty, row)
	}
}

// aggregate returns row's aggregate. A Count's is boxed over the row's n
// only when shared is false: the caller neither keeps it nor lets it out
// while the row may still change.
func (fr *finalRows) aggregate(row *finalRow, shared bool) any {
	if !fr.counts {
		return row.value
	}
	if shared {
		return row.n
	}
	return ifaceAt(int64Type, unsafe.Pointer(&row.n))
}

// boxKey returns Windowed{key, start, end} in an interface, boxed in a
// chunk of boxes rather than one allocation per result.
func (fr *finalRows) boxKey(key any, start, end int64) any {
	b := nextOf(&fr.boxes, windowEntryChunk)
	*b = Windowed{Key: key, Start: start, End: end}
	return ifaceAt(windowedType, unsafe.Pointer(b))
}

// find returns the row in memory of changelog key kb, or nil.
func (fr *finalRows) find(kb []byte) *finalRow {
	if len(kb) < 8 {
		return nil
	}
	fk := fr.keys[keyView(kb[:len(kb)-8])]
	if fk == nil {
		return nil
	}
	start := keyStart(keyView(kb))
	for _, row := range fk.rows {
		if row.start == start {
			return row
		}
	}
	return nil
}

// processFinal is timeWindowProc.process for a store keeping finalRows:
// r goes into its key's row of each open window of p.starts.
func (p *timeWindowProc) processFinal(t *task, r record, inner []byte) error {
	st := p.store
	fr := st.win.final
	fr.counts = p.agg.counts
	var fk *finalKey
	i := 0 // the key's rows are by start, as p.starts are
	for _, start := range p.starts {
		wk := Windowed{Key: r.key, Start: start, End: start + p.spec.size}
		if p.closed(t, wk) {
			st.dropLate(t, r, wk)
			continue
		}
		if fk == nil {
			fk = fr.key(t, st, inner, r.key)
		}
		for i < len(fk.rows) && fk.rows[i].start < start {
			i++
		}
		var row *finalRow
		if i < len(fk.rows) && fk.rows[i].start == start {
			row = fk.rows[i]
		} else {
			var err error
			if row, err = p.openFinalRow(t, fk, wk); err != nil {
				return err
			}
			fk.rows = slices.Insert(fk.rows, i, row)
		}
		if err := p.foldFinal(t, row, r); err != nil {
			return err
		}
	}
	return nil
}

// openFinalRow makes fk's row of window wk, which memory does not hold:
// new, unless the open index lists it as stored (after a restart or an
// eviction), when it is read back from pebble.
func (p *timeWindowProc) openFinalRow(t *task, fk *finalKey, wk Windowed) (*finalRow, error) {
	st := p.store
	w, fr := st.win, st.win.final
	row := fr.newRow()
	row.k, row.start = fk, wk.Start
	ow := w.openWindow(wk)
	if len(ow.keys) > 0 {
		p.kbuf = w.appendKey(p.kbuf[:0], fk.innerBytes, wk)
		if _, ok := ow.keys[keyView(p.kbuf)]; ok {
			old, _, found, err := st.getRow(nil, p.kbuf)
			if err != nil {
				return nil, t.processingError(p.name, err)
			}
			if found {
				sv := old.(stamped)
				row.has, row.stored, row.ts, row.logTS = true, true, sv.ts, sv.ts
				row.value = sv.value
				if fr.counts {
					n, ok := sv.value.(int64)
					if !ok {
						return nil, t.processingError(p.name, fmt.Errorf("store %q: stored count of window %d is a %T, not an int64", st.spec.name, wk.Start, sv.value))
					}
					row.value, row.n = nil, n
				}
			}
			// Memory holds the row from here on, not the open index.
			delete(ow.keys, keyView(p.kbuf))
		}
	}
	w.maxSegment = max(w.maxSegment, wk.Start/w.interval)
	fw := fr.window(wk.Start)
	fw.rows = append(fw.rows, row)
	st.charge(t, len(fk.inner)+8+finalRowOverhead)
	return row, nil
}

// foldFinal adds r to row. A fold that fails, or a value that fails to
// encode, leaves the row as it was.
func (p *timeWindowProc) foldFinal(t *task, row *finalRow, r record) error {
	st, fr := p.store, p.store.win.final
	ts := r.timestamp
	if row.has {
		ts = max(row.ts, r.timestamp)
	}
	if p.agg.counts {
		if !row.has {
			row.n = 0
		}
		row.n++
		row.has, row.ts, row.logTS = true, ts, r.timestamp
		fr.markDirty(row)
		return nil
	}
	var old any
	if row.has {
		old = stamped{value: row.value, ts: row.ts}
	}
	sv, err := p.fold(r, old, row.has)
	if err != nil {
		return t.processingError(p.name, err)
	}
	var vb []byte
	if sv.value != nil && !st.typed.decodesStamped(sv) {
		if vb, err = st.valueBytes(t, sv); err != nil {
			return err
		}
	}
	if sv.value == nil {
		// An aggregator that returns nil deletes the window's result,
		// as in Kafka Streams; the next record starts it again.
		if !row.has && !row.stored {
			return nil
		}
		row.value, row.has, row.vb = nil, false, nil
	} else {
		row.value, row.has, row.vb, row.ts = sv.value, true, vb, sv.ts
	}
	row.logTS = r.timestamp
	fr.markDirty(row)
	return nil
}

// writeFinal writes row to pebble's pending batch and the changelog. A
// row made and deleted between two flushes was never anybody's: it is
// not written.
func (st *taskStore) writeFinal(t *task, row *finalRow) error {
	if !row.has && !row.stored {
		return nil
	}
	w, fr := st.win, st.win.final
	fk := row.k
	kb := binary.BigEndian.AppendUint64(append(t.keys.alloc(len(fk.inner)+8), fk.inner...), uint64(row.start))
	var vb []byte
	if row.has {
		vb = row.vb
		if vb == nil {
			var err error
			if vb, err = st.valueBytes(t, stamped{value: fr.aggregate(row, false), ts: row.ts}); err != nil {
				return err
			}
		}
	}
	if !w.expired(kb) {
		if err := st.writeWindow(kb, vb); err != nil {
			return err
		}
	}
	st.log(t, kb, vb, row.logTS)
	row.stored = row.has
	return nil
}

// flushFinal writes the rows changed since the last flush; they stay in
// memory, clean. On a failure the rows not written yet stay listed.
func (st *taskStore) flushFinal(t *task) error {
	fr := st.win.final
	done := 0
	defer func() {
		rest := copy(fr.dirty, fr.dirty[done:])
		clear(fr.dirty[rest:])
		fr.dirty = fr.dirty[:rest]
	}()
	for ; done < len(fr.dirty); done++ {
		row := fr.dirty[done]
		if !row.dirty || row.closed {
			row.dirty = false
			continue // written as its window closed, or closed unwritten
		}
		row.dirty = false
		if err := st.writeFinal(t, row); err != nil {
			row.dirty = true
			return err
		}
	}
	return nil
}

// evictFinal makes room in the cache: it writes every changed row, then
// drops every row and key from memory, listing the stored rows in their
// windows' open index.
func (st *taskStore) evictFinal(t *task) error {
	if err := st.flushFinal(t); err != nil {
		return err
	}
	w, fr := st.win, st.win.final
	for _, fw := range fr.windows {
		for _, row := range fw.rows {
			st.charge(t, -(len(row.k.inner) + 8 + finalRowOverhead))
			if !row.stored {
				continue
			}
			wk := Windowed{Key: row.k.key, Start: fw.start, End: fw.start + w.spec.size}
			w.track(string(w.keyBytes(row.k.innerBytes, wk)), wk, nil)
		}
	}
	for _, fk := range fr.keys {
		st.charge(t, -(len(fk.inner) + finalKeyOverhead))
	}
	clear(fr.keys)
	fr.windows, fr.emptied = nil, nil
	return nil
}

// sweepIdle drops the keys that the last close left without rows and
// that have had none since.
func (st *taskStore) sweepIdle(t *task) {
	fr := st.win.final
	for _, fk := range fr.emptied {
		fk.idle = false
		if len(fk.rows) == 0 {
			delete(fr.keys, fk.inner)
			st.charge(t, -(len(fk.inner) + finalKeyOverhead))
		}
	}
	clear(fr.emptied)
	fr.emptied = fr.emptied[:0]
}

// getFinal is getBytes for a row in memory: hit says memory holds kb's
// row, whose value (stamped, a count copied) it returns.
func (fr *finalRows) getFinal(kb []byte) (value any, found, hit bool) {
	row := fr.find(kb)
	if row == nil {
		return nil, false, false
	}
	if !row.has {
		return nil, false, true
	}
	return stamped{value: fr.aggregate(row, true), ts: row.ts}, true, true
}

// rowsIn counts the results in memory of the window starting at start.
func (fr *finalRows) rowsIn(start int64) int {
	n := 0
	for _, fw := range fr.windows {
		if fw.start != start {
			continue
		}
		for _, row := range fw.rows {
			if row.has {
				n++
			}
		}
	}
	return n
}
