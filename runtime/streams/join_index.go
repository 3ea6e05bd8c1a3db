package streams

import (
	"math"
	"slices"
)

// The in-memory index of a join buffer's records by key (windowState.index).

// bufferedRecords are one key's records in a join buffer, oldest first,
// and in the order they were buffered at equal timestamps: the order of
// the buffer's pebble keys, which a restart rebuilds the index from. Being
// sorted by timestamp, the records a join probes for are found by binary
// search.
type bufferedRecords struct {
	recs []bufferedRecord
	// latest is at least every record's timestamp, and is the latest
	// one's unless records were dropped since: a probe for a window
	// after it, as half a join's probes in time order are (the partner
	// has not come yet), and an append in time order read no record,
	// which is a cache miss in a large buffer.
	latest int64
}

// joinKey is one key's records in both buffers of a join, by side
// (windowSpec.joinSide): a record is added to its side's records and
// probes the other side's, and with both in one allocation (one cache
// line) the probe needs no second map lookup and no second cache miss.
// Each side's index holds the key while it has records of it. The
// invariant the probe relies on: a side's slot of a joinKey holds its
// records of the key if its index has the key, and none otherwise. So a
// key leaves an index only with its slot emptied (forgetIndexed), and an
// index that misses a key the other side's has takes that joinKey rather
// than a new one (addIndexed).
type joinKey [2]bufferedRecords

// records returns the buffer's slot of k.
func (w *windowState) records(k *joinKey) *bufferedRecords {
	return &k[w.spec.joinSide]
}

// bufferedCap is the capacity a key's records start with, so that its
// first few appends do not each reallocate (1, 2, 4, as append grows).
const bufferedCap = 4

// addIndexed adds a record just buffered under serialized key inner and
// returns the key. partner is the other buffer of the join (nil for
// none), whose joinKey a key new to this buffer takes.
func (w *windowState) addIndexed(inner []byte, r bufferedRecord, partner *windowState) *joinKey {
	if k, ok := w.index[string(inner)]; ok {
		w.records(k).add(r)
		return k
	}
	var k *joinKey
	if partner != nil {
		k = partner.index[string(inner)]
	}
	if k == nil {
		k = new(joinKey)
	}
	// Empty by the invariant; emptied all the same, as a stale record
	// here would join.
	b := w.records(k)
	clear(b.recs)
	b.recs = b.recs[:0]
	if cap(b.recs) == 0 {
		b.recs = make([]bufferedRecord, 0, bufferedCap)
	}
	b.add(r)
	w.index[string(inner)] = k
	return k
}

// forgetIndexed removes key, k, from the index, emptying its slot: the
// other side's index may still hold k.
func (w *windowState) forgetIndexed(key string, k *joinKey) {
	w.records(k).recs = nil
	delete(w.index, key)
}

// releaseIndex empties the buffer's slot of every key of the index, which
// is about to be replaced: the other side's index keeps the keys.
func (w *windowState) releaseIndex() {
	for key, k := range w.index {
		w.forgetIndexed(key, k)
	}
}

// add puts r after every record not later than it. Most records come in
// time order and are appended; one out of order goes where a binary
// search puts it, after the records of its timestamp.
func (b *bufferedRecords) add(r bufferedRecord) {
	n := len(b.recs)
	switch {
	case n == 0:
		b.latest = r.ts
		b.recs = append(b.recs, r)
	case b.latest <= r.ts || b.recs[n-1].ts <= r.ts:
		b.latest = max(b.latest, r.ts)
		b.recs = append(b.recs, r)
	default:
		b.recs = slices.Insert(b.recs, b.after(r.ts), r)
	}
}

// from returns the index of the first record with a timestamp of at
// least ts (len(recs) if there is none). It searches back from the end,
// in steps that double, and then by bisection between the last two: a
// join mostly probes for a window at the end of the buffer, which the
// first step or two find among the records last added, in memory near
// each other.
func (b *bufferedRecords) from(ts int64) int {
	if b.latest < ts {
		return len(b.recs)
	}
	// Every record from hi on is at least ts; lo is below hi.
	lo, hi := len(b.recs)-1, len(b.recs)
	for step := 1; lo >= 0 && b.recs[lo].ts >= ts; step *= 2 {
		hi = lo
		lo -= step
	}
	// Bisect (lo, hi): every record up to lo is below ts.
	lo = max(lo+1, 0)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if b.recs[h].ts < ts {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// after returns the index of the first record later than ts.
func (b *bufferedRecords) after(ts int64) int {
	if ts == math.MaxInt64 {
		return len(b.recs)
	}
	return b.from(ts + 1)
}

// between returns the records with timestamps in [from, to], in their
// order: a slice of the index, valid until the key's records change.
func (b *bufferedRecords) between(from, to int64) []bufferedRecord {
	if to < from {
		return nil
	}
	return b.recs[b.from(from):b.after(to)]
}

// dropBefore drops the records older than ts, keeping the backing array
// for the records to come.
func (b *bufferedRecords) dropBefore(ts int64) {
	i := b.from(ts)
	if i == 0 {
		return
	}
	n := copy(b.recs, b.recs[i:])
	clear(b.recs[n:])
	b.recs = b.recs[:n]
}

// dropIndexed drops the indexed records of a join buffer with segment
// times below before, as expiry drops them from pebble.
func (w *windowState) dropIndexed(before int64) {
	for key, k := range w.index {
		b := w.records(k)
		if b.dropBefore(before); len(b.recs) == 0 {
			w.forgetIndexed(key, k)
		}
	}
}
