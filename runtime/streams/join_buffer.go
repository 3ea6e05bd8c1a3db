package streams

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/braidstream/braid/runtime/internal/state"
)

// A logged join buffer of an active task lives in memory: its index
// (windowState.index) holds the records, the changelog is their durable
// copy, and pebble holds a snapshot. Writing every buffered record to
// pebble as well, to be read back only after a restart, cost a join most
// of its commit (building a batch of every record of the interval) and
// pebble's flushes and compactions besides (issue 39's profile).
//
// Pebble's contents and checkpoint stay consistent as they must for any
// store: the data is the buffer as of the checkpoint's changelog offset,
// and a restart replays the changelog from there. Three things keep it so:
//
//   - A commit writes no record. Once every record buffered before an
//     earlier commit has expired (its side's latest timestamp moved past
//     them by the retention, and the index dropped them), a restart
//     needs nothing before that commit's changelog offset: the commit
//     empties pebble with that offset as the checkpoint, in one small
//     batch. So a crash replays about one retention of the changelog, as
//     Kafka Streams' in-memory stores replay theirs, not its whole length.
//   - Closing the task, or handing its stores to a standby, writes the
//     buffer as of its last commit (records numbered before the commit's
//     sequence number) with that commit's offset: one snapshot, which the
//     next start loads instead of replaying.
//   - Under exactly-once an abort is undone in memory: the records
//     numbered from the last commit's sequence number on leave the index,
//     and the side's latest timestamp returns to the commit's. Expiry runs
//     at commits only, so no record an abort brings back into sight was
//     dropped.
//
// A standby keeps following the changelog into pebble, off the active's
// path; a promotion loads pebble into the index (loadOpenWindows), and the
// buffer goes live. A buffer without a changelog keeps writing to pebble,
// which is then its only copy.

// liveBuffer is what a join buffer in memory knows beyond its index.
type liveBuffer struct {
	// committed is the buffer at its last commit: what an abort returns
	// to and a snapshot writes.
	committed bufferCommit
	// points are commits after pebble's checkpoint, oldest first, that a
	// restart could replay from once everything before them expired.
	points []replayPoint
}

// bufferCommit is a join buffer at one commit.
type bufferCommit struct {
	// seq numbers the next record: the records before the commit are
	// numbered below it (modulo 2^32, see uncommitted).
	seq uint32
	// storedUpTo and maxSegment are the window state's at the commit.
	storedUpTo, maxSegment int64
	// offset is the changelog offset after the commit's last record,
	// streamTime the task's at the commit.
	offset, streamTime int64
}

// replayPoint is a commit's changelog offset and the side's latest
// timestamp then: every record before the offset is at most that old.
type replayPoint struct{ offset, storedUpTo int64 }

// goLive makes a logged join buffer, just loaded from pebble, the live
// copy: the caller loaded pebble's records into the index.
func (st *taskStore) goLive(streamTime int64) {
	w := st.win
	st.expireIndex(streamTime)
	cp := st.db.Checkpoint()
	w.mem = &liveBuffer{committed: bufferCommit{
		seq: w.seq, storedUpTo: w.storedUpTo, maxSegment: w.maxSegment,
		offset: cp.ChangelogOffset, streamTime: streamTime,
	}}
}

// expireIndex drops the indexed records of segments past the retention,
// as expireSegments drops them from pebble.
func (st *taskStore) expireIndex(streamTime int64) {
	w := st.win
	if below, ok := w.expiryBelow(min(streamTime, w.storedUpTo)); ok {
		w.expiredBelow = below
		w.dropIndexed(below * w.interval)
	}
}

// committedStreamTime is the task's stream time at the store's last
// commit: pebble's checkpoint says it, but for a join buffer in memory,
// whose commits do not reach pebble.
func (st *taskStore) committedStreamTime() int64 {
	if st.win != nil && st.win.mem != nil {
		return st.win.mem.committed.streamTime
	}
	return st.db.Checkpoint().StreamTime
}

