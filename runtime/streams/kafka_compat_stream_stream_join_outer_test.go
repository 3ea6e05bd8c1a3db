package streams_test

// The outer stream-stream join port: KStreamKStreamOuterJoinTest (see
// kafka_compat_stream_stream_join_test.go for the helpers and what is not
// ported). The right values are Kafka's Longs as decimal strings.

import (
	"slices"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ssjoinExpired is the body of the four
// test{Left,Right}ExpiredNonJoinedRecordsAreEmittedBy{Left,Right}Processor
// cases: three records of one side (the left one if unmatchedLeft) at
// 1..3, one of which meets a record of the other side; the other two are
// due once stream time passes 103, brought there by a left record if
// dueByLeft, else by a right one.
func ssjoinExpired(t *testing.T, unmatchedLeft, dueByLeft bool) {
	k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), 0))
	this, other := "topic1", "topic2"
	if !unmatchedLeft {
		this, other = other, this
	}
	vals := map[string][3]string{"topic1": {"A0", "A1", "A0-0"}, "topic2": {"10", "11", "12"}}
	k.pipe(this, "0", vals[this][0], 1)
	k.pipe(this, "1", vals[this][1], 2)
	k.pipe(this, "0", vals[this][2], 3)
	ssjoinExpect(k)
	k.pipe(other, "1", vals[other][1], 3)
	ssjoinExpect(k, "1:A1+11@3")
	first, second := "topic1", "topic2"
	if !dueByLeft {
		first, second = second, first
	}
	late := map[string]string{"topic1": "dummy", "topic2": "100"}
	k.pipe(first, "2", late[first], 401)
	if unmatchedLeft {
		ssjoinExpect(k, "0:A0+null@1", "0:A0-0+null@3")
	} else {
		ssjoinExpect(k, "0:null+10@1", "0:null+12@3")
	}
	// Kafka's right-processor variants of the left records bring the
	// second record at 402, the others at 401 or 402 alike.
	ts := int64(402)
	if unmatchedLeft && dueByLeft {
		ts = 401
	}
	k.pipe(second, "2", late[second], ts)
	ssjoinExpect(k, kafkaKV("2", "dummy+100", ts))
}

