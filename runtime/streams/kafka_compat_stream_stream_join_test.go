package streams_test

// The stream-stream join port: KStreamKStreamJoinTest and
// KStreamKStreamLeftJoinTest (apache/kafka,
// streams/src/test/java/org/apache/kafka/streams/kstream/internals); the
// outer joins are in kafka_compat_stream_stream_join_outer_test.go.
//
// Kafka's tests key by Integer; these key by the same numbers as strings,
// which sort alike (one digit each), and pipe Kafka's Long values as their
// decimal strings. The joiner is Kafka's MockValueJoiner.TOSTRING_JOINER.
//
// Not ported: the tests of StreamJoined's store suppliers and their
// checks (Braid's Materialized takes no store suppliers), of the
// repartition topics' and stores' names (the describe area covers them),
// of logging configs, of the old JoinWindows API without the spurious
// result fix (Braid has only the fixed behavior), of the emit throttle
// (Braid has none: it scans the unmatched records only once stream time
// reaches the earliest close), and of metrics and log lines.

import (
	"strconv"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// ssjoinKind says which stream-stream join a case builds.
type ssjoinKind int

const (
	ssjoinInner ssjoinKind = iota
	ssjoinLeft
	ssjoinOuter
)

// ssjoinAll are the keys Kafka's tests call expectedKeys.
var ssjoinAll = []int{0, 1, 2, 3}

// ssjoinMs is a JoinWindows duration of n milliseconds.
func ssjoinMs(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// ssjoinJoiner is MockValueJoiner.TOSTRING_JOINER: "left+right", null for
// a missing side.
func ssjoinJoiner(_, l, r any) (any, error) { return kafkaString(l) + "+" + kafkaString(r), nil }

// ssjoinDriver joins topic1 with topic2 (string keys and values) within w
// and writes the results to "out".
func ssjoinDriver(t *testing.T, kind ssjoinKind, w streams.JoinWindows) *kafkaDriver {
	t.Helper()
	b := streams.NewBuilder()
	s1 := b.Stream([]string{"topic1"}, streams.WithSerdes(streams.String, streams.String))
	s2 := b.Stream([]string{"topic2"}, streams.WithSerdes(streams.String, streams.String))
	join := s1.Join
	switch kind {
	case ssjoinLeft:
		join = s1.LeftJoin
	case ssjoinOuter:
		join = s1.OuterJoin
	}
	join(s2, ssjoinJoiner, w, streams.WithSerdes(streams.String, streams.String)).To("out")
	return newKafkaDriver(t, b, streams.DriverConfig{})
}

// ssjoinPipe pipes one record per key to topic, valued prefix+key, at ts.
func ssjoinPipe(k *kafkaDriver, topic, prefix string, ts int64, keys ...int) {
	k.t.Helper()
	for _, key := range keys {
		k.pipe(topic, strconv.Itoa(key), prefix+strconv.Itoa(key), ts)
	}
}

// ssjoinPipeRising is ssjoinPipe with the i-th key at ts+i.
func ssjoinPipeRising(k *kafkaDriver, topic, prefix string, ts int64, keys ...int) {
	k.t.Helper()
	for i, key := range keys {
		k.pipe(topic, strconv.Itoa(key), prefix+strconv.Itoa(key), ts+int64(i))
	}
}

// ssjoinExpect compares what reached "out" since the last read with want.
func ssjoinExpect(k *kafkaDriver, want ...string) {
	k.t.Helper()
	k.expect("out", streams.String, streams.String, want...)
}

// ssjoinWant returns the result lines "key:<l><key>+<r><key>@ts" of keys,
// ts(key) each; a side "null" stands for itself, without the key.
func ssjoinWant(l, r string, keys []int, ts func(key int) int64) []string {
	side := func(s string, key int) string {
		if s == "null" {
			return s
		}
		return s + strconv.Itoa(key)
	}
	var out []string
	for _, key := range keys {
		out = append(out, kafkaKV(strconv.Itoa(key), side(l, key)+"+"+side(r, key), ts(key)))
	}
	return out
}

// ssjoinAt is a ts function of ssjoinWant: every key at ts.
func ssjoinAt(ts int64) func(int) int64 { return func(int) int64 { return ts } }

// ssjoinFrom is a ts function of ssjoinWant: key k at ts+k.
func ssjoinFrom(ts int64) func(int) int64 { return func(k int) int64 { return ts + int64(k) } }

// ssjoinFourSteps is the body of KStreamKStreamJoinTest.testJoin and
// testOuterJoin, and of runLeftJoin/runOuterJoin's first steps: records
// at 0 that all fall into one window, so that every pair with equal keys
// joins, partners in the order they were buffered.
func ssjoinFourSteps(k *kafkaDriver) {
	k.t.Helper()
	ssjoinPipe(k, "topic1", "A", 0, 0, 1)
	ssjoinExpect(k)
	ssjoinPipe(k, "topic2", "a", 0, 0, 1)
	ssjoinExpect(k, "0:A0+a0@0", "1:A1+a1@0")
	ssjoinPipe(k, "topic1", "B", 0, ssjoinAll...)
	ssjoinExpect(k, "0:B0+a0@0", "1:B1+a1@0")
	ssjoinPipe(k, "topic2", "b", 0, ssjoinAll...)
	ssjoinExpect(k, "0:A0+b0@0", "0:B0+b0@0", "1:A1+b1@0", "1:B1+b1@0", "2:B2+b2@0", "3:B3+b3@0")
	ssjoinPipe(k, "topic1", "C", 0, ssjoinAll...)
	ssjoinExpect(k, "0:C0+a0@0", "0:C0+b0@0", "1:C1+a1@0", "1:C1+b1@0", "2:C2+b2@0", "3:C3+b3@0")
}

var _ = port(
	// KStreamKStreamJoinTest.java, testJoin.
	kafkaCase{Kafka: "KStreamKStreamJoinTest.testJoin", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinInner, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinFourSteps(k)
		ssjoinPipe(k, "topic2", "c", 0, 0, 1)
		ssjoinExpect(k, "0:A0+c0@0", "0:B0+c0@0", "0:C0+c0@0", "1:A1+c1@0", "1:B1+c1@0", "1:C1+c1@0")
	}},
	// KStreamKStreamJoinTest.java, testOuterJoin: with a day of grace
	// nothing is due as unmatched.
	kafkaCase{Kafka: "KStreamKStreamJoinTest.testOuterJoin", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), 24*time.Hour))
		ssjoinFourSteps(k)
		ssjoinPipe(k, "topic2", "c", 0, 0, 1)
		ssjoinExpect(k, "0:A0+c0@0", "0:B0+c0@0", "0:C0+c0@0", "1:A1+c1@0", "1:B1+c1@0", "1:C1+c1@0")
	}},
	// KStreamKStreamJoinTest.java, testWindowing: both window bounds,
	// from each side, with records out of order by up to 205ms joining
	// what the other side still buffers.
	kafkaCase{Kafka: "KStreamKStreamJoinTest.testWindowing", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinInner, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 0, 0, 1)
		ssjoinExpect(k, "0:A0+a0@0", "1:A1+a1@0")

		ssjoinPipeRising(k, "topic1", "B", 1000, ssjoinAll...)
		ssjoinExpect(k)
		// Right records at 1100..1104: B_k (at 1000+k) is in reach up to
		// 1100+k.
		for i, p := range []string{"b", "c", "d", "e", "f"} {
			ts := 1100 + int64(i)
			ssjoinPipe(k, "topic2", p, ts, ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("B", p, ssjoinAll[min(i, 4):], ssjoinAt(ts))...)
		}
		// Out of order, at 899..903: B_k is in reach from 900+k.
		for i, p := range []string{"g", "h", "i", "j", "k"} {
			ssjoinPipe(k, "topic2", p, 899+int64(i), ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("B", p, ssjoinAll[:i], ssjoinFrom(1000))...)
		}

		ssjoinPipeRising(k, "topic2", "l", 2000, ssjoinAll...)
		ssjoinExpect(k)
		for i, p := range []string{"C", "D", "E", "F", "G"} {
			ts := 2100 + int64(i)
			ssjoinPipe(k, "topic1", p, ts, ssjoinAll...)
			ssjoinExpect(k, ssjoinWant(p, "l", ssjoinAll[min(i, 4):], ssjoinAt(ts))...)
		}
		for i, p := range []string{"H", "I", "J", "K", "L"} {
			ssjoinPipe(k, "topic1", p, 1899+int64(i), ssjoinAll...)
			ssjoinExpect(k, ssjoinWant(p, "l", ssjoinAll[:i], ssjoinFrom(2000))...)
		}
	}},
	// KStreamKStreamJoinTest.java, testAsymmetricWindowingAfter: a left
	// record joins the right records of the 100ms after it, none before.
	kafkaCase{Kafka: "KStreamKStreamJoinTest.testAsymmetricWindowingAfter", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinInner, streams.JoinWindows{After: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 1000, ssjoinAll...)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 999, ssjoinAll...)
		ssjoinExpect(k)
		for i, p := range []string{"b", "c", "d", "e"} {
			ts := 1000 + int64(i)
			ssjoinPipe(k, "topic2", p, ts, ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("A", p, ssjoinAll[:i+1], ssjoinAt(ts))...)
		}
		for i, p := range []string{"f", "g", "h", "i", "j"} {
			ts := 1100 + int64(i)
			ssjoinPipe(k, "topic2", p, ts, ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("A", p, ssjoinAll[min(i, 4):], ssjoinAt(ts))...)
		}
	}},
	// KStreamKStreamJoinTest.java, testAsymmetricWindowingBefore: a left
	// record joins the right records of the 100ms before it, none after.
	kafkaCase{Kafka: "KStreamKStreamJoinTest.testAsymmetricWindowingBefore", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinInner, streams.JoinWindows{Before: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 1000, ssjoinAll...)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 899, ssjoinAll...)
		ssjoinExpect(k)
		for i, p := range []string{"b", "c", "d", "e"} {
			ssjoinPipe(k, "topic2", p, 900+int64(i), ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("A", p, ssjoinAll[:i+1], ssjoinFrom(1000))...)
		}
		for i, p := range []string{"f", "g", "h", "i", "j"} {
			ssjoinPipe(k, "topic2", p, 1000+int64(i), ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("A", p, ssjoinAll[min(i, 4):], ssjoinFrom(1000))...)
		}
	}},
)
