package bench

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Topics and group of the windowed count's ceiling; round i uses group
// WindowedCeilingGroup-i.
const (
	WindowedCeilingOutputTopic    = "bench-windowed-ceiling-out"
	WindowedCeilingChangelogTopic = "bench-windowed-ceiling-changelog"
	WindowedCeilingGroup          = "bench-windowed-ceiling"
)

// WindowedCeiling is the ceiling of a windowed count emitting final
// results: what Braid's tumbling-window Count (BraidWindowedCount) could
// at best do with franz-go alone, as CachedCount is the plain count's.
// One client in consumer group group reads topic in from the start (the
// skeleton CachedCount uses) and keeps, per input partition, its stream
// time (the largest timestamp seen) and every open (key, window) count
// in a Go map; no store, so no pebble reads or writes. A record whose
// window stream time has closed (its end plus WindowGrace reached) is
// dropped, as late. After each partition's batch of a poll, every window
// its stream time closed is emitted: one record per key of the window,
// the windowed key (the key's bytes, then the window start as 8
// big-endian bytes) and its count (an 8-byte big-endian int64), with the
// timestamp of the window's latest record, to out in the input
// partition, in the order the keys came, unsorted. At every commit,
// every commitInterval and once at the end, each open window changed
// since the last commit is written once to changelog, as Braid's record
// cache writes it; a closed window is not, as Braid, whose window's
// retention ends as it closes, does not write it either. Then it flushes
// the producer and commits the offsets processed: at-least-once, as the
// Braid side.
//
// It creates changelog if missing, compacted, with in's partition count,
// inside the span measured; out must exist with at least in's partition
// count. It stops after records records and returns how long that took, as
// Result says. Cancel ctx to give up.
func WindowedCeiling(ctx context.Context, brokers []string, in, out, changelog, group string, records int, commitInterval time.Duration) (Result, error) {
	start := time.Now()
	c, err := openCeiling(ctx, "windowed count ceiling", brokers, in, changelog, group, records, commitInterval)
	if err != nil {
		return Result{}, err
	}
	defer c.close()

	windows := map[int32]*partitionWindows{}
	c.beforeCommit = func() {
		for p, pw := range windows {
			pw.writeChanged(ctx, c, p, changelog)
		}
	}
	return c.run(ctx, start, records, commitInterval, func(p int32, rs []*kgo.Record) error {
		pw := windows[p]
		if pw == nil {
			pw = &partitionWindows{keys: map[string]*keyWindows{}, streamTime: -1}
			windows[p] = pw
		}
		for _, r := range rs {
			pw.add(r)
		}
		pw.closeWindows(ctx, c, p, out)
		return nil
	})
}

// partitionWindows are the open windows of one input partition.
type partitionWindows struct {
	streamTime int64 // -1 before the first record
	// keys holds every key seen, with its open windows: a key's entry
	// lives across windows, so that its lookup finds warm memory as the
	// plain count's does, where a map by (key, window) would touch a new
	// entry for every window.
	keys map[string]*keyWindows
	// open are the open windows by start, ascending.
	open    []*ceilingWindow
	changed []*windowRow // since the last commit
}

// keyWindows are one key's open windows (at most three with these
// windows: the current one, the one before within its grace, and one
// more while records come out of order).
type keyWindows struct {
	key  []byte
	rows []*windowRow
}

type ceilingWindow struct {
	start int64
	rows  []*windowRow
}

type windowRow struct {
	key     *keyWindows
	start   int64
	n       int64
	ts      int64 // of the window's latest record, ms
	changed bool
	closed  bool
}

func (pw *partitionWindows) add(r *kgo.Record) {
	ts := r.Timestamp.UnixMilli()
	pw.streamTime = max(pw.streamTime, ts)
	start := windowStart(ts)
	if windowClosed(pw.streamTime, start) {
		return // late: its window has closed
	}
	kw := pw.keys[string(r.Key)] // a lookup by string(b) does not allocate
	if kw == nil {
		kw = &keyWindows{key: append([]byte(nil), r.Key...)}
		pw.keys[string(kw.key)] = kw
	}
	row := kw.row(start)
	if row == nil {
		row = &windowRow{key: kw, start: start, ts: ts}
		kw.rows = append(kw.rows, row)
		w := pw.window(start)
		w.rows = append(w.rows, row)
	}
	row.n++
	row.ts = max(row.ts, ts)
	if !row.changed {
		row.changed = true
		pw.changed = append(pw.changed, row)
	}
}