var _ = port(
	// KStreamKStreamOuterJoinTest.java, testOuterJoinWithDefaultSuppliers
	// (runOuterJoin).
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testOuterJoinWithDefaultSuppliers", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "1", 0, 0, 1)
		ssjoinExpect(k, "0:A0+10@0", "1:A1+11@0")
		ssjoinPipe(k, "topic1", "B", 0, 0, 1, 2)
		ssjoinExpect(k, "0:B0+10@0", "1:B1+11@0")
		ssjoinPipe(k, "topic2", "2", 0, ssjoinAll...)
		ssjoinExpect(k, "0:A0+20@0", "0:B0+20@0", "1:A1+21@0", "1:B1+21@0", "2:B2+22@0")
		ssjoinPipe(k, "topic1", "C", 0, ssjoinAll...)
		ssjoinExpect(k, "0:C0+10@0", "0:C0+20@0", "1:C1+11@0", "1:C1+21@0", "2:C2+22@0", "3:C3+23@0")
		// B2 met 22 and 23 met C3: nothing is due.
		k.pipe("topic1", "0", "dummy", 400)
		ssjoinExpect(k)
	}},
	// KStreamKStreamOuterJoinTest.java, testOuterJoinDuplicates: the due
	// records of equal timestamps come right side first.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testOuterJoinDuplicates", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), ssjoinMs(10)))
		k.pipe("topic1", "0", "A0", 0)
		k.pipe("topic1", "0", "A0-0", 0)
		k.pipe("topic2", "1", "11", 0)
		k.pipe("topic2", "1", "12", 0)
		k.pipe("topic2", "1", "10", 111)
		k.pipe("topic2", "3", "100", 211)
		ssjoinExpect(k, "1:null+11@0", "1:null+12@0", "0:A0+null@0", "0:A0-0+null@0")
		k.pipe("topic1", "2", "A2", 200)
		k.pipe("topic1", "2", "A2-0", 200)
		k.pipe("topic2", "2", "13", 201)
		k.pipe("topic2", "2", "14", 201)
		ssjoinExpect(k, "2:A2+13@201", "2:A2-0+13@201", "2:A2+14@201", "2:A2-0+14@201")
		k.pipe("topic2", "3", "100", 1500)
		ssjoinExpect(k, "1:null+10@111", "3:null+100@211")
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		ssjoinExpired(t, true, true)
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		ssjoinExpired(t, true, false)
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		ssjoinExpired(t, false, true)
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor", Area: "stream-stream-join", Run: func(t *testing.T) {
		ssjoinExpired(t, false, false)
	}},
	// KStreamKStreamOuterJoinTest.java, testOrdering.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testOrdering", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), 0))
		k.pipe("topic1", "0", "A0", 0)
		k.pipe("topic1", "1", "A1", 100)
		ssjoinExpect(k)
		k.pipe("topic2", "1", "11", 110)
		ssjoinExpect(k, "0:A0+null@0", "1:A1+11@110")
	}},
	// KStreamKStreamOuterJoinTest.java, testGracePeriod: at equal
	// timestamps the right side's unmatched record comes first.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testGracePeriod", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), ssjoinMs(10)))
		k.pipe("topic1", "0", "A0", 0)
		k.pipe("topic2", "1", "11", 0)
		ssjoinExpect(k)
		k.pipe("topic1", "1", "A1", 101)
		k.pipe("topic2", "0", "10", 101)
		ssjoinExpect(k)
		k.pipe("topic2", "0", "100", 112)
		ssjoinExpect(k, "1:null+11@0", "0:A0+null@0")
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testEmitAllNonJoinedResultsForAsymmetricWindow: each side's records
	// are due after their own look-back (right: Before, left: After).
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testEmitAllNonJoinedResultsForAsymmetricWindow", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinWindows{Before: ssjoinMs(5), After: ssjoinMs(20)})
		k.pipe("topic1", "0", "A0", 29)
		k.pipe("topic1", "1", "A1", 30)
		k.pipe("topic2", "2", "12", 31)
		k.pipe("topic2", "3", "13", 36)
		ssjoinExpect(k)
		k.pipe("topic2", "4", "14", 37)
		ssjoinExpect(k, "2:null+12@31")
		k.pipe("topic2", "5", "15", 50)
		ssjoinExpect(k, "0:A0+null@29", "3:null+13@36", "4:null+14@37")
	}},
	// KStreamKStreamOuterJoinTest.java, testWindowing (with
	// testUpperWindowBound and testLowerWindowBound).
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testWindowing", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), 0))
		ssjoinPipe(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		ssjoinPipe(k, "topic2", "1", 0, ssjoinAll...)
		ssjoinExpect(k, "0:A0+10@0", "1:A1+11@0")
		ssjoinPipeRising(k, "topic2", "2", 1000, ssjoinAll...)
		ssjoinExpect(k, "2:null+12@0", "3:null+13@0")
		ssjoinUpperBound(k, "2")
		ssjoinLowerBound(k, "2")
		k.pipe("topic1", "0", "dummy", 1103)
		ssjoinExpect(k, "0:dummy+null@1103")
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinWindows{After: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k)
		k.pipe("topic2", "0", "10", 100)
		ssjoinExpect(k, "0:A0+10@100")
		k.pipe("topic2", "1", "11", 102)
		ssjoinExpect(k, "1:A1+null@1")
		k.pipe("topic2", "2", "12", 103)
		ssjoinExpect(k, "1:null+11@102")
		k.pipe("topic1", "2", "A2", 103)
		ssjoinExpect(k, "2:A2+12@103")
	}},
	// KStreamKStreamOuterJoinTest.java,
	// testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinWindows{Before: ssjoinMs(100)})
		ssjoinPipeRising(k, "topic1", "A", 0, 0, 1)
		ssjoinExpect(k, "0:A0+null@0")
		k.pipe("topic2", "1", "11", 1)
		ssjoinExpect(k, "1:A1+11@1")
		k.pipe("topic2", "2", "12", 101)
		ssjoinExpect(k)
		k.pipe("topic2", "3", "13", 101)
		ssjoinExpect(k)
		k.pipe("topic1", "2", "A2", 201)
		ssjoinExpect(k, "2:A2+12@201")
	}},
	// KStreamKStreamOuterJoinTest.java, testShouldForwardCurrentHeaders:
	// due records carry the headers of the record that made them due,
	// joins those of the record being processed.
	kafkaCase{Kafka: "KStreamKStreamOuterJoinTest.testShouldForwardCurrentHeaders", Area: "stream-stream-join", Run: func(t *testing.T) {
		k := ssjoinDriver(t, ssjoinOuter, streams.JoinTimeDifference(ssjoinMs(100), ssjoinMs(10)))
		pipe := func(topic, key, value string, h byte, ts int64) {
			t.Helper()
			err := k.d.PipeRecord(streams.Record{Topic: topic, Partition: -1, Key: []byte(key), Value: []byte(value),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{h}}}, Timestamp: ts})
			if err != nil {
				t.Fatalf("piping %s:%s@%d: %v", key, value, ts, err)
			}
		}
		expect := func(want ...string) {
			t.Helper()
			var got []string
			for _, r := range k.d.ReadOutput("out") {
				line := kafkaKV(string(r.Key), string(r.Value), r.Timestamp)
				for _, h := range r.Headers {
					line += " " + h.Key + "=" + string(rune('0'+h.Value[0]))
				}
				got = append(got, line)
			}
			if !slices.Equal(got, want) {
				t.Errorf("out:\n got  %s\n want %s", kafkaLines(got), kafkaLines(want))
			}
		}
		pipe("topic1", "0", "A0", 1, 0)
		pipe("topic2", "1", "10", 2, 0)
		pipe("topic2", "3", "100", 3, 211)
		expect("1:null+10@0 h=3", "0:A0+null@0 h=3")
		pipe("topic1", "2", "A2", 4, 200)
		pipe("topic2", "2", "12", 5, 200)
		expect("2:A2+12@200 h=5")
	}},
)
