package streams

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
)

// A closing window's results go out in the byte order of their changelog
// keys (the grouping key, then the window start), as the record cache
// emits them. Sorting a window's keys afresh at every close cost more than
// all else a close does (a third of the windowed count's processing,
// measured), and a key mostly has a row in every window: the keys of the
// last close, in the order they went out, are the next close's order but
// for the keys that are new, which are sorted alone and merged in. Two
// keys of the same length compare the same under any window start; a key
// that is a prefix of another may not, so the carried order is checked,
// and mended, by an insertion sort, about one comparison per key.

// closingRow is a result of a closing window: a row in memory, or (row
// nil) a stored row the open index lists, with its boxed Windowed key.
type closingRow struct {
	kb  string
	row *finalRow
	key any
}

// compareAt compares the changelog keys of grouping keys a and b in the
// window starting at start (8 big-endian bytes).
func compareAt(a, b string, start *[8]byte) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 || len(a) == len(b) {
		return c
	}
	// One is a prefix of the other: the start's bytes follow it.
	ka := append(append(make([]byte, 0, len(a)+8), a...), start[:]...)
	kb := append(append(make([]byte, 0, len(b)+8), b...), start[:]...)
	return bytes.Compare(ka, kb)
}

// closeFinal emits the final results of the closing window ow and drops
// its rows from memory. It returns how many keys had a result.
func (st *taskStore) closeFinal(t *task, ow *openWindow) (int, error) {
	fr := st.win.final
	st.sweepIdle(t)
	fr.closeSeq++
	var rows []*finalRow
	if fw := fr.takeWindow(ow.start); fw != nil {
		rows = fw.rows
	}
	for _, row := range rows {
		if err := st.unlinkClosing(t, row, ow); err != nil {
			return 0, err
		}
	}
	order := fr.orderClosing(rows, ow.start)
	if len(ow.keys) > 0 {
		return st.closeMerged(t, ow, order)
	}
	for i, fk := range order {
		if err := st.emitFinal(t, ow, fk.closing); err != nil {
			return i, err
		}
		fk.closing = nil
	}
	return len(order), nil
}

// unlinkClosing takes a closing row from its key and the cache's size,
// marks it for ordering if it has a result, and deletes it from pebble if
// it is deleted there and kept past the close.
func (st *taskStore) unlinkClosing(t *task, row *finalRow, ow *openWindow) error {
	fr := st.win.final
	row.closed = true
	fk := row.k
	if i := slices.Index(fk.rows, row); i >= 0 {
		fk.rows = slices.Delete(fk.rows, i, i+1)
	}
	if len(fk.rows) == 0 && !fk.idle {
		fk.idle = true
		fr.emptied = append(fr.emptied, fk)
	}
	st.charge(t, -(len(fk.inner) + 8 + finalRowOverhead))
	if row.has {
		fk.closing, fk.closeSeq = row, fr.closeSeq
		return nil
	}
	if row.dirty && ow.start+st.win.retention > t.streamTime {
		row.dirty = false
		return st.writeFinal(t, row)
	}
	return nil
}

// orderClosing returns the keys with a result among the closing rows, in
// the byte order of their changelog keys in the window starting at start,
// and keeps that order for the next close.
func (fr *finalRows) orderClosing(rows []*finalRow, start int64) []*finalKey {
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], uint64(start))
	seq := fr.closeSeq
	prev, order := fr.lastOrder, fr.ordered[:0]
	for _, fk := range prev {
		if fk.closeSeq == seq {
			fk.closeSeq = 0 // ordered
			order = append(order, fk)
		}
	}
	// Mend the carried order where a prefix key compares otherwise under
	// this start.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && compareAt(order[j].inner, order[j-1].inner, &sb) < 0; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	carried := len(order)
	for _, row := range rows {
		if fk := row.k; fk.closeSeq == seq {
			fk.closeSeq = 0
			order = append(order, fk)
		}
	}
	spare := prev
	if fresh := order[carried:]; len(fresh) > 0 {
		slices.SortFunc(fresh, func(a, b *finalKey) int { return compareAt(a.inner, b.inner, &sb) })
		spare, order = order, mergeOrdered(prev[:0], order[:carried], fresh, &sb)
	}
	clear(spare[:cap(spare)]) // keeps no dropped key alive
	fr.lastOrder, fr.ordered = order, spare[:0]
	return order
}

// mergeOrdered appends to dst the keys of a and b, each in order, in
// order.
func mergeOrdered(dst, a, b []*finalKey, start *[8]byte) []*finalKey {
	for len(a) > 0 && len(b) > 0 {
		if compareAt(b[0].inner, a[0].inner, start) < 0 {
			dst, b = append(dst, b[0]), b[1:]
		} else {
			dst, a = append(dst, a[0]), a[1:]
		}
	}
	return append(append(dst, a...), b...)
}

// emitFinal sends the closing row's result downstream, and writes it
// first if it changed and its window is kept past the close: a window
// whose retention ends as it closes (the default) is not written, as
// flushClosed says.
func (st *taskStore) emitFinal(t *task, ow *openWindow, row *finalRow) error {
	fr := st.win.final
	key := fr.boxKey(row.k.key, ow.start, ow.end)
	if err := forward(t, st.downstream, record{key: key, value: fr.aggregate(row, false), timestamp: row.ts}); err != nil {
		return err
	}
	if row.dirty && ow.start+st.win.retention > t.streamTime {
		row.dirty = false
		return st.writeFinal(t, row)
	}
	return nil
}

// closeMerged is the end of closeFinal when the open index lists stored
// rows that memory does not hold (after a restart or an eviction): their
// results are read back from pebble and merged, by changelog key, with
// those of the rows in memory, in order.
func (st *taskStore) closeMerged(t *task, ow *openWindow, order []*finalKey) (int, error) {
	fr := st.win.final
	items, arena := fr.closing[:0], fr.closeKeys[:0]
	var start [8]byte
	binary.BigEndian.PutUint64(start[:], uint64(ow.start))
	for _, fk := range order {
		// A key copied before the arena grew stays where it was, in the
		// array it was copied to, which it keeps alive.
		n := len(arena)
		arena = append(append(arena, fk.inner...), start[:]...)
		items = append(items, closingRow{kb: keyView(arena[n:]), row: fk.closing})
		fk.closing = nil
	}
	for kb, key := range ow.keys {
		items = append(items, closingRow{kb: kb, key: key})
	}
	slices.SortFunc(items, func(a, b closingRow) int { return strings.Compare(a.kb, b.kb) })
	defer func() {
		clear(items)
		fr.closing, fr.closeKeys = items[:0], arena[:0]
	}()
	keys := 0
	for _, it := range items {
		if it.row != nil {
			keys++
			if err := st.emitFinal(t, ow, it.row); err != nil {
				return keys, err
			}
			continue
		}
		v, found, err := st.getBytes([]byte(it.kb))
		if err != nil {
			return keys, err
		} else if !found {
			continue
		}
		sv := v.(stamped)
		keys++
		if err := forward(t, st.downstream, record{key: it.key, value: sv.value, timestamp: sv.ts}); err != nil {
			return keys, err
		}
	}
	return keys, nil
}
