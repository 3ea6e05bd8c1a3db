package streams

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// linearIndex is the join index as a plain list, the model the index is
// checked against: a record goes after every record not later than it,
// and a probe scans every record.
type linearIndex []bufferedRecord

func (l *linearIndex) add(r bufferedRecord) {
	i := len(*l)
	for i > 0 && (*l)[i-1].ts > r.ts {
		i--
	}
	*l = slices.Insert(*l, i, r)
}

func (l linearIndex) between(from, to int64) []bufferedRecord {
	var out []bufferedRecord
	for _, r := range l {
		if r.ts >= from && r.ts <= to {
			out = append(out, r)
		}
	}
	return out
}

func (l *linearIndex) dropBefore(ts int64) {
	*l = slices.DeleteFunc(*l, func(r bufferedRecord) bool { return r.ts < ts })
}

// sameRecords compares two lists of buffered records by timestamp and
// sequence number (each record's value is its sequence number).
func sameRecords(t *testing.T, what string, got, want []bufferedRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d:\n got %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i].ts != want[i].ts || got[i].value != want[i].value {
			t.Fatalf("%s: record %d is (%d, %v), want (%d, %v)", what, i, got[i].ts, got[i].value, want[i].ts, want[i].value)
		}
	}
}

// TestJoinIndexAgreesWithLinearScan adds records to a key's index, in
// time order with some out of order mixed in (and many at equal
// timestamps), and checks after each that it holds the records in the
// model's order and that a binary-search probe of random windows finds
// what a scan finds. A fixed seed per case keeps failures reproducible.
func TestJoinIndexAgreesWithLinearScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		// records to add; span is the range of timestamps drawn from;
		// outOfOrder is the share of records drawn at random instead of
		// after the last one; drop is the share of steps that expire.
		records    int
		span       int64
		outOfOrder float64
		drop       float64
	}{
		{name: "in order", records: 300, span: 50},
		{name: "equal timestamps", records: 300, span: 3, outOfOrder: 0.3},
		{name: "some out of order", records: 500, span: 1000, outOfOrder: 0.1},
		{name: "mostly out of order", records: 500, span: 200, outOfOrder: 0.9},
		{name: "with expiry", records: 800, span: 400, outOfOrder: 0.2, drop: 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(39, uint64(tc.records)))
			var b bufferedRecords
			var model linearIndex
			last, dropped := int64(0), int64(math.MinInt64)
			for seq := range tc.records {
				ts := last + rng.Int64N(3) // in order, often equal
				if rng.Float64() < tc.outOfOrder {
					ts = rng.Int64N(tc.span)
				}
				last = max(last, ts)
				r := bufferedRecord{ts: ts, value: seq}
				b.add(r)
				model.add(r)
				sameRecords(t, "after adding", b.recs, model)
				if rng.Float64() < tc.drop {
					dropped = max(dropped, rng.Int64N(last+1))
					b.dropBefore(dropped)
					model.dropBefore(dropped)
					sameRecords(t, "after dropping", b.recs, model)
				}
				for range 5 {
					from := rng.Int64N(tc.span+20) - 10
					to := from + rng.Int64N(tc.span/4+2) - 1 // sometimes empty
					sameRecords(t, "probing", b.between(from, to), model.between(from, to))
				}
			}
			for _, w := range [][2]int64{{math.MinInt64, math.MaxInt64}, {math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64}, {last, last}} {
				sameRecords(t, "probing the extremes", b.between(w[0], w[1]), model.between(w[0], w[1]))
			}
		})
	}
}

// TestJoinIndexAppendKeepsBacking checks that records in time order are
// appended to the key's backing array, growing it only by doubling, and
// that expiry keeps the array for the records that follow.
func TestJoinIndexAppendKeepsBacking(t *testing.T) {
	w := &windowState{index: make(map[string]*joinKey)}
	grew := 0
	for seq := range 1000 {
		k := w.index["k"]
		before := 0
		if k != nil {
			before = cap(w.records(k).recs)
		}
		w.addIndexed([]byte("k"), bufferedRecord{ts: int64(seq / 3), value: seq}, nil)
		if cap(w.records(w.index["k"]).recs) != before {
			grew++
		}
	}
	// 4, 8, ..., 1024, with size-class rounding at most one step more.
	if grew > 10 {
		t.Fatalf("the backing array grew %d times for 1000 appends", grew)
	}
	b := w.records(w.index["k"])
	c := cap(b.recs)
	w.dropIndexed(300)
	if len(b.recs) != 100 || b.recs[0].ts != 300 || cap(b.recs) != c {
		t.Fatalf("after expiry: %d records from %d, capacity %d; want 100 from 300, capacity %d", len(b.recs), b.recs[0].ts, cap(b.recs), c)
	}
	w.dropIndexed(400)
	if _, ok := w.index["k"]; ok {
		t.Fatal("a key whose records all expired is still indexed")
	}
}

// BenchmarkJoinIndex adds records in time order to a join index of 10,000
// keys and probes it for each, as the stream-stream join of `braid bench
// join` does: a record a millisecond, so each key's records 10 s apart,
// the window 5 s either side, so that a probe finds one record among the
// key's 50.
func BenchmarkJoinIndex(b *testing.B) {
	const keys, perKey = 10_000, 50
	w := &windowState{index: make(map[string]*joinKey)}
	inner := make([][]byte, keys)
	for k := range inner {
		inner[k] = []byte{byte(k >> 8), byte(k), 'k'}
	}
	var matches []bufferedRecord
	for i := range b.N {
		j := i % (keys * perKey)
		if j == 0 {
			clear(w.index)
		}
		ts := int64(j)
		w.addIndexed(inner[j%keys], bufferedRecord{ts: ts}, nil)
		rs := w.records(w.index[string(inner[j%keys])])
		matches = append(matches[:0], rs.between(ts-5_000, ts+5_000)...)
	}
	_ = matches
}

