package streams_test

// The left stream-stream join port: KStreamKStreamLeftJoinTest (see
// kafka_compat_stream_stream_join_test.go for the helpers and what is not
// ported).

import (
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// ssjoinUpperBound is KStreamKStreamLeftJoinTest's and
// KStreamKStreamOuterJoinTest's testUpperWindowBound after the right
// records b (prefix r) at 1000+k: left records at 1100..1104 join the
// right records up to 100ms before them, and those that met none are due
// once stream time passes 1104+100.
func ssjoinUpperBound(k *kafkaDriver, r string) {
	k.t.Helper()
	for i, p := range []string{"B", "C", "D", "E", "F"} {
		ts := 1100 + int64(i)
		ssjoinPipe(k, "topic1", p, ts, ssjoinAll...)
		ssjoinExpect(k, ssjoinWant(p, r, ssjoinAll[min(i, 4):], ssjoinAt(ts))...)
	}
	k.pipe("topic1", "0", "dummy", 1405)
	ssjoinExpect(k, "0:C0+null@1101", "0:D0+null@1102", "1:D1+null@1102",
		"0:E0+null@1103", "1:E1+null@1103", "2:E2+null@1103",
		"0:F0+null@1104", "1:F1+null@1104", "2:F2+null@1104", "3:F3+null@1104")
}

// ssjoinLowerBound is testLowerWindowBound: at stream time 1405, left
// records at 899..903 still join the right records at 1000+k the right
// buffer holds (up to 100ms after them), and those that meet none are
// emitted with null at once, their window long closed.
func ssjoinLowerBound(k *kafkaDriver, r string) {
	k.t.Helper()
	for i, p := range []string{"G", "H", "I", "J", "K"} {
		ts := 899 + int64(i)
		want := ssjoinWant(p, r, ssjoinAll[:i], ssjoinFrom(1000))
		want = append(want, ssjoinWant(p, "null", ssjoinAll[i:], ssjoinAt(ts))...)
		ssjoinPipe(k, "topic1", p, ts, ssjoinAll...)
		ssjoinExpect(k, want...)
	}
}

var _ = port(
	// KStreamKStreamLeftJoinTest.java, testLeftJoinWithDefaultSuppliers
	// (runLeftJoin).
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testLeftJoinWithDefaultSuppliers", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 0, 0, 1)
		ssjoinExpect(k, "0:A0+a0@0", "1:A1+a1@0")
		ssjoinPipe(k, "topic1", "B", 0, 0, 1, 2)
		ssjoinExpect(k, "0:B0+a0@0", "1:B1+a1@0")
		ssjoinPipe(k, "topic2", "b", 0, ssjoinAll...)
		ssjoinExpect(k, "0:A0+b0@0", "0:B0+b0@0", "1:A1+b1@0", "1:B1+b1@0", "2:B2+b2@0")
		ssjoinPipe(k, "topic1", "C", 0, ssjoinAll...)
		ssjoinExpect(k, "0:C0+a0@0", "0:C0+b0@0", "1:C1+a1@0", "1:C1+b1@0", "2:C2+b2@0", "3:C3+b3@0")
		// Every left record met a partner: nothing is due.
		k.pipe("topic1", "0", "dummy", 1000)
		ssjoinExpect(k)
	}},
	// KStreamKStreamLeftJoinTest.java, testLeftJoinDuplicates: equal keys
	// and timestamps are kept apart, and emitted in the order they came.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testLeftJoinDuplicates", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), ssjoinMs(10)))
		k.pipe("topic1", "0", "A0", 0)
		k.pipe("topic1", "0", "A0-0", 0)
		k.pipe("topic2", "1", "a0", 111)
		k.pipe("topic2", "2", "dummy", 500)
		ssjoinExpect(k, "0:A0+null@0", "0:A0-0+null@0")
		k.pipe("topic1", "2", "A2", 1000)
		k.pipe("topic1", "2", "A2-0", 1000)
		k.pipe("topic2", "2", "a2", 1001)
		ssjoinExpect(k, "2:A2+a2@1001", "2:A2-0+a2@1001")
		k.pipe("topic2", "3", "a3", 315)
		ssjoinExpect(k)
	}},
	// KStreamKStreamLeftJoinTest.java,
	// testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic1", "0", "A0", 1)
		k.pipe("topic1", "1", "A1", 2)
		k.pipe("topic1", "0", "A0-0", 3)
		ssjoinExpect(k)
		k.pipe("topic2", "1", "a1", 3)
		ssjoinExpect(k, "1:A1+a1@3")
		k.pipe("topic1", "2", "dummy", 401)
		ssjoinExpect(k, "0:A0+null@1", "0:A0-0+null@3")
		k.pipe("topic2", "2", "dummy", 401)
		ssjoinExpect(k, "2:dummy+dummy@401")
	}},
	// KStreamKStreamLeftJoinTest.java,
	// testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic1", "0", "A0", 1)
		k.pipe("topic1", "1", "A1", 2)
		k.pipe("topic1", "0", "A0-0", 3)
		ssjoinExpect(k)
		k.pipe("topic2", "1", "a1", 3)
		ssjoinExpect(k, "1:A1+a1@3")
		k.pipe("topic2", "2", "dummy", 401)
		ssjoinExpect(k, "0:A0+null@1", "0:A0-0+null@3")
		k.pipe("topic1", "2", "dummy", 402)
		ssjoinExpect(k, "2:dummy+dummy@402")
	}},
	// KStreamKStreamLeftJoinTest.java,
	// testRightNonJoinedRecordsAreNeverEmittedByTheLeftProcessor.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testRightNonJoinedRecordsAreNeverEmittedByTheLeftProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic2", "0", "A0", 1)
		k.pipe("topic2", "1", "A1", 2)
		k.pipe("topic2", "0", "A0-0", 3)
		ssjoinExpect(k)
		k.pipe("topic1", "1", "a1", 3)
		ssjoinExpect(k, "1:a1+A1@3")
		k.pipe("topic1", "2", "dummy", 401)
		ssjoinExpect(k)
		k.pipe("topic2", "2", "dummy", 402)
		ssjoinExpect(k, "2:dummy+dummy@402")
	}},
	// KStreamKStreamLeftJoinTest.java,
	// testRightNonJoinedRecordsAreNeverEmittedByTheRightProcessor.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testRightNonJoinedRecordsAreNeverEmittedByTheRightProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic2", "0", "A0", 1)
		k.pipe("topic2", "1", "A1", 2)
		k.pipe("topic2", "0", "A0-0", 3)
		ssjoinExpect(k)
		k.pipe("topic1", "1", "a1", 3)
		ssjoinExpect(k, "1:a1+A1@3")
		k.pipe("topic2", "2", "dummy", 401)
		ssjoinExpect(k)
		k.pipe("topic1", "2", "dummy", 402)
		ssjoinExpect(k, "2:dummy+dummy@402")
	}},
	// KStreamKStreamLeftJoinTest.java,
	// testLeftJoinedRecordsWithZeroAfterAreEmitted: with After zero a left
	// record is due as soon as stream time passes it, and a right record
	// out of order still joins it afterwards.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testLeftJoinedRecordsWithZeroAfterAreEmitted", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinWindows{Before: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 1000, ssjoinAll...)
		ssjoinExpect(k, "0:A0+null@1000", "1:A1+null@1001", "2:A2+null@1002")
		for i, p := range []string{"a", "b", "c", "d", "e"} {
			ssjoinPipe(k, "topic2", p, 999+int64(i), ssjoinAll...)
			ssjoinExpect(k, ssjoinWant("A", p, ssjoinAll[max(i-1, 0):], ssjoinFrom(1000))...)
		}
		ssjoinPipe(k, "topic2", "f", 1100, ssjoinAll...)
		ssjoinExpect(k)
	}},
	// KStreamKStreamLeftJoinTest.java, testOrdering: the unmatched
	// record due comes before the join of the record that made it due.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testOrdering", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic1", "0", "A0", 0)
		k.pipe("topic1", "1", "A1", 100)
		ssjoinExpect(k)
		k.pipe("topic2", "1", "a1", 110)
		ssjoinExpect(k, "0:A0+null@0", "1:A1+a1@110")
	}},
	// KStreamKStreamLeftJoinTest.java, testGracePeriod: unmatched records
	// wait for the window plus grace.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testGracePeriod", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), ssjoinMs(10)))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 101, ssjoinAll...)
		ssjoinExpect(k)
		k.pipe("topic2", "0", "dummy", 1201)
		ssjoinExpect(k, "0:A0+null@0", "1:A1+null@0")
	}},
	// KStreamKStreamLeftJoinTest.java, testWindowing (with
	// testUpperWindowBound and testLowerWindowBound).
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.testWindowing", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "a", 0, ssjoinAll...)
		ssjoinExpect(k, "0:A0+a0@0", "1:A1+a1@0")
		ssjoinPipeRising(k, "topic2", "b", 1000, ssjoinAll...)
		ssjoinExpect(k)
		ssjoinUpperBound(k, "b")
		ssjoinLowerBound(k, "b")
		k.pipe("topic1", "0", "dummy", 1203)
		ssjoinExpect(k, "0:dummy+null@1203")
	}},
	// KStreamKStreamLeftJoinTest.java,
	// shouldNotEmitLeftJoinResultForAsymmetricWindow.
	kafkaCase{Kafka: "KStreamKStreamLeftJoinTest.shouldNotEmitLeftJoinResultForAsymmetricWindow", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinLeft, streams.JoinWindows{After: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		k.pipe("topic2", "0", "a0", 100)
		ssjoinExpect(k, "0:A0+a0@100")
		k.pipe("topic2", "1", "a1", 102)
		ssjoinExpect(k, "1:A1+null@1")
	}},
)
