package streams

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The record cache of a time-window store that emits final results only
// delays and batches writes to pebble and the changelog: what goes
// downstream is decided at the window's close, from the row wherever it
// is. So a topology's output must not depend on whether the store caches,
// how small the cache is, when commits flush it or whether the task
// restarts from its committed state. The tests here hold the cached path
// to the uncached one, record by record, over seeded random input, so
// that a replacement of the cached path shows any output it changes.

// finalDiffAgg is the aggregation a case runs.
type finalDiffAgg int

const (
	// finalCount counts Bytes values, nulls included.
	finalCount finalDiffAgg = iota
	// finalReduceInt64 sums Int64 values, skipping nulls: its store's
	// values are typed, so the cache keeps them undecoded.
	finalReduceInt64
	// finalReduceString keeps the tail of the String values joined.
	finalReduceString
	// finalAggInt64 sums Int64 values; with deletes it deletes the
	// window's result (returns nil) at a value divisible by 13.
	finalAggInt64
	// finalAggString joins String values; with deletes it deletes at a
	// value starting with "!".
	finalAggString
	// finalAggBytes is finalAggString into a Bytes store, whose values the
	// cache cannot use undecoded: the aggregator gets the []byte the store
	// decodes, not the string it returned.
	finalAggBytes
)

// finalDiffCase is one random run, on the cached and the uncached side.
type finalDiffCase struct {
	name    string
	seed    uint64
	windows TimeWindows
	agg     finalDiffAgg
	// deletes makes Aggregate's aggregator return nil now and then,
	// which deletes the window's result, as in Kafka Streams.
	deletes bool
	// retention, if set, keeps closed windows in the store past their
	// close, so that closing writes them to pebble.
	retention time.Duration
	// keys, records: how many distinct keys, how many records (before the
	// final record that closes every window).
	keys, records int
	// step is the largest advance of time between two records, in ms.
	step int64
	// partitions of the input topic: each is a task of its own, with its
	// own stream time and share of the cache.
	partitions int
	// cacheMaxBytes of both drivers (0: the default, 10 MiB).
	cacheMaxBytes int64
	// commitP is the chance of a commit before a record; restarts is how
	// many times the run commits, closes its driver and opens a new one
	// on the same state directory, at random points.
	commitP  float64
	restarts int
	// updates emits every update (EmitOnWindowUpdate) rather than final
	// results; only the hand-checked cases set it, as a cache sends fewer
	// updates than no cache does.
	updates bool
}

// finalDiffOp is one step of a run: a record to pipe, a commit, or a
// restart.
type finalDiffOp struct {
	kind       byte // 'p', 'c' or 'r'
	key, value []byte
	ts         int64
}

// finalDiffRun is what a side produced.
type finalDiffRun struct {
	out       []Record
	lateDrops int64
	// beforeLastRestart is how many results came before the last restart.
	beforeLastRestart int
}