// committedOffset is the changelog offset the store's committed state
// covers: pebble's checkpoint, but for a join buffer in memory, whose
// commits do not reach pebble and whose state is whole in memory (and
// goes to pebble with that offset when the task closes). The assignor
// reads it as the state this instance holds: a running join is not
// behind its standbys.
func (st *taskStore) committedOffset() int64 {
	if st.win != nil && st.win.mem != nil {
		return st.win.mem.committed.offset
	}
	return st.db.Checkpoint().ChangelogOffset
}

// replayPointSpacing divides a buffer's retention into the steps at which
// commits are remembered as replay points: a restart replays at most
// 1/replayPointSpacing of the retention more than it must, and a buffer
// keeps about replayPointSpacing points however often it commits.
const replayPointSpacing = 8

// commitBuffer is commit for a join buffer in memory: it notes the
// commit, expires what it may, and moves pebble's checkpoint forward,
// emptying it, when a restart no longer needs what lies before.
func (st *taskStore) commitBuffer(streamTime int64) error {
	w, m := st.win, st.win.mem
	offset := st.lastOffset.Load() + 1
	m.committed = bufferCommit{seq: w.seq, storedUpTo: w.storedUpTo, maxSegment: w.maxSegment, offset: offset, streamTime: streamTime}
	st.expireIndex(streamTime)
	n := len(m.points)
	if n == 0 || w.storedUpTo-m.points[n-1].storedUpTo >= max(w.retention/replayPointSpacing, 1) {
		m.points = append(m.points, replayPoint{offset: offset, storedUpTo: w.storedUpTo})
	}
	// The latest point whose records the index dropped, all of them.
	dropped := w.expiredBelow * w.interval
	i := 0
	for i < len(m.points) && m.points[i].storedUpTo < dropped {
		i++
	}
	if i == 0 || m.points[i-1].offset <= st.db.Checkpoint().ChangelogOffset {
		return st.applyPending()
	}
	p := m.points[i-1]
	m.points = slices.Delete(m.points, 0, i)
	// Rows a load found expired may be pending deletion: the batch
	// empties pebble anyway.
	st.db.Abort()
	if err := st.db.Clear(state.Checkpoint{ChangelogOffset: p.offset, StreamTime: streamTime}); err != nil {
		return fmt.Errorf("moving the checkpoint of join buffer %q: %w", st.spec.name, err)
	}
	return nil
}

// applyPending applies what is pending in pebble under its checkpoint
// (the rows a load found expired), and otherwise lets pebble flush an
// old checkpoint.
func (st *taskStore) applyPending() error {
	if st.db.Pending() == 0 {
		st.db.FlushIfOld()
		return nil
	}
	if err := st.db.Commit(st.db.Checkpoint()); err != nil {
		return fmt.Errorf("committing store %q: %w", st.spec.name, err)
	}
	return nil
}

// undoBuffer returns a join buffer in memory to its last commit, as an
// abort does to pebble's pending writes.
func (st *taskStore) undoBuffer() {
	w, c := st.win, st.win.mem.committed
	if w.seq != c.seq {
		for key, k := range w.index {
			b := w.records(k)
			b.recs = slices.DeleteFunc(b.recs, func(r bufferedRecord) bool { return uncommitted(r.kb, c.seq, w.seq) })
			if len(b.recs) == 0 {
				w.forgetIndexed(key, k)
			}
		}
	}
	w.seq, w.storedUpTo, w.maxSegment = c.seq, c.storedUpTo, c.maxSegment
	w.last, w.lastValue, w.lastAdded = nil, nil, nil
	w.marked = min(w.marked, c.streamTime)
}

// uncommitted reports whether the record with changelog key kb was
// buffered after the commit that numbered on from committed, next being
// the buffer's next number now. Numbers are compared as distances from
// committed, so that they may wrap.
func uncommitted(kb []byte, committed, next uint32) bool {
	seq := binary.BigEndian.Uint32(kb[len(kb)-4:])
	return seq-committed < next-committed
}