// TestJoinIndexPartners checks the invariant the join's probe relies on:
// a side's slot of a key holds its records of the key when its index has
// the key, and none when it does not, through expiry, a key coming back,
// and an index replaced; and that the two sides' indexes share the key.
func TestJoinIndexPartners(t *testing.T) {
	newSide := func(side int) *windowState {
		return &windowState{spec: windowSpec{kind: joinWindowKind, joinSide: side}, index: make(map[string]*joinKey)}
	}
	left, right := newSide(0), newSide(1)
	k := []byte("k")
	key := left.addIndexed(k, bufferedRecord{ts: 1, value: 1}, right)
	if n := len(right.records(key).recs); n != 0 {
		t.Fatalf("a key new to both buffers has %d right records", n)
	}
	if right.addIndexed(k, bufferedRecord{ts: 2, value: 2}, left) != key {
		t.Fatal("the two buffers index one key apart")
	}
	sameRecords(t, "the left records", left.records(key).recs, []bufferedRecord{{ts: 1, value: 1}})
	sameRecords(t, "the right records", right.records(key).recs, []bufferedRecord{{ts: 2, value: 2}})
	left.dropIndexed(2)
	if n := len(left.records(key).recs); n != 0 {
		t.Fatalf("after the left records expired, the key holds %d left records", n)
	}
	if left.addIndexed(k, bufferedRecord{ts: 3, value: 3}, right) != key {
		t.Fatal("a key back in the left buffer did not take the right buffer's")
	}
	sameRecords(t, "the left records back", left.records(key).recs, []bufferedRecord{{ts: 3, value: 3}})
	sameRecords(t, "the right records", right.records(key).recs, []bufferedRecord{{ts: 2, value: 2}})
	right.releaseIndex()
	if n := len(right.records(key).recs); n != 0 {
		t.Fatalf("after the right index was released, the key holds %d right records", n)
	}
	fresh := newSide(1)
	if fresh.addIndexed(k, bufferedRecord{ts: 4, value: 4}, left) != key {
		t.Fatal("a replaced right index's key did not take the left buffer's")
	}
	sameRecords(t, "the right records of the replaced index", fresh.records(key).recs, []bufferedRecord{{ts: 4, value: 4}})
}

// BenchmarkJoinIndexBothSides is BenchmarkJoinIndex with both buffers of
// the join, as `braid bench join` feeds them: each key's left record, then
// its right one a second later, each added to its side's index and
// probing the partner records it was added beside, 10,000 keys with up
// to 150 records each, as a task of the bench's 3,000,000 records holds.
func BenchmarkJoinIndexBothSides(b *testing.B) {
	const keys, perKey = 10_000, 150
	sides := [2]*windowState{
		{spec: windowSpec{kind: joinWindowKind, joinSide: 0}, index: make(map[string]*joinKey)},
		{spec: windowSpec{kind: joinWindowKind, joinSide: 1}, index: make(map[string]*joinKey)},
	}
	inner := make([][]byte, keys)
	for k := range inner {
		inner[k] = []byte{byte(k >> 8), byte(k), 'k'}
	}
	var matches []bufferedRecord
	for i := range b.N {
		j := i % (2 * keys * perKey)
		if j == 0 {
			sides[0].releaseIndex()
			sides[1].releaseIndex()
		}
		side := j % 2
		ts := int64(j/2) + int64(side)*1_000
		k := sides[side].addIndexed(inner[(j/2)%keys], bufferedRecord{ts: ts}, sides[1-side])
		matches = append(matches[:0], sides[1-side].records(k).between(ts-5_000, ts+5_000)...)
	}
	_ = matches
}

// TestJoinIndexAfterNewestDropped checks a key's records after an abort
// dropped the newest of them (undoBuffer), which leaves latest above the
// records left: probes and appends still agree with the model.
func TestJoinIndexAfterNewestDropped(t *testing.T) {
	var b bufferedRecords
	var model linearIndex
	for seq := range 10 {
		r := bufferedRecord{ts: int64(10 * seq), value: seq}
		b.add(r)
		model.add(r)
	}
	newest := func(r bufferedRecord) bool { return r.ts >= 60 }
	b.recs = slices.DeleteFunc(b.recs, newest)
	model = slices.DeleteFunc(model, newest)
	for _, w := range [][2]int64{{55, 100}, {50, 50}, {0, 100}, {60, 90}} {
		sameRecords(t, "probing after the abort", b.between(w[0], w[1]), model.between(w[0], w[1]))
	}
	for seq, ts := range []int64{70, 55, 80, 95, 90} {
		r := bufferedRecord{ts: ts, value: 100 + seq}
		b.add(r)
		model.add(r)
		sameRecords(t, "adding after the abort", b.recs, model)
		for _, w := range [][2]int64{{55, 100}, {71, 79}, {0, 100}, {90, 90}, {96, 200}} {
			sameRecords(t, "probing after adding", b.between(w[0], w[1]), model.between(w[0], w[1]))
		}
	}
}
