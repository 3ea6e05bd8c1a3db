package difftest

import (
	"encoding/binary"
	"testing"
)

// The tests here pin the differences in session and sliding windows named
// in docs/differences.md, each with the exact outputs of both sides;
// Generate avoids their shapes.

// pinDifference runs c on both sides and checks each side's outputs.
func pinDifference(t *testing.T, c Case, wantPeer, wantBraid []Output) {
	t.Helper()
	cp := peerClasspath(t)
	peer, braid := bothSides(t, cp, c)
	if d := Diff(peer[0], wantPeer); d != "" {
		t.Errorf("Kafka Streams:\n%s", d)
	}
	if d := Diff(braid, wantBraid); d != "" {
		t.Errorf("Braid:\n%s", d)
	}
}

// sessionKey is a session-windowed key: the key, then end and start.
func sessionKey(key string, start, end int64) []byte {
	b := binary.BigEndian.AppendUint64([]byte(key), uint64(end))
	return binary.BigEndian.AppendUint64(b, uint64(start))
}

// timeKey is a time-windowed key: the key, then the window's start.
func timeKey(key string, start int64) []byte {
	return binary.BigEndian.AppendUint64([]byte(key), uint64(start))
}

// int64Value is a count as the int64 serde writes it.
func int64Value(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// TestDifferentialSessionInRecordCache pins "Sessions merge by the
// store's retention" (docs/differences.md): with caching on, Kafka
// Streams' session store also returns the sessions its record cache still
// holds, past the store's retention (gap plus grace behind the latest
// session end), and merges a late record's session with a closed one
// (sending no tombstone for it). Braid merges only the sessions the store
// retains, cache or not.
func TestDifferentialSessionInRecordCache(t *testing.T) {
	c := Case{Name: "closed session in the record cache", Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("group", "group-by-key"),
		n("w", "windowed-by", "type", "session", "gap", "3s", "grace", "0s"),
		n("count", "count", "caching", "on"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k", `{}`, 0),
			rec("in", "k", `{}`, 5000), // [0,0] closes at 3001
			rec("in", "k", `{}`, 2500), // within the gap of both
		}}
	out := func(start, end int64, count int64, ts int64) Output {
		o := Output{Topic: "out", Key: sessionKey("k", start, end), Timestamp: ts}
		if count > 0 {
			o.Value = int64Value(count)
		}
		return o
	}
	first := []Output{out(0, 0, 1, 0), out(5000, 5000, 1, 5000)}
	pinDifference(t, c,
		append(first, out(5000, 5000, 0, 5000), out(0, 5000, 3, 5000)),
		append(first, out(5000, 5000, 0, 5000), out(2500, 5000, 2, 5000)))
}

// TestDifferentialSlidingSkipsNulls pins "Stream time per task" for
// sliding windows, which skip records with a null value: a skipped
// tombstone still advances Braid's stream time (the task's), not Kafka
// Streams' sliding aggregation's, so a later record is late in Braid only.
func TestDifferentialSlidingSkipsNulls(t *testing.T) {
	c := Case{Name: "tombstone before a sliding window", Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("group", "group-by-key"),
		n("w", "windowed-by", "type", "sliding", "size", "5s", "grace", "0s"),
		n("count", "count", "caching", "off"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k", `{}`, 6000),
			rec("in", "k", "", 20000), // skipped by the window
			rec("in", "k", `{}`, 7000),
		}}
	first := Output{Topic: "out", Key: timeKey("k", 1000), Value: int64Value(1), Timestamp: 6000}
	pinDifference(t, c, []Output{first,
		{Topic: "out", Key: timeKey("k", 6001), Value: int64Value(1), Timestamp: 7000},
		{Topic: "out", Key: timeKey("k", 2000), Value: int64Value(2), Timestamp: 7000},
	}, []Output{first})
}

// TestDifferentialSlidingFinalAtGrace pins "Sliding windows close after
// their end" (docs/differences.md): the peer's emit-final of a sliding
// window, suppress(untilWindowCloses), emits a window once stream time
// reaches its end plus grace, while the aggregation still takes records
// for it, so a window ending at the stream time (grace 0: every new
// record's own) goes out at once and again after each later update.
// Braid emits it once, when it closes, a millisecond later.
func TestDifferentialSlidingFinalAtGrace(t *testing.T) {
	c := Case{Name: "sliding final result at grace", Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("group", "group-by-key"),
		n("w", "windowed-by", "type", "sliding", "size", "3s", "grace", "0s", "emit", "on-window-close"),
		n("count", "count", "caching", "off"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k", `{}`, 5000),
			rec("in", "k", `{}`, 4000),
			rec("in", "k", `{}`, 9000),
		}}
	out := func(start, count, ts int64) Output {
		return Output{Topic: "out", Key: timeKey("k", start), Value: int64Value(count), Timestamp: ts}
	}
	pinDifference(t, c,
		[]Output{out(2000, 1, 5000), out(2000, 2, 5000), out(4001, 1, 5000), out(6000, 1, 9000)},
		[]Output{out(2000, 2, 5000), out(4001, 1, 5000)})
}

// TestDifferentialSessionLostWithSegment pins "Windows closed by a jump"
// (docs/differences.md) for sessions: Kafka Streams' session store,
// segmented by a minute, drops the segment of [59000,59000] as stream time
// passes 60000 plus gap and grace, in the record that closes the session,
// before its emit-final scan finds it. Braid emits it.
func TestDifferentialSessionLostWithSegment(t *testing.T) {
	c := Case{Name: "session closed with its segment", Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("group", "group-by-key"),
		n("w", "windowed-by", "type", "session", "gap", "2s", "grace", "0s", "emit", "on-window-close"),
		n("count", "count", "caching", "off"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k", `{}`, 59000),
			rec("in", "k", `{}`, 70000),
		}}
	pinDifference(t, c, nil, []Output{{Topic: "out", Key: sessionKey("k", 59000, 59000), Value: int64Value(1), Timestamp: 59000}})
}