// TestEmitFinalCachedMatchesUncached runs every case on a store with the
// record cache on and on one with it off, and compares the two outputs
// record by record: key bytes, value bytes, timestamp.
func TestEmitFinalCachedMatchesUncached(t *testing.T) {
	const s = time.Second
	records := func(n int) int {
		if testing.Short() {
			return n / 4
		}
		return n
	}
	cases := []finalDiffCase{{
		// Case 1: tumbling counts over keys that are byte prefixes of one
		// another, whose results close in the byte order of their
		// windowed keys.
		name: "tumbling/count", seed: 1, windows: Tumbling(s, 500*ms), agg: finalCount,
		keys: 200, records: records(6000), step: 20,
	}, {
		// Case 2: each record in five windows, some of them late.
		name: "hopping/count", seed: 2, windows: Hopping(10*s, 2*s, 3*s), agg: finalCount,
		keys: 200, records: records(4000), step: 30,
	}, {
		// Case 3: aggregators, some deleting a window's result, and
		// reducers, over typed stores (Int64, String), whose cached values
		// are used undecoded, and an untyped one (Bytes).
		name: "tumbling/aggregate-int64", seed: 3, windows: Tumbling(s, 300*ms), agg: finalAggInt64,
		keys: 50, records: records(4000), step: 20,
	}, {
		name: "tumbling/aggregate-int64-nil", seed: 3, windows: Tumbling(s, 300*ms), agg: finalAggInt64, deletes: true,
		keys: 50, records: records(4000), step: 20,
	}, {
		name: "hopping/aggregate-string", seed: 4, windows: Hopping(10*s, 2*s, 3*s), agg: finalAggString,
		keys: 60, records: records(3000), step: 30,
	}, {
		name: "hopping/aggregate-string-nil", seed: 4, windows: Hopping(10*s, 2*s, 3*s), agg: finalAggString, deletes: true,
		keys: 60, records: records(3000), step: 30,
	}, {
		name: "tumbling/aggregate-bytes-nil", seed: 5, windows: Tumbling(2*s, s), agg: finalAggBytes, deletes: true,
		keys: 40, records: records(3000), step: 40,
	}, {
		name: "tumbling/reduce-int64", seed: 6, windows: Tumbling(s, 500*ms), agg: finalReduceInt64,
		keys: 100, records: records(4000), step: 20,
	}, {
		name: "hopping/reduce-string", seed: 7, windows: Hopping(10*s, 2*s, 3*s), agg: finalReduceString,
		keys: 80, records: records(3000), step: 30,
	}, {
		// Case 4: a cache of a few KB, which evicts half its rows to
		// pebble whenever a record takes it over budget; and one of a
		// byte, which evicts after every record.
		name: "tumbling/count/small-cache", seed: 8, windows: Tumbling(s, 500*ms), agg: finalCount,
		keys: 200, records: records(5000), step: 20, cacheMaxBytes: 4 << 10,
	}, {
		name: "hopping/aggregate-int64/small-cache", seed: 9, windows: Hopping(10*s, 2*s, 3*s), agg: finalAggInt64,
		keys: 100, records: records(3000), step: 30, cacheMaxBytes: 3 << 10,
	}, {
		name: "tumbling/aggregate-bytes-nil/one-byte-cache", seed: 10, windows: Tumbling(s, 500*ms), agg: finalAggBytes, deletes: true,
		keys: 50, records: records(2000), step: 40, cacheMaxBytes: 1,
	}, {
		// Case 5: commits at random points flush the cache mid-window.
		name: "tumbling/count/commits", seed: 11, windows: Tumbling(s, 500*ms), agg: finalCount,
		keys: 200, records: records(5000), step: 20, commitP: 0.02,
	}, {
		name: "hopping/reduce-int64/commits/small-cache", seed: 12, windows: Hopping(10*s, 2*s, 3*s), agg: finalReduceInt64,
		keys: 100, records: records(3000), step: 30, commitP: 0.05, cacheMaxBytes: 4 << 10,
	}, {
		// Case 6: restarts from the committed state, which must bring
		// back the windows still open, neither lose nor repeat a result.
		name: "tumbling/count/restarts", seed: 13, windows: Tumbling(s, 500*ms), agg: finalCount,
		keys: 200, records: records(5000), step: 20, commitP: 0.01, restarts: 3,
	}, {
		name: "hopping/aggregate-string/restarts/small-cache", seed: 14, windows: Hopping(10*s, 2*s, 3*s), agg: finalAggString,
		keys: 80, records: records(3000), step: 30, commitP: 0.02, restarts: 2, cacheMaxBytes: 4 << 10,
	}, {
		// All of it at once, over three tasks, with closed windows kept
		// in the store for a minute.
		name: "hopping/aggregate-bytes-nil/everything", seed: 15, windows: Hopping(10*s, 2*s, 3*s), agg: finalAggBytes, deletes: true,
		retention: time.Minute, keys: 150, records: records(4000), step: 30, partitions: 3,
		commitP: 0.03, restarts: 2, cacheMaxBytes: 6 << 10,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := finalDiffScript(tc)
			cached := runFinalDiff(t, tc, ops, true)
			uncached := runFinalDiff(t, tc, ops, false)
			compareFinalDiff(t, tc, "cached", cached.out, "uncached", uncached.out)
			if cached.lateDrops != uncached.lateDrops {
				t.Errorf("late drops: cached %d, uncached %d", cached.lateDrops, uncached.lateDrops)
			}
			checkFinalDiffNonTrivial(t, tc, ops, uncached)
			if tc.restarts > 0 {
				// Restarts after a commit must change nothing either: the
				// same run without them is a third side.
				var straight []finalDiffOp
				for _, op := range ops {
					if op.kind == 'r' {
						op.kind = 'c'
					}
					straight = append(straight, op)
				}
				plain := runFinalDiff(t, tc, straight, false)
				compareFinalDiff(t, tc, "uncached with restarts", uncached.out, "uncached without", plain.out)
			}
		})
	}
}

