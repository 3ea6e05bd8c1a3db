package streams

import "unsafe"

// putWindow writes a windowed result: to pebble at once for write-through
// stores, and through the record cache to the changelog and (emitting
// updates) downstream.
func (st *taskStore) putWindow(t *task, kb []byte, wk Windowed, value, old any, oldFound bool, ts int64) error {
	return st.putWindowRow(t, st.row(keyView(kb)), kb, wk, value, old, oldFound, ts)
}

// putWindowRow is putWindow with kb's cached row looked up already: e, or
// nil when the cache does not hold it. A time window's processor looks
// its row up once per record, and a record opening a window would
// otherwise look its missing row up three times more.
func (st *taskStore) putWindowRow(t *task, e *cacheEntry, kb []byte, wk Windowed, value, old any, oldFound bool, ts int64) error {
	w := st.win
	if sv, ok := value.(stamped); ok && sv.value == nil {
		// An aggregator that returns nil deletes the window's result, as
		// in Kafka Streams.
		value = nil
	}
	if value == nil && !oldFound {
		return nil
	}
	w.maxSegment = max(w.maxSegment, w.segmentTime(kb)/w.interval)
	// A time window found in the store was tracked when it was new;
	// sliding windows may start from another window's value.
	track := value != nil && (!oldFound || w.spec.kind != timeWindowKind)
	if value == nil {
		w.untrack(kb, wk)
	}
	if !w.writeThrough && st.spec.cached && st.typed.decodesAs(value) {
		e = st.putWindowStale(t, e, kb, wk, value, old, oldFound, ts)
		if track {
			w.track(e.cacheKey, wk, nil)
		}
		return nil
	}
	if track {
		w.track(string(kb), wk, nil)
	}
	vb, err := st.valueBytes(t, value)
	if err != nil {
		return err
	}
	if w.writeThrough {
		if err := st.writeWindow(kb, vb); err != nil {
			return err
		}
	}
	if e != nil {
		// Updated in place, before wk is boxed into an interface: the
		// cache already holds the key.
		e.disown()
		e.value, e.valueBytes, e.timestamp, e.stale = value, vb, ts, false
		return nil
	}
	return st.putBytes(t, kb, wk, value, vb, old, oldFound, ts)
}

// putWindowStale is putWindowRow for a cached time window whose value the
// serde cannot fail on (see decodesAs): the row is cached with its value
// encoded at the flush, as updates of cached rows are (taskStore.update),
// rather than at once; a new row (e nil) is added with no lookup of the
// cache. Every window a key opens takes this path. It returns the row.
func (st *taskStore) putWindowStale(t *task, e *cacheEntry, kb []byte, wk Windowed, value, old any, oldFound bool, ts int64) *cacheEntry {
	if e == nil {
		e = st.insert(t, kb, wk)
		st.set(e, value, nil, old, oldFound, ts)
	} else {
		// As putWindowRow updates a cached row: in place.
		e.disown()
		e.value, e.timestamp = value, ts
	}
	// A stale row's valueBytes is not nil: the row is not a deletion.
	if e.valueBytes == nil {
		e.valueBytes = []byte{}
	}
	e.stale = true
	return e
}

// windowEntry is a new time window's cached row allocated together with
// the box of its Windowed key and the box of its first value, which the
// row owns (cache_box.go), so that the window's next record updates it in
// place: a window's rows are new every window, and these were three
// allocations per row. The key's bytes are not held inline: st.order
// keeps strings over them after a closed window's rows left the cache,
// until the next flush, and held inline those kept whole rows alive
// (measured: the collector's work grew, and the fetch, which pays for it
// in assists, took 15% longer). They are cut from the task's key arena
// instead, which holds nothing the collector scans.
type windowEntry struct {
	cacheEntry
	wk Windowed
	sv stamped
	// n is the box of an int64 aggregate, which sv's value points at: a
	// Count's row starts with its count in a box of its own (stampedCount).
	n int64
}

// windowEntryArena hands out a store's new window rows from chunks rather
// than one allocation each, as keyArena does keys: a window's rows are
// made together as the window opens and leave the cache together as it
// closes, so a chunk's rows mostly die together, and none is reused. A
// chunk is small, so that a row kept longer (a key emitted downstream
// and held there) keeps little alive with it.
type windowEntryArena struct {
	free []windowEntry
}

// windowEntryChunk is how many rows a chunk holds.
const windowEntryChunk = 64

// alloc returns a zeroed row.
func (a *windowEntryArena) alloc() *windowEntry { return nextOf(&a.free, windowEntryChunk) }

var windowedType = typeWord(Windowed{})

// addsStale reports whether addWindowRow may add a new row for sv: what
// putWindowRow adds through putWindowStale.
func (st *taskStore) addsStale(sv stamped) bool {
	return !st.win.writeThrough && st.spec.cached && sv.value != nil && st.typed.decodesStamped(sv)
}

// addWindowRow is putWindowRow for a time window's row that the cache
// does not hold, when addsStale(sv): a new window of the key, or one read
// from pebble (oldFound).
func (st *taskStore) addWindowRow(t *task, kb []byte, wk Windowed, sv stamped, old any, oldFound bool, ts int64) {
	w := st.win
	w.maxSegment = max(w.maxSegment, w.segmentTime(kb)/w.interval)
	we := w.entries.alloc()
	we.wk, we.sv = wk, sv
	e := &we.cacheEntry
	e.keyBytes = append(t.keys.alloc(len(kb)), kb...)
	e.cacheKey = keyView(e.keyBytes)
	e.key = ifaceAt(windowedType, unsafe.Pointer(&we.wk))
	st.addRow(e)
	st.account(t, len(kb))
	e.dirty, e.old, e.oldFound = true, old, oldFound
	st.order = append(st.order, e.cacheKey)
	e.ownStamped = &we.sv
	if n, ok := sv.value.(int64); ok {
		we.n = n
		we.sv.value = ifaceAt(int64Type, unsafe.Pointer(&we.n))
		e.ownInt = &we.n
	}
	e.value = ifaceAt(stampedType, unsafe.Pointer(e.ownStamped))
	// Encoded at the flush; a stale row's valueBytes is not nil.
	e.valueBytes, e.timestamp, e.stale = []byte{}, ts, true
	if !oldFound {
		w.track(e.cacheKey, wk, e.key)
	}
}
