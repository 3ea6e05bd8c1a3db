package streams_test

// The describe() part of the Kafka Streams port: topologies that Kafka's
// tests print with Topology.describe(), built with Braid's DSL and compared
// byte for byte with the text those tests assert (golden files in
// testdata/kafka/describe, named "<JavaClass>.<method>.txt").

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// describeCase registers a case that builds a topology and compares its
// Describe() with the golden file of the Java test kafka.
func describeCase(kafka string, build func(b *streams.Builder)) kafkaCase {
	return kafkaCase{Kafka: kafka, Area: "describe", Run: func(t *testing.T) {
		describeExpect(t, kafka, build)
	}}
}

// describeExpect builds the topology and compares its text with the golden
// file of the Java test.
func describeExpect(t *testing.T, kafka string, build func(b *streams.Builder)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "kafka", "describe", kafka+".txt"))
	if err != nil {
		t.Fatalf("reading the golden file: %v", err)
	}
	b := streams.NewBuilder()
	build(b)
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("building topology: %v", err)
	}
	if got, want := topo.Describe(), string(raw); got != want {
		t.Errorf("Describe() differs from the text %s asserts\n--- got\n%s--- want\n%s", kafka, got, want)
	}
}

// describeJoiner stands for Kafka's MockValueJoiner.TOSTRING_JOINER.
func describeJoiner(_, l, r any) (any, error) {
	return describeString(l) + "+" + describeString(r), nil
}

func describeString(v any) string {
	if v == nil {
		return "null"
	}
	return v.(string)
}

// describeNullKey is the (key, value) -> null grouping of Kafka's tests.
func describeNullKey(any, any) (any, any, error) { return nil, nil, nil }

func describeNone(any, any) (bool, error) { return false, nil }

func describeNullValue(any) (any, error) { return nil, nil }

// describeJoinWindow is JoinWindows.ofTimeDifferenceWithNoGrace(100 ms).
var describeJoinWindow = streams.JoinTimeDifference(100*time.Millisecond, 0)

// describeCustomStore is StreamJoined.withStoreName("custom-name").
var describeCustomStore = streams.Materialized(streams.StoreOptions{Name: "custom-name"})

// describeNamedCount is Materialized.as("count-store").
var describeNamedCount = streams.Materialized(streams.StoreOptions{Name: "count-store"})

// describeAnonymousCount is Materialized.with(null, Serdes.Long()): serdes
// but no store name.
var describeAnonymousCount = streams.Materialized(streams.StoreOptions{ValueSerde: streams.Int64})

var _ = port(
	// TopologyTest.java, streamStreamJoinTopologyWithDefaultStoresNames.
	describeCase("TopologyTest.streamStreamJoinTopologyWithDefaultStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).Join(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow)
	}),
	// TopologyTest.java, streamStreamJoinTopologyWithCustomStoresNames.
	describeCase("TopologyTest.streamStreamJoinTopologyWithCustomStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).Join(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow, describeCustomStore)
	}),
	// TopologyTest.java, streamStreamLeftJoinTopologyWithDefaultStoresNames.
	describeCase("TopologyTest.streamStreamLeftJoinTopologyWithDefaultStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).LeftJoin(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow)
	}),
	// TopologyTest.java, streamStreamLeftJoinTopologyWithCustomStoresNames.
	describeCase("TopologyTest.streamStreamLeftJoinTopologyWithCustomStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).LeftJoin(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow, describeCustomStore)
	}),
	// TopologyTest.java, streamStreamOuterJoinTopologyWithDefaultStoresNames.
	describeCase("TopologyTest.streamStreamOuterJoinTopologyWithDefaultStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).OuterJoin(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow)
	}),
	// TopologyTest.java, streamStreamOuterJoinTopologyWithCustomStoresNames.
	describeCase("TopologyTest.streamStreamOuterJoinTopologyWithCustomStoresNames", func(b *streams.Builder) {
		b.Stream([]string{"input-topic1"}).OuterJoin(b.Stream([]string{"input-topic2"}), describeJoiner, describeJoinWindow, describeCustomStore)
	}),
	// TopologyTest.java, kGroupedStreamZeroArgCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kGroupedStreamZeroArgCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().Count()
	}),
	// TopologyTest.java, kGroupedStreamNamedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kGroupedStreamNamedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().Count(describeNamedCount)
	}),
	// TopologyTest.java, kGroupedStreamAnonymousMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kGroupedStreamAnonymousMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().Count(describeAnonymousCount)
	}),
	// TopologyTest.java, timeWindowZeroArgCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.timeWindowZeroArgCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count()
	}),
	// TopologyTest.java, timeWindowNamedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.timeWindowNamedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count(describeNamedCount)
	}),
	// TopologyTest.java, timeWindowAnonymousMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.timeWindowAnonymousMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count(describeAnonymousCount)
	}),
	// TopologyTest.java, slidingWindowZeroArgCountShouldPreserveTopologyStructure
	// (despite its name, the Java test windows with TimeWindows).
	describeCase("TopologyTest.slidingWindowZeroArgCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count()
	}),
	// TopologyTest.java, slidingWindowNamedMaterializedCountShouldPreserveTopologyStructure
	// (TimeWindows too).
	describeCase("TopologyTest.slidingWindowNamedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count(describeNamedCount)
	}),
	// TopologyTest.java, sessionWindowZeroArgCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.sessionWindowZeroArgCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Sessions(time.Millisecond, 0)).Count()
	}),
	// TopologyTest.java, sessionWindowNamedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.sessionWindowNamedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Sessions(time.Millisecond, 0)).Count(describeNamedCount)
	}),
	// TopologyTest.java, sessionWindowAnonymousMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.sessionWindowAnonymousMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Sessions(time.Millisecond, 0)).Count(describeAnonymousCount)
	}),
	// TopologyTest.java, tableZeroArgCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.tableZeroArgCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").GroupBy(describeNullKey).Count()
	}),
	// TopologyTest.java, tableNamedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.tableNamedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").GroupBy(describeNullKey).Count(describeNamedCount)
	}),
	// TopologyTest.java, tableAnonymousMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.tableAnonymousMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").GroupBy(describeNullKey).Count(describeAnonymousCount)
	}),
	// TopologyTest.java, kTableNonMaterializedMapValuesShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableNonMaterializedMapValuesShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").MapValues(describeNullValue)
	}),
	// TopologyTest.java, kTableAnonymousMaterializedMapValuesShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableAnonymousMaterializedMapValuesShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").MapValues(describeNullValue, streams.Materialized(streams.StoreOptions{}))
	}),
	// TopologyTest.java, kTableNamedMaterializedMapValuesShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableNamedMaterializedMapValuesShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").MapValues(describeNullValue, streams.Materialized(streams.StoreOptions{Name: "store-name"}))
	}),
	// TopologyTest.java, kTableNonMaterializedFilterShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableNonMaterializedFilterShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").Filter(describeNone)
	}),
	// TopologyTest.java, kTableAnonymousMaterializedFilterShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableAnonymousMaterializedFilterShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").Filter(describeNone, streams.Materialized(streams.StoreOptions{}))
	}),
	// TopologyTest.java, kTableNamedMaterializedFilterShouldPreserveTopologyStructure.
	describeCase("TopologyTest.kTableNamedMaterializedFilterShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").Filter(describeNone, streams.Materialized(streams.StoreOptions{Name: "store-name"}))
	}),
)