// checkFinalDiffNonTrivial fails a run that could not have shown a
// difference: too few results, few results before the end, no late
// records, nothing after a restart.
func checkFinalDiffNonTrivial(t *testing.T, tc finalDiffCase, ops []finalDiffOp, r finalDiffRun) {
	t.Helper()
	// The last records close every window; the windows closed before
	// them, by the time the records before reached, emitted as stream
	// time went.
	var reached int64
	for _, op := range ops[:len(ops)-max(1, tc.partitions)] {
		reached = max(reached, op.ts)
	}
	var early int
	starts := make(map[int64]bool)
	var folded bool // some result aggregated more than one record
	for _, rec := range r.out {
		start := int64(binary.BigEndian.Uint64(rec.Key[len(rec.Key)-8:]))
		if start+tc.windows.Size.Milliseconds()+tc.windows.Grace.Milliseconds() <= reached {
			early++
		}
		starts[start] = true
		if tc.agg == finalCount && len(rec.Value) == 8 && binary.BigEndian.Uint64(rec.Value) > 1 {
			folded = true
		}
	}
	if len(r.out) < tc.records/10 || early < len(r.out)/4 || len(starts) < 5 {
		t.Errorf("%d results, %d of windows closed before the last records, %d window starts: too few to compare", len(r.out), early, len(starts))
	}
	if tc.agg == finalCount && !folded {
		t.Errorf("no count above 1: the windows took one record each")
	}
	if r.lateDrops == 0 {
		t.Errorf("no late drops: the input has no late records")
	}
	if tc.restarts > 0 && (r.beforeLastRestart == 0 || r.beforeLastRestart == len(r.out)) {
		t.Errorf("%d of %d results before the last restart: the restart is at an edge", r.beforeLastRestart, len(r.out))
	}
}