// row returns the key's open window starting at start, or nil.
func (kw *keyWindows) row(start int64) *windowRow {
	for _, row := range kw.rows {
		if row.start == start {
			return row
		}
	}
	return nil
}

// remove forgets the key's window row, which has closed.
func (kw *keyWindows) remove(row *windowRow) {
	for i, r := range kw.rows {
		if r == row {
			last := len(kw.rows) - 1
			kw.rows[i], kw.rows[last] = kw.rows[last], nil
			kw.rows = kw.rows[:last]
			return
		}
	}
}

// window returns the open window starting at start, adding it in order.
func (pw *partitionWindows) window(start int64) *ceilingWindow {
	i := len(pw.open)
	for i > 0 && pw.open[i-1].start >= start {
		if pw.open[i-1].start == start {
			return pw.open[i-1]
		}
		i--
	}
	w := &ceilingWindow{start: start}
	pw.open = append(pw.open, nil)
	copy(pw.open[i+1:], pw.open[i:])
	pw.open[i] = w
	return w
}

// closeWindows emits and forgets every window stream time has closed.
func (pw *partitionWindows) closeWindows(ctx context.Context, c *alosConsumer, p int32, out string) {
	for len(pw.open) > 0 && windowClosed(pw.streamTime, pw.open[0].start) {
		w := pw.open[0]
		pw.open = pw.open[1:]
		// One allocation for the keys and values and one for the
		// records; the producer keeps each until it is acknowledged.
		buf := make([]byte, 0, windowBytes(w.rows))
		recs := make([]kgo.Record, len(w.rows))
		for i, row := range w.rows {
			var key, val []byte
			buf, key = appendWindowKey(buf, row)
			buf, val = appendCount(buf, row.n)
			recs[i] = kgo.Record{Topic: out, Partition: p, Key: key, Value: val, Timestamp: time.UnixMilli(row.ts)}
			c.cl.Produce(ctx, &recs[i], c.promise)
			row.key.remove(row)
			row.closed = true
		}
	}
}

// writeChanged produces every open window changed since the last commit
// to changelog in partition p, and forgets that they changed.
func (pw *partitionWindows) writeChanged(ctx context.Context, c *alosConsumer, p int32, changelog string) {
	buf := make([]byte, 0, windowBytes(pw.changed))
	recs := make([]kgo.Record, len(pw.changed))
	for i, row := range pw.changed {
		row.changed = false
		if row.closed {
			continue
		}
		var key, val []byte
		buf, key = appendWindowKey(buf, row)
		buf, val = appendCount(buf, row.n)
		recs[i] = kgo.Record{Topic: changelog, Partition: p, Key: key, Value: val, Timestamp: time.UnixMilli(row.ts)}
		c.cl.Produce(ctx, &recs[i], c.promise)
	}
	pw.changed = pw.changed[:0]
}

// windowBytes is how many bytes the windowed keys and counts of rows take.
func windowBytes(rows []*windowRow) int {
	n := 0
	for _, row := range rows {
		n += len(row.key.key) + 16
	}
	return n
}

// appendWindowKey appends row's windowed key (the key's bytes, then the
// window start as 8 big-endian bytes) to buf, which has room for it, and
// returns buf and the key.
func appendWindowKey(buf []byte, row *windowRow) ([]byte, []byte) {
	n := len(buf)
	buf = binary.BigEndian.AppendUint64(append(buf, row.key.key...), uint64(row.start))
	return buf, buf[n:len(buf):len(buf)]
}

// appendCount appends n as 8 big-endian bytes to buf, which has room for
// them, and returns buf and those bytes.
func appendCount(buf []byte, n int64) ([]byte, []byte) {
	i := len(buf)
	buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	return buf, buf[i:len(buf):len(buf)]
}
