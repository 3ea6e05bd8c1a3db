package streams

import "unsafe"

// A cached row's value is an interface, and putting an int64 above 255 or
// a window's stamped aggregate into an interface allocates: measured, it
// was one allocation per record of a count (the new count) and of a time
// window (the new stamped aggregate), the largest share of their garbage.
// So a row the cache updates by itself (a Count's increment, a time
// window's fold) keeps its value in memory of its own, a box, and its
// interface points there: the next update rewrites the box in place.
//
// That is only sound while nobody else holds the interface: a value handed
// out must never change. So a row owns its box from the update that made
// it until the interface leaves the row (disown): when the row becomes
// dirty (the value is kept as the old one), when it is flushed (sent
// downstream), when a read returns it, and when a value from elsewhere
// replaces it. The next update then makes a new box: one allocation per
// row per flush rather than per record.

// eface is the layout of an interface{} value.
type eface struct {
	typ, data unsafe.Pointer
}

// typeWord is the type word of v's interface.
func typeWord(v any) unsafe.Pointer {
	return (*eface)(unsafe.Pointer(&v)).typ
}

var (
	int64Type   = typeWord(int64(0))
	stampedType = typeWord(stamped{})
)

// ifaceAt returns the interface of type typ whose value lives at p; typ
// must not be pointer-shaped (int64 and stamped are not), since such an
// interface holds its pointer directly.
func ifaceAt(typ, p unsafe.Pointer) any {
	v := eface{typ: typ, data: p}
	return *(*any)(unsafe.Pointer(&v))
}

// disown gives up the row's box: its interface may be held elsewhere now.
func (e *cacheEntry) disown() {
	e.ownInt, e.ownStamped = nil, nil
}

// setInt64 makes n the row's value, in the row's own box.
func (e *cacheEntry) setInt64(n int64) {
	if e.ownInt == nil || e.ownStamped != nil {
		e.ownStamped = nil
		e.ownInt = new(int64)
		e.value = ifaceAt(int64Type, unsafe.Pointer(e.ownInt))
	}
	*e.ownInt = n
}

// setStamped makes sv the row's value, in the row's own box.
func (e *cacheEntry) setStamped(sv stamped) {
	if e.ownStamped == nil {
		e.ownInt = nil
		e.ownStamped = new(stamped)
		e.value = ifaceAt(stampedType, unsafe.Pointer(e.ownStamped))
	}
	e.ownInt = nil // sv.value is not the row's count box any more
	*e.ownStamped = sv
}

// stampedCount is a time window's count kept in boxes of the row's own,
// one allocation: the stamped aggregate, whose value's interface points
// at the count n. A row with both ownStamped and ownInt set holds its
// value so.
type stampedCount struct {
	sv stamped
	n  int64
}

// setStampedCount makes a window's count n, the latest of its records'
// timestamps ts, the row's value: the next record of the window writes
// two integers in the row's boxes and no pointer, where setStamped writes
// the new count's interface (a pointer, which costs a write barrier while
// the collector marks) and the aggregator made that interface.
func (e *cacheEntry) setStampedCount(n, ts int64) {
	if e.ownStamped == nil || e.ownInt == nil {
		b := new(stampedCount)
		b.sv.value = ifaceAt(int64Type, unsafe.Pointer(&b.n))
		e.ownStamped, e.ownInt = &b.sv, &b.n
		e.value = ifaceAt(stampedType, unsafe.Pointer(&b.sv))
	}
	*e.ownInt = n
	e.ownStamped.ts = ts
}

// updateInt64 is update with the int64 n, written into the row's own box.
func (st *taskStore) updateInt64(t *task, e *cacheEntry, n, ts int64) error {
	st.markDirty(e)
	e.setInt64(n)
	e.timestamp = ts
	return st.refresh(t, e)
}

// updateStamped is update with a window's aggregate sv, written into the
// row's own box.
func (st *taskStore) updateStamped(t *task, e *cacheEntry, sv stamped, ts int64) error {
	st.markDirty(e)
	e.setStamped(sv)
	e.timestamp = ts
	return st.refresh(t, e)
}

// updateStampedCount is updateStamped with a window's count n whose
// records' latest timestamp is latest.
func (st *taskStore) updateStampedCount(t *task, e *cacheEntry, n, latest, ts int64) error {
	st.markDirty(e)
	e.setStampedCount(n, latest)
	e.timestamp = ts
	return st.refresh(t, e)
}