// finalDiffKeys returns n distinct keys: a fixed set of keys that are
// byte prefixes of one another or end in 0x00 or 0xff, whose windowed
// keys (the key, then the 8-byte window start) sort in an order that
// depends on the start; then random keys and prefixes of them.
func finalDiffKeys(r *rand.Rand, n int) [][]byte {
	fixed := []string{
		"a", "ab", "abc", "abcd", "a\x00", "a\x00\x00", "a\xff", "a\xff\xff", "ab\x00", "ab\xff", "abc\x00",
		"\x00", "\x00\x00", "\xff", "\xff\xff", "b", "b\x00", "b\xff", "ba", "a\x00b", "a\x01",
		// A key that is another with a window start's bytes after it.
		"a\x00\x00\x00\x00\x00\x00\x00\x00",
	}
	seen := make(map[string]bool)
	var keys [][]byte
	add := func(k []byte) {
		if len(k) > 0 && !seen[string(k)] && len(keys) < n {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	for _, k := range fixed {
		add([]byte(k))
	}
	alphabet := []byte{0x00, 0x01, 'a', 'b', 'c', 0x7f, 0x80, 0xfe, 0xff}
	for len(keys) < n {
		k := make([]byte, 1+r.IntN(10))
		for i := range k {
			k[i] = alphabet[r.IntN(len(alphabet))]
		}
		add(k)
		// and a prefix of it, or it with 0x00 or 0xff after it
		switch r.IntN(3) {
		case 0:
			add(bytes.Clone(k[:1+r.IntN(len(k))]))
		case 1:
			add(append(bytes.Clone(k), 0x00))
		default:
			add(append(bytes.Clone(k), 0xff))
		}
	}
	return keys
}

// finalDiffScript makes a case's steps from its seed: records whose time
// mostly goes forward, about 10% of them out of order within the grace
// period, 3% late for every window they fall in and 2% near the close,
// late for some of a hopping record's windows; commits and restarts
// between them; and at the end a record per partition far ahead, which
// closes every window.
func finalDiffScript(tc finalDiffCase) []finalDiffOp {
	r := rand.New(rand.NewPCG(tc.seed, 0x5eed))
	keys := finalDiffKeys(r, tc.keys)
	// Half the records go to the first keys, the ones that are prefixes
	// of one another, so that they share windows.
	hot := keys[:min(len(keys), 20)]
	size, grace := tc.windows.Size.Milliseconds(), tc.windows.Grace.Milliseconds()
	// Well past the epoch, so that window starts have several nonzero
	// bytes.
	now := int64(1_700_000_000_000) + r.Int64N(size)
	restartAt := make(map[int]bool)
	for len(restartAt) < tc.restarts {
		// Within the middle of the run, so that windows are open across
		// every restart and results come on both sides of it.
		restartAt[tc.records/5+r.IntN(tc.records*3/5)] = true
	}
	var ops []finalDiffOp
	for i := range tc.records {
		if restartAt[i] {
			ops = append(ops, finalDiffOp{kind: 'r'})
		} else if r.Float64() < tc.commitP {
			ops = append(ops, finalDiffOp{kind: 'c'})
		}
		// now is the latest timestamp so far: the stream time of a
		// single task.
		var ts int64
		switch p := r.Float64(); {
		case p < 0.10:
			ts = now - r.Int64N(grace+1)
		case p < 0.13:
			ts = now - grace - size - 1 - r.Int64N(size)
		case p < 0.15:
			ts = now - grace - r.Int64N(size)
		default:
			now += r.Int64N(tc.step + 1)
			ts = now
		}
		key := keys[r.IntN(len(keys))]
		if r.IntN(2) == 0 {
			key = hot[r.IntN(len(hot))]
		}
		ops = append(ops, finalDiffOp{kind: 'p', key: key, value: finalDiffValue(r, tc.agg), ts: max(ts, 0)})
	}
	// Far enough ahead to close every window of every task: each task's
	// stream time reaches it as the record reaches that task, so it goes
	// to every partition, under the one key of its own.
	end := now + size + grace + 1
	for p := range max(1, tc.partitions) {
		ops = append(ops, finalDiffOp{kind: 'p', key: finalDiffEndKey(p, tc.partitions), value: finalDiffValue(r, tc.agg), ts: end})
	}
	return ops
}

// finalDiffEndKey returns a key of partition p of n, as the driver
// partitions keys: the records that close every window must reach every
// task.
func finalDiffEndKey(p, n int) []byte {
	n = max(1, n)
	part := keyPartitioner.ForTopic("in")
	for i := 0; ; i++ {
		k := fmt.Appendf(nil, "end-%d", i)
		if part.Partition(&kgo.Record{Key: k}, n) == p {
			return k
		}
	}
}

// finalDiffValue returns a random value as the case's source serde
// encodes it; now and then a null.
func finalDiffValue(r *rand.Rand, agg finalDiffAgg) []byte {
	if r.IntN(50) == 0 {
		return nil
	}
	switch agg {
	case finalReduceInt64, finalAggInt64:
		return binary.BigEndian.AppendUint64(nil, uint64(r.Int64N(1000)))
	case finalReduceString, finalAggString, finalAggBytes:
		if r.IntN(12) == 0 {
			return []byte("!reset")
		}
		return fmt.Appendf(nil, "%c%d", 'a'+r.IntN(26), r.IntN(100))
	}
	return []byte{byte(r.IntN(256))}
}

// finalDiffTail keeps an aggregate string short: the last 24 bytes.
func finalDiffTail(s string) string {
	if len(s) > 24 {
		return s[len(s)-24:]
	}
	return s
}

// finalDiffTopology builds the case's aggregation, emitting final results
// to "out", with the store's cache on or off.
func finalDiffTopology(t *testing.T, tc finalDiffCase, cached bool) *Topology {
	t.Helper()
	values := Bytes
	switch tc.agg {
	case finalReduceInt64, finalAggInt64:
		values = Int64
	case finalReduceString, finalAggString, finalAggBytes:
		values = String
	}
	b := NewBuilder()
	emit := EmitOnWindowClose
	if tc.updates {
		emit = EmitOnWindowUpdate
	}
	ws := b.Stream([]string{"in"}, WithSerdes(Bytes, values)).GroupByKey().WindowedBy(tc.windows).Emit(emit)
	opts := StoreOptions{Name: "final", CachingDisabled: !cached, Retention: tc.retention}
	var table *Table
	switch tc.agg {
	case finalCount:
		table = ws.Count(Materialized(opts))
	case finalReduceInt64:
		table = ws.Reduce(func(agg, v any) (any, error) {
			if v == nil {
				return agg, nil
			}
			if agg == nil {
				return v, nil
			}
			return agg.(int64) + v.(int64), nil
		}, Materialized(opts))
	case finalReduceString:
		table = ws.Reduce(func(agg, v any) (any, error) {
			if v == nil {
				return agg, nil
			}
			if agg == nil {
				return v, nil
			}
			return finalDiffTail(agg.(string) + "+" + v.(string)), nil
		}, Materialized(opts))
	case finalAggInt64:
		opts.ValueSerde = Int64
		table = ws.Aggregate(func() (any, error) { return int64(0), nil }, func(_, v, agg any) (any, error) {
			if v == nil {
				return agg, nil
			}
			if tc.deletes && v.(int64)%13 == 0 {
				return nil, nil
			}
			return agg.(int64) + v.(int64), nil
		}, Materialized(opts))
	case finalAggString, finalAggBytes:
		opts.ValueSerde = String
		if tc.agg == finalAggBytes {
			opts.ValueSerde = Bytes
		}
		table = ws.Aggregate(func() (any, error) { return "0", nil }, func(_, v, agg any) (any, error) {
			// A Bytes store hands back the []byte it decoded.
			if s, _ := v.(string); tc.deletes && strings.HasPrefix(s, "!") {
				return nil, nil
			}
			return finalDiffTail(fmt.Sprintf("%s+%v", agg, v)), nil
		}, Materialized(opts))
	}
	table.ToStream().To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// runFinalDiff runs ops on a new driver, cached or not, and returns what
// it wrote to "out" and how many (record, window) pairs it dropped late.
func runFinalDiff(t *testing.T, tc finalDiffCase, ops []finalDiffOp, cached bool) finalDiffRun {
	t.Helper()
	cfg := DriverConfig{StateDir: t.TempDir(), CacheMaxBytes: tc.cacheMaxBytes}
	if tc.partitions > 0 {
		cfg.Partitions = map[string]int{"in": tc.partitions, "out": tc.partitions}
	}
	open := func() *TestDriver {
		d, err := NewTestDriver(finalDiffTopology(t, tc, cached), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var run finalDiffRun
	// done collects a driver's results and late drops, which its Stats
	// count from its start.
	done := func(d *TestDriver) {
		run.out = append(run.out, d.Output("out")...)
		for _, ts := range d.Stats().Tasks {
			for _, s := range ts.Stores {
				run.lateDrops += s.LateDrops
			}
		}
	}
	d := open()
	defer func() { d.Close() }()
	for i, op := range ops {
		var err error
		switch op.kind {
		case 'p':
			err = d.Pipe("in", op.key, op.value, op.ts)
		case 'c':
			err = d.Commit()
		case 'r':
			// A restart from committed state: what was processed since
			// the last commit would be processed again, so commit first.
			if err = d.Commit(); err != nil {
				break
			}
			done(d)
			run.beforeLastRestart = len(run.out)
			if err = d.Close(); err != nil {
				break
			}
			d = open()
		}
		if err != nil {
			t.Fatalf("cached=%v, step %d (%c %q@%d): %v", cached, i, op.kind, op.key, op.ts, err)
		}
	}
	// A commit emits no final result: it must add nothing.
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	done(d)
	return run
}

// compareFinalDiff fails at the first record where the two outputs
// differ, showing both decoded.
func compareFinalDiff(t *testing.T, tc finalDiffCase, aName string, a []Record, bName string, b []Record) {
	t.Helper()
	for i := range max(len(a), len(b)) {
		var ra, rb *Record
		if i < len(a) {
			ra = &a[i]
		}
		if i < len(b) {
			rb = &b[i]
		}
		if ra != nil && rb != nil && bytes.Equal(ra.Key, rb.Key) && bytes.Equal(ra.Value, rb.Value) &&
			(ra.Value == nil) == (rb.Value == nil) && ra.Timestamp == rb.Timestamp && ra.Partition == rb.Partition {
			continue
		}
		var context []string
		for j := max(0, i-3); j < i; j++ {
			context = append(context, "  "+formatFinalDiff(tc, &a[j]))
		}
		t.Fatalf("%d and %d results; first difference at %d:\n  %s: %s\n  %s: %s\nafter:\n%s",
			len(a), len(b), i, aName, formatFinalDiff(tc, ra), bName, formatFinalDiff(tc, rb), strings.Join(context, "\n"))
	}
}

// formatFinalDiff decodes a result: "[key@start/end] value @ts pN".
func formatFinalDiff(tc finalDiffCase, r *Record) string {
	if r == nil {
		return "(none)"
	}
	if len(r.Key) < 8 {
		return fmt.Sprintf("bad windowed key %q: value %q @%d", r.Key, r.Value, r.Timestamp)
	}
	start := int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))
	key := r.Key[:len(r.Key)-8]
	var value string
	switch {
	case r.Value == nil:
		value = "null"
	case (tc.agg == finalCount || tc.agg == finalReduceInt64 || tc.agg == finalAggInt64) && len(r.Value) == 8:
		value = fmt.Sprint(int64(binary.BigEndian.Uint64(r.Value)))
	default:
		value = fmt.Sprintf("%q", r.Value)
	}
	return fmt.Sprintf("[%q@%d/%d] %s @%d p%d", key, start, start+tc.windows.Size.Milliseconds(), value, r.Timestamp, r.Partition)
}

// TestEmitFinalCacheHandChecked pins a few final results to values worked
// out by hand, on both sides, so that both sides being wrong alike does
// not pass TestEmitFinalCachedMatchesUncached unseen.
func TestEmitFinalCacheHandChecked(t *testing.T) {
	rec := func(key string, value []byte, ts int64) finalDiffOp {
		return finalDiffOp{kind: 'p', key: []byte(key), value: value, ts: ts}
	}
	commit := finalDiffOp{kind: 'c'}
	i64 := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	type side struct {
		name   string
		agg    finalDiffAgg
		cached bool
		budget int64
	}
	for _, sc := range []struct {
		name      string
		updates   bool
		windows   TimeWindows
		in        []finalDiffOp
		want      []string
		lateDrops int64
		sides     []side
	}{{
		// Results of a window go out in the byte order of their changelog
		// keys, the key and then the 8-byte big-endian start: with the
		// window at 1000 (...03 e8), "a\x00" (61 00 00..00 03 e8) sorts
		// before "a" (61 00..03 e8), as the start's bytes follow "a" one
		// byte sooner.
		name: "count-byte-order", windows: Tumbling(1000*ms, 500*ms),
		in: []finalDiffOp{
			rec("a", nil, 1000), rec("ab", nil, 1100), commit, rec("a\x00", nil, 1200), rec("a", nil, 1300), rec("b", nil, 1999),
			// Window [2000,3000); [1000,2000) stays open until 2500.
			rec("a", nil, 2100),
			// Out of order, within the grace period: counts.
			rec("ab", nil, 1400), commit,
			// Closes [1000,2000).
			rec("b", nil, 2600),
			// Late: dropped.
			rec("a", nil, 1200),
			// Closes [2000,3000); [4000,5000) stays open.
			rec("z", nil, 4000),
		},
		want: []string{
			`["a\x00"@1000/2000] 1 @1200 p0`,
			`["a"@1000/2000] 2 @1300 p0`,
			`["ab"@1000/2000] 2 @1400 p0`,
			`["b"@1000/2000] 1 @1999 p0`,
			`["a"@2000/3000] 1 @2100 p0`,
			`["b"@2000/3000] 1 @2600 p0`,
		},
		lateDrops: 1,
		sides: []side{
			{name: "uncached", agg: finalCount}, {name: "cached", agg: finalCount, cached: true},
			{name: "cached/one-byte-cache", agg: finalCount, cached: true, budget: 1},
		},
	}, {
		// "!x" deletes the window's result; "b2" starts it again from the
		// initializer's "0", at its own timestamp.
		name: "aggregate-deletes/string", windows: Tumbling(10*ms, 0),
		in:   []finalDiffOp{rec("k", []byte("a1"), 1), rec("k", []byte("!x"), 2), rec("k", []byte("b2"), 3), rec("k", []byte("c3"), 20)},
		want: []string{`["k"@0/10] "0+b2" @3 p0`},
		sides: []side{
			{name: "uncached", agg: finalAggString}, {name: "uncached/bytes", agg: finalAggBytes},
			{name: "cached/bytes", agg: finalAggBytes, cached: true},
			{name: "cached/one-byte-cache", agg: finalAggString, cached: true, budget: 1},
			// Once emitted "+b2" @3: the deleted result stayed as "".
			{name: "cached", agg: finalAggString, cached: true},
		},
	}, {
		// 13 deletes the window's result; 7 starts it again from 0.
		name: "aggregate-deletes/int64", windows: Tumbling(10*ms, 0),
		in:   []finalDiffOp{rec("k", i64(5), 1), rec("k", i64(13), 2), rec("k", i64(7), 3), rec("k", i64(1), 20)},
		want: []string{`["k"@0/10] 7 @3 p0`},
		sides: []side{
			{name: "uncached", agg: finalAggInt64},
			{name: "cached/one-byte-cache", agg: finalAggInt64, cached: true, budget: 1},
			// Once failed the task at 7: the deleted result was 0 bytes.
			{name: "cached", agg: finalAggInt64, cached: true},
		},
	}, {
		// The same emitting updates: the cache sends the window's last
		// value at the commit, which the record after the deletion
		// started again from the initializer.
		name: "aggregate-deletes-updates/string", updates: true, windows: Tumbling(10*ms, 0),
		in:   []finalDiffOp{rec("k", []byte("a1"), 1), rec("k", []byte("!x"), 2), rec("k", []byte("b2"), 3), commit},
		want: []string{`["k"@0/10] "0+b2" @3 p0`},
		sides: []side{
			{name: "cached", agg: finalAggString, cached: true},
		},
	}, {
		name: "aggregate-deletes-updates/int64", updates: true, windows: Tumbling(10*ms, 0),
		in:    []finalDiffOp{rec("k", i64(5), 1), rec("k", i64(13), 2), rec("k", i64(7), 3), commit},
		want:  []string{`["k"@0/10] 7 @3 p0`},
		sides: []side{{name: "cached", agg: finalAggInt64, cached: true}},
	}} {
		for _, side := range sc.sides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				tc := finalDiffCase{windows: sc.windows, agg: side.agg, deletes: true, cacheMaxBytes: side.budget, updates: sc.updates}
				run := runFinalDiff(t, tc, sc.in, side.cached)
				var got []string
				for i := range run.out {
					got = append(got, formatFinalDiff(tc, &run.out[i]))
				}
				if strings.Join(got, "\n") != strings.Join(sc.want, "\n") {
					t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sc.want, "\n"))
				}
				if run.lateDrops != sc.lateDrops {
					t.Errorf("late drops: %d, want %d", run.lateDrops, sc.lateDrops)
				}
			})
		}
	}
}