// snapshotBuffer writes a join buffer in memory to pebble as of its last
// commit, with that commit's checkpoint: its records numbered before the
// commit, in their pebble layout, and nothing else. The records go into
// the batch in pebble's key order (time, then sequence number): a batch
// that large is sorted when applied, which costs little when it already
// is and most of the snapshot when it is not.
func (st *taskStore) snapshotBuffer() error {
	w, c := st.win, st.win.mem.committed
	recs := w.committedInTimeOrder(c.seq)
	size := 0
	for _, r := range recs {
		size += len(r.kb) + 8
	}
	keys := make([]byte, 0, size)
	entries := make([]state.Entry, len(recs))
	for i, r := range recs {
		vb, err := st.valueSerde.Serialize(st.changelogOrName(), r.value)
		if err != nil {
			return fmt.Errorf("store %q: serializing buffered value: %w", st.spec.name, err)
		}
		if vb == nil {
			vb = []byte{}
		}
		n := len(keys)
		keys = w.storeKey(keys, r.kb)
		entries[i] = state.Entry{Key: keys[n:len(keys):len(keys)], Value: vb}
	}
	st.db.Abort()
	if err := st.db.Replace(entries, state.Checkpoint{ChangelogOffset: c.offset, StreamTime: c.streamTime}); err != nil {
		return fmt.Errorf("writing a snapshot of join buffer %q: %w", st.spec.name, err)
	}
	return nil
}

// committedInTimeOrder returns the buffer's records numbered before seq,
// by timestamp and then sequence number, as pebble keys them. They are
// sorted as values holding both, not as pointers: a comparison that
// follows two pointers into a buffer of millions of records misses the
// CPU's caches. And they are sorted placed in the order of their
// numbers, not as the index lists them, key by key: records are numbered
// as they come, mostly in time order, so in number order they are all but
// sorted, and the sort, which finishes a sorted run in linear time, costs
// little where it was most of a large buffer's close.
func (w *windowState) committedInTimeOrder(seq uint32) []*bufferedRecord {
	n := 0
	for _, k := range w.index {
		n += len(w.records(k).recs)
	}
	items := make([]timeOrdered, 0, n)
	all := seq == w.seq
	for _, k := range w.index {
		b := w.records(k)
		for i := range b.recs {
			if r := &b.recs[i]; all || !uncommitted(r.kb, seq, w.seq) {
				items = append(items, timeOrdered{ts: r.ts, seq: binary.BigEndian.Uint32(r.kb[len(r.kb)-4:]), r: r})
			}
		}
	}
	items = inSequenceOrder(items, seq)
	slices.SortFunc(items, func(a, b timeOrdered) int {
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	recs := make([]*bufferedRecord, len(items))
	for i := range items {
		recs[i] = items[i].r
	}
	return recs
}

// timeOrdered is a buffered record with what orders it in pebble.
type timeOrdered struct {
	ts  int64
	seq uint32
	r   *bufferedRecord
}

// inSequenceOrder returns items in the order they were numbered in, all
// numbered before next (numbers wrap around): each placed at its distance
// from the newest, in one pass. Numbers kept are mostly the latest ones,
// with gaps for records not buffered (late) or dropped (expired, aborted).
// Items are returned as they are when the gaps would make the placing
// more than twice the records (an old record kept long, its timestamp far
// ahead) or two share a number (one kept through 2^32 numbers): the sort
// orders them all the same, at its full cost.
func inSequenceOrder(items []timeOrdered, next uint32) []timeOrdered {
	var span uint64
	for _, it := range items {
		span = max(span, uint64(next-1-it.seq)+1)
	}
	if span > 2*uint64(len(items))+1024 {
		return items
	}
	placed := make([]timeOrdered, span)
	for _, it := range items {
		at := span - 1 - uint64(next-1-it.seq)
		if placed[at].r != nil {
			return items
		}
		placed[at] = it
	}
	return slices.DeleteFunc(placed, func(it timeOrdered) bool { return it.r == nil })
}

// settleBuffers writes a snapshot of every join buffer of t in memory and
// leaves pebble their copy of record again: the task closes, or its
// stores go to a standby, which writes its changelog records on top. A
// buffer whose snapshot fails keeps pebble as it was, consistent with its
// own checkpoint, and a restore replays more.
func (t *task) settleBuffers() {
	for _, st := range t.windowed {
		if st.win.mem == nil {
			continue
		}
		if err := st.snapshotBuffer(); err != nil {
			t.app.log.Warn("a join buffer's snapshot failed; its next start replays its changelog from the checkpoint before",
				"task", t.id.String(), "store", st.spec.name, "err", err)
		}
		st.win.mem = nil
	}
}
