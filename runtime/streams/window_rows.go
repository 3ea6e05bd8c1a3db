package streams

import "unsafe"

// A time-window store's record cache is not the store's one map of rows
// by changelog key (taskStore.cache): it is a map per window start, of the
// window's rows by grouping key. A record looks its row up in its
// window's map, which holds a row per key, as large as a Count's cache,
// where one map of every open window's rows would hold a row per key per
// open window, and carry a tombstone for every row the closed windows
// took away; measured, that larger map's lookups missed the CPU's caches
// twice as often. A window's rows leave together as it closes, and its
// emptied map is cleared (which drops its tombstones) and kept for the
// next window, which then grows no map.
//
// Only time windows emitting every update are kept so: their rows wait in
// the cache until their flush. Time windows emitting final results keep
// their rows out of the cache (window_final.go), and sessions and sliding
// windows write through and keep the store's one map.

// windowRows are the cached rows of one window start, by grouping key
// (the changelog key without its 8-byte start).
type windowRows struct {
	start int64
	rows  map[string]*cacheEntry
}

// spareRowMaps is how many emptied maps of rows a store keeps for new
// windows: a tumbling window closes as the next opens.
const spareRowMaps = 2

// rowsByWindow reports whether the store keeps its cached rows by window.
func (st *taskStore) rowsByWindow() bool {
	return st.win != nil && st.win.spec.kind == timeWindowKind
}

// keyView is kb as a string, for a lookup that does not keep it.
func keyView(kb []byte) string {
	return unsafe.String(unsafe.SliceData(kb), len(kb))
}

// keyStart is the window start that ends the time-window changelog key k.
func keyStart(k string) int64 {
	var s uint64
	for i := len(k) - 8; i < len(k); i++ {
		s = s<<8 | uint64(k[i])
	}
	return int64(s)
}

// row returns the cached row of changelog key k, or nil.
func (st *taskStore) row(k string) *cacheEntry {
	if !st.rowsByWindow() {
		return st.cache[k]
	}
	if len(k) < 8 {
		return nil
	}
	return st.win.rowAt(keyStart(k), k[:len(k)-8])
}

// rowAt returns the cached row of a time window's grouping key inner
// (serialized) in the window that starts at start, or nil: row without
// the changelog key, which ends with start.
func (w *windowState) rowAt(start int64, inner string) *cacheEntry {
	wr := w.rowsAt(start)
	if wr == nil {
		return nil
	}
	return wr.rows[inner]
}

// addRow puts the new row e in the cache.
func (st *taskStore) addRow(e *cacheEntry) {
	k := e.cacheKey
	if !st.rowsByWindow() {
		st.cache[k] = e
		return
	}
	st.win.newRowsAt(keyStart(k)).rows[k[:len(k)-8]] = e
}

// dropRow takes the row of changelog key k out of the cache.
func (st *taskStore) dropRow(k string) {
	if !st.rowsByWindow() {
		delete(st.cache, k)
		return
	}
	w := st.win
	wr := w.rowsAt(keyStart(k))
	if wr == nil {
		return
	}
	delete(wr.rows, k[:len(k)-8])
	if len(wr.rows) == 0 {
		w.dropRows(wr)
	}
}

// eachRow calls f with every cached row and its key, until f returns
// false. f may drop the row it is given.
func (st *taskStore) eachRow(f func(k string, e *cacheEntry) bool) {
	if !st.rowsByWindow() {
		for k, e := range st.cache {
			if !f(k, e) {
				return
			}
		}
		return
	}
	for _, wr := range st.win.rows {
		for _, e := range wr.rows {
			if !f(e.cacheKey, e) {
				return
			}
		}
	}
}

// clearRows empties the cache.
func (st *taskStore) clearRows() {
	clear(st.cache)
	if st.win != nil {
		clear(st.win.rows)
		st.win.lastRows = nil
	}
}

// rowsAt returns the rows of window start, or nil. The window found last
// is tried first: most records fall in the newest window.
func (w *windowState) rowsAt(start int64) *windowRows {
	if lr := w.lastRows; lr != nil && lr.start == start {
		return lr
	}
	wr := w.rows[start]
	if wr != nil {
		w.lastRows = wr
	}
	return wr
}

// newRowsAt is rowsAt that makes the window's rows if there are none.
func (w *windowState) newRowsAt(start int64) *windowRows {
	if wr := w.rowsAt(start); wr != nil {
		return wr
	}
	wr := &windowRows{start: start}
	if n := len(w.spareRows); n > 0 {
		wr.rows = w.spareRows[n-1]
		w.spareRows = w.spareRows[:n-1]
	} else {
		wr.rows = make(map[string]*cacheEntry, w.keysHint)
	}
	if w.rows == nil {
		w.rows = make(map[int64]*windowRows)
	}
	w.rows[start] = wr
	w.lastRows = wr
	return wr
}

// dropRows drops a window's rows, emptied, keeping the map for another
// window.
func (w *windowState) dropRows(wr *windowRows) {
	delete(w.rows, wr.start)
	if w.lastRows == wr {
		w.lastRows = nil
	}
	if len(w.spareRows) < spareRowMaps {
		clear(wr.rows) // drops the tombstones of its deletes
		w.spareRows = append(w.spareRows, wr.rows)
	}
}
