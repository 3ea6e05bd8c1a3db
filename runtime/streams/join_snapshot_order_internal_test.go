package streams

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCommittedInTimeOrder checks the order a join buffer's snapshot
// writes its records in against a plain sort by timestamp and sequence
// number, and that it leaves out exactly the records numbered from the
// committed sequence on: with records in time order and out of it, with
// gaps in the numbers, with numbers wrapping around 2^32, and in the two
// cases where placing by number gives up (numbers spread too far, one
// number twice).
func TestCommittedInTimeOrder(t *testing.T) {
	type rec struct {
		key string
		ts  int64
		seq uint32
	}
	rng := rand.New(rand.NewPCG(7, 39))
	numbered := func(n int, first uint32, ts func(i int) int64) []rec {
		var rs []rec
		for i := range n {
			rs = append(rs, rec{key: fmt.Sprint("k", rng.IntN(50)), ts: ts(i), seq: first + uint32(i)})
		}
		return rs
	}
	inOrder := func(i int) int64 { return int64(i / 3) }
	outOfOrder := func(i int) int64 { return int64(i) + rng.Int64N(40) - 20 }
	for _, c := range []struct {
		name      string
		recs      []rec
		committed uint32 // records numbered from here on are not committed
		next      uint32 // the buffer's next number
	}{
		{"in order, all committed", numbered(500, 0, inOrder), 500, 500},
		{"out of order, some not committed", numbered(500, 0, outOfOrder), 450, 500},
		{"gaps in the numbers", slices.DeleteFunc(numbered(500, 100, outOfOrder), func(r rec) bool { return r.seq%7 == 0 }), 600, 600},
		{"numbers wrapping around", numbered(500, math.MaxUint32-200, outOfOrder), 250, 299},
		{"one old record kept", append(numbered(300, 10_000, inOrder), rec{key: "old", ts: 1 << 40, seq: 3}), 10_300, 10_300},
		{"one number twice", append(numbered(300, 0, outOfOrder), rec{key: "again", ts: 5, seq: 17}), 300, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &windowState{spec: windowSpec{kind: joinWindowKind}, index: make(map[string]*joinKey), seq: c.next}
			var want []rec
			for _, r := range c.recs {
				kb := binary.BigEndian.AppendUint64([]byte(r.key), uint64(r.ts))
				kb = binary.BigEndian.AppendUint32(kb, r.seq)
				w.addIndexed([]byte(r.key), bufferedRecord{kb: kb, ts: r.ts, value: r}, nil)
				if !uncommitted(kb, c.committed, c.next) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, func(a, b rec) int {
				if c := cmp.Compare(a.ts, b.ts); c != 0 {
					return c
				}
				return cmp.Compare(a.seq, b.seq)
			})
			var got []rec
			for _, r := range w.committedInTimeOrder(c.committed) {
				got = append(got, r.value.(rec))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %d records, want %d; first difference at %d", len(got), len(want), firstDifference(got, want))
			}
		})
	}
}

// firstDifference returns the first index at which a and b differ.
func firstDifference[T comparable](a, b []T) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkCommittedInTimeOrder orders a buffer the size of one of
// `braid bench join`'s at its close for a snapshot: 375,000 records of
// 2,500 keys, in time order.
func BenchmarkCommittedInTimeOrder(b *testing.B) {
	w := &windowState{spec: windowSpec{kind: joinWindowKind}, index: make(map[string]*joinKey)}
	for i := range 375_000 {
		key := fmt.Sprintf("key-%06d", i%2500)
		kb := binary.BigEndian.AppendUint64([]byte(key), uint64(i))
		kb = binary.BigEndian.AppendUint32(kb, w.seq)
		w.seq++
		w.addIndexed([]byte(key), bufferedRecord{kb: kb, ts: int64(i)}, nil)
	}
	for range b.N {
		w.committedInTimeOrder(w.seq)
	}
}
