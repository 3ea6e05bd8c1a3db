package streams_test

// The stream-table join port: KStreamKTableJoinTest and
// KStreamKTableLeftJoinTest (apache/kafka,
// streams/src/test/java/org/apache/kafka/streams/kstream/internals), keyed
// by strings as the stream-stream port is, with Kafka's
// MockValueJoiner.TOSTRING_JOINER (ssjoinJoiner).
//
// Not ported: the cases of versioned tables and of Joined's grace period
// (shouldFailIfTableIsNotVersioned..., shouldDelayJoinByGracePeriod,
// shouldHandleLateJoinsWithGracePeriod: Braid has no versioned stores and
// joins a table's current row), the repartition topic names (the describe
// area), and the log lines of skipped records with a null key or value
// (Braid logs no line per skipped record).

import (
	"errors"
	"strconv"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// stjoinDriver joins streamTopic with the table of tableTopic, inner or
// left, and writes the results to "out".
func stjoinDriver(t *testing.T, left bool) *kafkaDriver {
	t.Helper()
	b := streams.NewBuilder()
	s := b.Stream([]string{"streamTopic"}, streams.WithSerdes(streams.String, streams.String))
	tbl := b.Table("tableTopic", streams.WithSerdes(streams.String, streams.String))
	join := s.JoinTable
	if left {
		join = s.LeftJoinTable
	}
	join(tbl, ssjoinJoiner, streams.WithSerdes(streams.String, streams.String)).To("out")
	return newKafkaDriver(t, b, streams.DriverConfig{})
}

// stjoinStream is Kafka's pushToStream: keys 0..n-1, valued prefix+key,
// key k at timestamp k.
func stjoinStream(k *kafkaDriver, n int, prefix string) {
	k.t.Helper()
	ssjoinPipeRising(k, "streamTopic", prefix, 0, ssjoinAll[:n]...)
}

// stjoinTable is Kafka's pushToTable: keys 0..n-1, valued prefix+key. Kafka
// gives them random timestamps, which a table without versions ignores;
// these are large and out of order.
func stjoinTable(k *kafkaDriver, n int, prefix string) {
	k.t.Helper()
	for i := range n {
		k.pipe("tableTopic", strconv.Itoa(i), prefix+strconv.Itoa(i), int64(1_900_000_000-i*7_919_000))
	}
}

// stjoinDelete is Kafka's pushNullValueToTable: tombstones for keys
// 0..n-1, at 0.
func stjoinDelete(k *kafkaDriver, n int) {
	k.t.Helper()
	for i := range n {
		k.pipe("tableTopic", strconv.Itoa(i), nil, 0)
	}
}

// stjoinCopartitioned checks that the stream and the table are one
// co-partitioned group: a driver refuses them with different partition
// counts.
func stjoinCopartitioned(t *testing.T, left bool) {
	b := streams.NewBuilder()
	s := b.Stream([]string{"streamTopic"})
	tbl := b.Table("tableTopic")
	if left {
		s.LeftJoinTable(tbl, ssjoinJoiner).To("out")
	} else {
		s.JoinTable(tbl, ssjoinJoiner).To("out")
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{Partitions: map[string]int{"streamTopic": 2, "tableTopic": 3}})
	if err == nil {
		d.Close()
	}
	var ce *streams.CopartitionError
	if !errors.As(err, &ce) {
		t.Fatalf("starting a driver on 2 and 3 partitions: %v, want a *CopartitionError", err)
	}
}

var _ = port(
	// KStreamKTableJoinTest.java, shouldRequireCopartitionedStreams.
	kafkaCase{Kafka: "KStreamKTableJoinTest.shouldRequireCopartitionedStreams", Area: "stream-table-join", Run: func(t *testing.T) {
		stjoinCopartitioned(t, false)
	}},
	// KStreamKTableJoinTest.java, shouldNotJoinWithEmptyTableOnStreamUpdates.
	kafkaCase{Kafka: "KStreamKTableJoinTest.shouldNotJoinWithEmptyTableOnStreamUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, false)
		stjoinStream(k, 2, "X")
		ssjoinExpect(k)
	}},
	// KStreamKTableJoinTest.java, shouldNotJoinOnTableUpdates.
	kafkaCase{Kafka: "KStreamKTableJoinTest.shouldNotJoinOnTableUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, false)
		stjoinStream(k, 2, "X")
		ssjoinExpect(k)
		stjoinTable(k, 2, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1")
		stjoinTable(k, 4, "YY")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+YY0@0", "1:X1+YY1@1", "2:X2+YY2@2", "3:X3+YY3@3")
		stjoinTable(k, 4, "YYY")
		ssjoinExpect(k)
	}},
	// KStreamKTableJoinTest.java, shouldJoinOnlyIfMatchFoundOnStreamUpdates.
	kafkaCase{Kafka: "KStreamKTableJoinTest.shouldJoinOnlyIfMatchFoundOnStreamUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, false)
		stjoinTable(k, 2, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1")
	}},
	// KStreamKTableJoinTest.java, shouldClearTableEntryOnNullValueUpdates.
	kafkaCase{Kafka: "KStreamKTableJoinTest.shouldClearTableEntryOnNullValueUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, false)
		stjoinTable(k, 4, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1", "2:X2+Y2@2", "3:X3+Y3@3")
		stjoinDelete(k, 2)
		ssjoinExpect(k)
		stjoinStream(k, 4, "XX")
		ssjoinExpect(k, "2:XX2+Y2@2", "3:XX3+Y3@3")
	}},
	// KStreamKTableLeftJoinTest.java, shouldRequireCopartitionedStreams.
	kafkaCase{Kafka: "KStreamKTableLeftJoinTest.shouldRequireCopartitionedStreams", Area: "stream-table-join", Run: func(t *testing.T) {
		stjoinCopartitioned(t, true)
	}},
	// KStreamKTableLeftJoinTest.java, shouldJoinWithEmptyTableOnStreamUpdates.
	kafkaCase{Kafka: "KStreamKTableLeftJoinTest.shouldJoinWithEmptyTableOnStreamUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, true)
		stjoinStream(k, 2, "X")
		ssjoinExpect(k, "0:X0+null@0", "1:X1+null@1")
	}},
	// KStreamKTableLeftJoinTest.java, shouldNotJoinOnTableUpdates.
	kafkaCase{Kafka: "KStreamKTableLeftJoinTest.shouldNotJoinOnTableUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, true)
		stjoinStream(k, 2, "X")
		ssjoinExpect(k, "0:X0+null@0", "1:X1+null@1")
		stjoinTable(k, 2, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1", "2:X2+null@2", "3:X3+null@3")
		stjoinTable(k, 4, "YY")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+YY0@0", "1:X1+YY1@1", "2:X2+YY2@2", "3:X3+YY3@3")
		stjoinTable(k, 4, "YYY")
		ssjoinExpect(k)
	}},
	// KStreamKTableLeftJoinTest.java,
	// shouldJoinRegardlessIfMatchFoundOnStreamUpdates.
	kafkaCase{Kafka: "KStreamKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, true)
		stjoinTable(k, 2, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1", "2:X2+null@2", "3:X3+null@3")
	}},
	// KStreamKTableLeftJoinTest.java, shouldClearTableEntryOnNullValueUpdates.
	kafkaCase{Kafka: "KStreamKTableLeftJoinTest.shouldClearTableEntryOnNullValueUpdates", Area: "stream-table-join", Run: func(t *testing.T) {
		k := stjoinDriver(t, true)
		stjoinTable(k, 4, "Y")
		ssjoinExpect(k)
		stjoinStream(k, 4, "X")
		ssjoinExpect(k, "0:X0+Y0@0", "1:X1+Y1@1", "2:X2+Y2@2", "3:X3+Y3@3")
		stjoinDelete(k, 2)
		ssjoinExpect(k)
		stjoinStream(k, 4, "XX")
		ssjoinExpect(k, "0:XX0+null@0", "1:XX1+null@1", "2:XX2+Y2@2", "3:XX3+Y3@3")
	}},
)
