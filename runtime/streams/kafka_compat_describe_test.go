package streams_test

// The describe() part of the Kafka Streams port: topologies that Kafka's
// tests print with Topology.describe(), built with Braid's DSL and compared
// byte for byte with the text those tests assert (golden files in
// testdata/kafka/describe, named "<JavaClass>.<method>.txt").

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// describeCase registers a case that builds a topology and compares its
// Describe() with the golden file of the Java test kafka ("/" in the case
// name is "_" in the file's).
func describeCase(kafka string, build func(b *streams.Builder)) kafkaCase {
	return kafkaCase{Kafka: kafka, Area: "describe", Run: func(t *testing.T) {
		describeExpect(t, kafka, build)
	}}
}

// describeExpect builds the topology and compares its text with the golden
// file of the Java test.
func describeExpect(t *testing.T, kafka string, build func(b *streams.Builder)) {
	t.Helper()
	file := strings.ReplaceAll(kafka, "/", "_") + ".txt"
	raw, err := os.ReadFile(filepath.Join("testdata", "kafka", "describe", file))
	if err != nil {
		t.Fatalf("reading the golden file: %v", err)
	}
	if got, want := describeBuild(t, build), string(raw); got != want {
		t.Errorf("Describe() differs from the text %s asserts\n--- got\n%s--- want\n%s", kafka, got, want)
	}
}

// describeBuild builds a topology and returns its Describe().
func describeBuild(t *testing.T, build func(b *streams.Builder)) string {
	t.Helper()
	b := streams.NewBuilder()
	build(b)
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("building topology: %v", err)
	}
	return topo.Describe()
}

// describeRepartitionSink is the pattern Kafka's repartition-naming tests
// count repartition topics with.
var describeRepartitionSink = regexp.MustCompile(`Sink: .*-repartition`)

// describeTextCase registers a case for a Java test that asserts parts of
// the text only: how many repartition topics it has (when sinks >= 0) and
// that it contains each of contains.
func describeTextCase(kafka string, sinks int, build func(b *streams.Builder), contains ...string) kafkaCase {
	return kafkaCase{Kafka: kafka, Area: "describe", Run: func(t *testing.T) {
		text := describeBuild(t, build)
		if got := len(describeRepartitionSink.FindAllString(text, -1)); sinks >= 0 && got != sinks {
			t.Errorf("%d repartition topics, want %d:\n%s", got, sinks, text)
		}
		for _, c := range contains {
			if !strings.Contains(text, c) {
				t.Errorf("the text lacks %q:\n%s", c, text)
			}
		}
	}}
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
	// TopologyTest.java, kGroupedStreamAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure
	// (Braid has no store types: Materialized.as(StoreType) is a
	// Materialized without a name).
	describeCase("TopologyTest.kGroupedStreamAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().Count(streams.Materialized(streams.StoreOptions{}))
	}),
	// TopologyTest.java, timeWindowAnonymousStoreTypeMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.timeWindowAnonymousStoreTypeMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Tumbling(time.Millisecond, 0)).Count(streams.Materialized(streams.StoreOptions{}))
	}),
	// TopologyTest.java, sessionWindowAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.sessionWindowAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Stream([]string{"input-topic"}).GroupByKey().WindowedBy(streams.Sessions(time.Millisecond, 0)).Count(streams.Materialized(streams.StoreOptions{}))
	}),
	// TopologyTest.java, tableAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure.
	describeCase("TopologyTest.tableAnonymousStoreTypedMaterializedCountShouldPreserveTopologyStructure", func(b *streams.Builder) {
		b.Table("input-topic").GroupBy(describeNullKey).Count(streams.Materialized(streams.StoreOptions{}))
	}),
)

// describeIncremental builds the steps of StreamsGraphTest's
// shouldBeAbleToBuildTopologyIncrementally: the Java test describes one
// builder after each step; a Braid Builder builds once, so each case
// repeats the steps up to its own. JoinWindows.of(5 s) has a grace of
// 24 h minus the window.
func describeIncremental(steps int) func(b *streams.Builder) {
	return func(b *streams.Builder) {
		joined := b.Stream([]string{"topic"}).Join(b.Stream([]string{"other-topic"}), describeJoiner,
			streams.JoinTimeDifference(5*time.Second, 24*time.Hour-5*time.Second))
		if steps < 2 {
			return
		}
		filtered := joined.Filter(func(_, v any) (bool, error) { return v == "foo", nil })
		if steps < 3 {
			return
		}
		filtered.MapValues(func(v any) (any, error) { return v.(string) + "some value", nil }).To("output-topic")
	}
}

func describeKeyPlusValue(k, v any) (any, error) { return describeString(k) + describeString(v), nil }

func describeKeyOnly(k, _ any) (any, error) { return k, nil }

func describePair(k, v any) (any, any, error) { return k, v, nil }

func describeAll(any, any) (bool, error) { return true, nil }

func describeSame(v any) (any, error) { return v, nil }

func describeLatest(_, v any) (any, error) { return v, nil }

// describeGroupedTopic builds RepartitionTopicNamingTest's
// buildStreamGroupByKey{TimeWindows,SessionWindows,NoWindows}: a re-keyed
// stream, with filter and mapValues first when others, grouped by key or
// by a mapper under the Grouped name, windowed by windows (nil for none)
// and counted.
func describeGroupedTopic(name string, others, byKey bool, windows streams.Windows) func(b *streams.Builder) {
	return func(b *streams.Builder) {
		s := b.Stream([]string{"topic"}).SelectKey(describeKeyPlusValue)
		if others {
			s = s.Filter(describeAll).MapValues(describeSame)
		}
		var g *streams.GroupedStream
		if byKey {
			g = s.GroupByKey(streams.Named(name))
		} else {
			g = s.GroupBy(describeKeyOnly, streams.Named(name))
		}
		if windows == nil {
			g.Count()
			return
		}
		g.WindowedBy(windows).Count()
	}
}

// describeRepartitionNaming registers the two builds (without and with
// other operations before the grouping) of a RepartitionTopicNamingTest
// test that keeps the repartition topic's name.
func describeRepartitionNaming(kafka, topic string, byKey bool, windows streams.Windows) []kafkaCase {
	var cases []kafkaCase
	for _, others := range []bool{false, true} {
		suffix := "/plain"
		if others {
			suffix = "/other-operations"
		}
		cases = append(cases, describeTextCase(kafka+suffix, -1,
			describeGroupedTopic(strings.TrimSuffix(topic, "-repartition"), others, byKey, windows), "(topic: "+topic+")"))
	}
	return cases
}

var _ = port(
	// StreamsGraphTest.java, shouldBeAbleToBuildTopologyIncrementally, one
	// case per step.
	describeCase("StreamsGraphTest.shouldBeAbleToBuildTopologyIncrementally/joined", describeIncremental(1)),
	describeCase("StreamsGraphTest.shouldBeAbleToBuildTopologyIncrementally/filtered", describeIncremental(2)),
	describeCase("StreamsGraphTest.shouldBeAbleToBuildTopologyIncrementally/full", describeIncremental(3)),
	// StreamsGraphTest.java, shouldNotOptimizeWithValueOrKeyChangingOperatorsAfterInitialKeyChange:
	// with or without optimization (Braid has none), two repartition
	// topics.
	describeTextCase("StreamsGraphTest.shouldNotOptimizeWithValueOrKeyChangingOperatorsAfterInitialKeyChange", 2, func(b *streams.Builder) {
		keyed := b.Stream([]string{"input"}).SelectKey(describeKeyPlusValue)
		keyed.MapValues(describeSame).GroupByKey().Count().ToStream().To("output")
		keyed.FlatMapValues(func(v any) ([]any, error) { return []any{v}, nil }).GroupByKey().
			WindowedBy(streams.Tumbling(5*time.Second, 0)).Count().ToStream().To("windowed-output")
	}),
	// StreamsGraphTest.java, shouldNotOptimizeWhenRepartitionOperationIsDone.
	describeTextCase("StreamsGraphTest.shouldNotOptimizeWhenRepartitionOperationIsDone", 2, func(b *streams.Builder) {
		keyed := b.Stream([]string{"input"}).SelectKey(describeKeyPlusValue)
		keyed.Repartition().GroupByKey().Count().ToStream().To("output")
		keyed.Repartition().GroupByKey().WindowedBy(streams.Tumbling(5*time.Second, 0)).Count().ToStream().To("windowed-output")
	}),
	// RepartitionTopicNamingTest.java, shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedStream.
	describeTextCase("RepartitionTopicNamingTest.shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedStream", 1, func(b *streams.Builder) {
		g := b.Stream([]string{"topic"}).SelectKey(describeKeyOnly).GroupByKey(streams.Named("grouping"))
		g.WindowedBy(streams.Tumbling(10*time.Millisecond, 0)).Count().ToStream().To("output-one")
		g.WindowedBy(streams.Tumbling(30*time.Millisecond, 0)).Count().ToStream().To("output-two")
	}, "grouping-repartition"),
	// RepartitionTopicNamingTest.java, shouldNotFailWithSameRepartitionTopicNameUsingSameTimeWindowStream.
	describeTextCase("RepartitionTopicNamingTest.shouldNotFailWithSameRepartitionTopicNameUsingSameTimeWindowStream", 1, func(b *streams.Builder) {
		g := b.Stream([]string{"topic"}).SelectKey(describeKeyOnly).GroupByKey(streams.Named("grouping"))
		w := g.WindowedBy(streams.Tumbling(10*time.Millisecond, 0))
		w.Count().ToStream().To("output-one")
		w.Reduce(describeConcat).ToStream().To("output-two")
		g.WindowedBy(streams.Tumbling(30*time.Millisecond, 0)).Count().ToStream().To("output-two")
	}, "grouping-repartition"),
	// RepartitionTopicNamingTest.java, shouldNotFailWithSameRepartitionTopicNameUsingSameSessionWindowStream.
	describeTextCase("RepartitionTopicNamingTest.shouldNotFailWithSameRepartitionTopicNameUsingSameSessionWindowStream", 1, func(b *streams.Builder) {
		g := b.Stream([]string{"topic"}).SelectKey(describeKeyOnly).GroupByKey(streams.Named("grouping"))
		w := g.WindowedBy(streams.Sessions(10*time.Millisecond, 0))
		w.Count().ToStream().To("output-one")
		w.Reduce(describeConcat).ToStream().To("output-two")
		g.WindowedBy(streams.Tumbling(30*time.Millisecond, 0)).Count().ToStream().To("output-two")
	}, "grouping-repartition"),
	// RepartitionTopicNamingTest.java, shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedTable.
	describeTextCase("RepartitionTopicNamingTest.shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedTable", 1, func(b *streams.Builder) {
		g := b.Table("topic").GroupBy(describePair, streams.Named("grouping"))
		g.Count().ToStream().To("output-count")
		g.Reduce(describeLatest, describeLatest).ToStream().To("output-reduce")
	}, "grouping-repartition"),
	// RepartitionTopicNamingTest.java, shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopics.
	describeTextCase("RepartitionTopicNamingTest.shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopics", 2, func(b *streams.Builder) {
		g := b.Stream([]string{"topic"}).SelectKey(describeKeyOnly).GroupByKey()
		g.WindowedBy(streams.Tumbling(10*time.Millisecond, 0)).Count().ToStream().To("output-one")
		g.WindowedBy(streams.Tumbling(30*time.Millisecond, 0)).Count().ToStream().To("output-two")
	}),
	// RepartitionTopicNamingTest.java, shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopicsKGroupedTable.
	describeTextCase("RepartitionTopicNamingTest.shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopicsKGroupedTable", 2, func(b *streams.Builder) {
		g := b.Table("topic").GroupBy(describePair)
		g.Count().ToStream().To("output-count")
		g.Reduce(describeLatest, describeLatest).ToStream().To("output-reduce")
	}),
	// RepartitionTopicNamingTest.java, shouldKeepRepartitionTopicNameForJoins
	// (buildStreamJoin without and with other operations).
	describeTextCase("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForJoins/plain", -1, describeNamedJoin(false),
		"(topic: my-join-left-repartition)", "(topic: my-join-right-repartition)"),
	describeTextCase("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForJoins/other-operations", -1, describeNamedJoin(true),
		"(topic: my-join-left-repartition)", "(topic: my-join-right-repartition)"),
	// RepartitionTopicNamingTest.java, shouldKeepRepartitionNameForGroupByKTable
	// (buildKTableGroupBy without and with a filter first).
	describeTextCase("RepartitionTopicNamingTest.shouldKeepRepartitionNameForGroupByKTable/plain", -1, func(b *streams.Builder) {
		b.Table("topic").GroupBy(describePair, streams.Named("ktable-group-by")).Count()
	}, "(topic: ktable-group-by-repartition)"),
	describeTextCase("RepartitionTopicNamingTest.shouldKeepRepartitionNameForGroupByKTable/other-operations", -1, func(b *streams.Builder) {
		b.Table("topic").Filter(describeAll).GroupBy(describePair, streams.Named("ktable-group-by")).Count()
	}, "(topic: ktable-group-by-repartition)"),
)

// RepartitionTopicNamingTest.java, shouldKeepRepartitionTopicNameFor
// GroupBy{Key,}{TimeWindows,SessionWindows,NoWindows}. The Java
// buildStreamGroupByKeyTimeWindows counts without windows when grouping
// with a mapper; so does this port.
var _ = port(slices.Concat(
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupByKeyTimeWindows",
		"time-window-grouping-repartition", true, streams.Tumbling(10*time.Millisecond, 0)),
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupByTimeWindows",
		"time-window-grouping-repartition", false, nil),
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupByKeyNoWindows",
		"kstream-grouping-repartition", true, nil),
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupByNoWindows",
		"kstream-grouping-repartition", false, nil),
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupByKeySessionWindows",
		"session-window-grouping-repartition", true, streams.Sessions(10*time.Millisecond, 0)),
	describeRepartitionNaming("RepartitionTopicNamingTest.shouldKeepRepartitionTopicNameForGroupBySessionWindows",
		"session-window-grouping-repartition", false, streams.Sessions(10*time.Millisecond, 0)),
)...)

// describeNamedJoin is RepartitionTopicNamingTest's buildStreamJoin: two
// re-keyed streams (filtered and peeked first when others) joined under
// the name "my-join".
func describeNamedJoin(others bool) func(b *streams.Builder) {
	return func(b *streams.Builder) {
		side := func(topic string) *streams.Stream {
			s := b.Stream([]string{topic}).SelectKey(describeKeyPlusValue)
			if others {
				s = s.Filter(describeAll).Peek(func(any, any) {})
			}
			return s
		}
		side("topic-one").Join(side("topic-two"), describeJoiner, streams.JoinTimeDifference(time.Second, 0), streams.Named("my-join"))
	}
}

func describeConcat(a, v any) (any, error) { return describeString(a) + describeString(v), nil }

// describeNamesCase registers a StreamsBuilderTest case: the Java test
// lists the names of the topology's nodes (assertNamesForOperation) and
// sometimes of its stores (assertNamesForStateStore), in the order the
// nodes were added; Braid's Topology lists names without that order
// (OperatorSubtopologies), so the case compares them sorted.
func describeNamesCase(kafka string, build func(b *streams.Builder), nodes []string, stores ...string) kafkaCase {
	return kafkaCase{Kafka: kafka, Area: "describe", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		build(b)
		topo, err := b.Build()
		if err != nil {
			t.Fatalf("building topology: %v", err)
		}
		got := slices.Sorted(maps.Keys(topo.OperatorSubtopologies()))
		if want := slices.Sorted(slices.Values(nodes)); !slices.Equal(got, want) {
			t.Errorf("nodes %q, want %q", got, want)
		}
		if stores == nil {
			return
		}
		var gotStores []string
		for _, s := range topo.Stores() {
			gotStores = append(gotStores, s.Name)
		}
		slices.Sort(gotStores)
		if want := slices.Sorted(slices.Values(stores)); !slices.Equal(gotStores, want) {
			t.Errorf("stores %q, want %q", gotStores, want)
		}
	}}
}

// StreamsBuilderTest's topics and operator name.
const (
	describeStreamTopic    = "stream-topic"
	describeStreamTopicTwo = "stream-topic-two"
	describeOperation      = "stream-operation-name"
)

func describeMapPair(k, v any) (any, any, error) { return k, v, nil }

var _ = port(
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForStreamSourceProcessor.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForStreamSourceProcessor", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}, streams.Named("source-node"))
		b.Stream([]string{describeStreamTopicTwo})
	}, []string{"source-node", "KSTREAM-SOURCE-0000000001"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForTableSourceProcessor.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForTableSourceProcessor", func(b *streams.Builder) {
		b.Table(describeStreamTopic, streams.Named("source-node"))
		b.Table(describeStreamTopicTwo)
	}, []string{"source-node-source", "source-node", "KSTREAM-SOURCE-0000000004", "KTABLE-SOURCE-0000000005"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForSinkProcessor.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForSinkProcessor", func(b *streams.Builder) {
		s := b.Stream([]string{describeStreamTopic})
		s.To(describeStreamTopicTwo, streams.Named("sink-processor"))
		s.To(describeStreamTopicTwo)
	}, []string{"KSTREAM-SOURCE-0000000000", "sink-processor", "KSTREAM-SINK-0000000002"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForMapOperation.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForMapOperation", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).Map(describeMapPair, streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000000", describeOperation}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForMapValuesOperation.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForMapValuesOperation", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).MapValues(describeSame, streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000000", describeOperation}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForFilterOperation.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForFilterOperation", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).Filter(describeAll, streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000000", describeOperation}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForSplitOperation
	// (Branched.as("-1") is a Branch named "-1").
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForSplitOperation", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).Branch([]streams.Branch{
			{Name: "-1", Predicate: describeAll},
			{Name: "-2", Predicate: describeNone},
		}, streams.Named("branch-processor"))
	}, []string{"KSTREAM-SOURCE-0000000000", "branch-processor", "branch-processor-1", "branch-processor-2"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForJoinOperationBetweenKStreamAndKTable.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForJoinOperationBetweenKStreamAndKTable", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).JoinTable(b.Table("table-topic"), describeJoiner, streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000002", "KTABLE-SOURCE-0000000003", describeOperation}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForLeftJoinOperationBetweenKStreamAndKTable.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForLeftJoinOperationBetweenKStreamAndKTable", func(b *streams.Builder) {
		b.Stream([]string{describeStreamTopic}).LeftJoinTable(b.Table(describeStreamTopicTwo), describeJoiner, streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000002", "KTABLE-SOURCE-0000000003", describeOperation}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForMergeOperation.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForMergeOperation", func(b *streams.Builder) {
		b.Stream([]string{"topic-1"}).Merge(b.Stream([]string{"topic-2"}), streams.Named("merge-processor"))
	}, []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001", "merge-processor"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForToStream.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForToStream", func(b *streams.Builder) {
		b.Table(describeStreamTopic).ToStream(streams.Named("to-stream"))
	}, []string{"KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "to-stream"}),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForAggregateOperationGivenTable.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForAggregateOperationGivenTable", func(b *streams.Builder) {
		b.Table(describeStreamTopic).GroupBy(describeMapPair, streams.Named("group-operation")).Count(streams.Named(describeOperation))
	}, []string{"KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002", "group-operation",
		describeOperation + "-sink", describeOperation + "-source", describeOperation},
		describeStreamTopic+"-STATE-STORE-0000000000", "KTABLE-AGGREGATE-STATE-STORE-0000000004"),
)

// describeStreamJoin builds StreamsBuilderTest's stream-stream joins of
// stream-topic with stream-topic-two, named describeOperation
// (StreamJoined.withName) and, when stores, with the store name too
// (StreamJoined.as). JoinWindows.of(1 h) in the inner-join tests has a
// grace of 23 h; the others have none.
func describeStreamJoin(kind string, stores bool) func(b *streams.Builder) {
	return func(b *streams.Builder) {
		one, two := b.Stream([]string{describeStreamTopic}), b.Stream([]string{describeStreamTopicTwo})
		opts := []streams.Option{streams.Named(describeOperation)}
		if stores {
			opts = append(opts, streams.Materialized(streams.StoreOptions{Name: describeOperation}))
		}
		switch kind {
		case "join":
			one.Join(two, describeJoiner, streams.JoinTimeDifference(time.Hour, 23*time.Hour), opts...)
		case "left":
			one.LeftJoin(two, describeJoiner, streams.JoinTimeDifference(time.Hour, 0), opts...)
		default:
			one.OuterJoin(two, describeJoiner, streams.JoinTimeDifference(time.Hour, 0), opts...)
		}
	}
}

// describeJoinNodes are the nodes of describeStreamJoin, whose two join
// processors are named with the given parts ("this-join", "other-join").
func describeJoinNodes(this, other string) []string {
	return []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000001",
		describeOperation + "-this-windowed", describeOperation + "-other-windowed",
		describeOperation + "-" + this, describeOperation + "-" + other, describeOperation + "-merge"}
}

var _ = port(
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForLeftJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForLeftJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("left", true), describeJoinNodes("this-join", "outer-other-join"),
		describeOperation+"-this-join-store", describeOperation+"-outer-other-join-store", describeOperation+"-left-shared-join-store"),
	// StreamsBuilderTest.java, shouldUseGeneratedStoreNamesForLeftJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseGeneratedStoreNamesForLeftJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("left", false), describeJoinNodes("this-join", "outer-other-join"),
		"KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store", "KSTREAM-OUTERSHARED-0000000004-store"),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("join", true), describeJoinNodes("this-join", "other-join"),
		describeOperation+"-this-join-store", describeOperation+"-other-join-store"),
	// StreamsBuilderTest.java, shouldUseGeneratedNameForJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseGeneratedNameForJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("join", false), describeJoinNodes("this-join", "other-join"),
		"KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-JOINOTHER-0000000005-store"),
	// StreamsBuilderTest.java, shouldUseSpecifiedNameForOuterJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseSpecifiedNameForOuterJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("outer", true), describeJoinNodes("outer-this-join", "outer-other-join"),
		describeOperation+"-outer-this-join-store", describeOperation+"-outer-other-join-store", describeOperation+"-outer-shared-join-store"),
	// StreamsBuilderTest.java, shouldUseGeneratedStoreNamesForOuterJoinOperationBetweenKStreamAndKStream.
	describeNamesCase("StreamsBuilderTest.shouldUseGeneratedStoreNamesForOuterJoinOperationBetweenKStreamAndKStream",
		describeStreamJoin("outer", false), describeJoinNodes("outer-this-join", "outer-other-join"),
		"KSTREAM-OUTERTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store", "KSTREAM-OUTERSHARED-0000000004-store"),
)

func describeParseInt(v any) (any, error) {
	var n int
	_, err := fmt.Sscan(v.(string), &n)
	return n, err
}

func describeEven(_, v any) (bool, error) { return v.(int)%2 == 0, nil }

var _ = port(
	// KTableImplTest.java, testStateStoreLazyEval: two source tables and a
	// filter of a mapValues of one, none of them joined or grouped. Kafka
	// Streams has no state store at all; Braid keeps one per source table
	// (its table operators read the old values from it), which Describe
	// leaves out as Kafka Streams does and which is not cached.
	kafkaCase{Kafka: "KTableImplTest.testStateStoreLazyEval", Area: "table", Differs: "Unmaterialized tables keep a store", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		t1 := b.Table("topic1", streams.WithSerdes(streams.String, streams.String))
		b.Table("topic2", streams.WithSerdes(streams.String, streams.String))
		t1.MapValues(describeParseInt).Filter(describeEven)
		topo, err := b.Build()
		if err != nil {
			t.Fatalf("building topology: %v", err)
		}
		var got []string
		for _, s := range topo.Stores() {
			got = append(got, fmt.Sprintf("%s cached=%v", s.Name, s.Cached))
		}
		want := []string{"topic1-STATE-STORE-0000000000 cached=false", "topic2-STATE-STORE-0000000003 cached=false"}
		if !slices.Equal(got, want) {
			t.Errorf("stores %q, want %q", got, want)
		}
		if text := topo.Describe(); strings.Contains(text, "STATE-STORE") {
			t.Errorf("Describe lists a store Kafka Streams would not have:\n%s", text)
		}
	}},
	// KTableImplTest.java, shouldCreateSourceAndSinkNodesForRepartitioningTopic:
	// two groupings of one materialized table, each aggregated into a
	// named store, repartition through generated sinks and sources.
	describeTextCase("KTableImplTest.shouldCreateSourceAndSinkNodesForRepartitioningTopic", 2, func(b *streams.Builder) {
		t1 := b.Table("topic1", streams.WithSerdes(streams.String, streams.String),
			streams.Materialized(streams.StoreOptions{Name: "storeName1"}))
		t1.GroupBy(describePair).Aggregate(func() (any, error) { return "0", nil },
			func(_, v, agg any) (any, error) { return describeString(agg) + "+" + describeString(v), nil },
			func(_, v, agg any) (any, error) { return describeString(agg) + "-" + describeString(v), nil },
			streams.Materialized(streams.StoreOptions{Name: "mock-result1"}))
		t1.GroupBy(describePair).Reduce(describeConcat, describeConcat,
			streams.Materialized(streams.StoreOptions{Name: "mock-result2"}))
	}, "Sink: KSTREAM-SINK-0000000003 ", "Source: KSTREAM-SOURCE-0000000004 ", "Sink: KSTREAM-SINK-0000000007 ", "Source: KSTREAM-SOURCE-0000000008 ",
		"(stores: [storeName1])", "(stores: [mock-result1])", "(stores: [mock-result2])"),
)

// describeBuildFails registers a case for a Java test that expects the
// build to fail (a TopologyException); Braid's Build returns an error
// naming the topic.
func describeBuildFails(kafka, mention string, build func(b *streams.Builder)) kafkaCase {
	return kafkaCase{Kafka: kafka, Area: "describe", Run: func(t *testing.T) {
		b := streams.NewBuilder()
		build(b)
		_, err := b.Build()
		if err == nil || !strings.Contains(err.Error(), mention) {
			t.Errorf("Build() = %v, want an error mentioning %q", err, mention)
		}
	}}
}

var _ = port(
	// RepartitionTopicNamingTest.java, shouldFailWithSameRepartitionTopicName:
	// two groupings under one name would write one repartition topic.
	describeBuildFails("RepartitionTopicNamingTest.shouldFailWithSameRepartitionTopicName", `"grouping-repartition"`, func(b *streams.Builder) {
		b.Stream([]string{"topic"}).SelectKey(describeKeyOnly).GroupByKey(streams.Named("grouping")).Count().ToStream()
		b.Stream([]string{"topicII"}).SelectKey(describeKeyOnly).GroupByKey(streams.Named("grouping")).Count().ToStream()
	}),
	// RepartitionTopicNamingTest.java, shouldFailWithSameRepartitionTopicNameInJoin.
	describeBuildFails("RepartitionTopicNamingTest.shouldFailWithSameRepartitionTopicNameInJoin", `"join-repartition-right-repartition"`, func(b *streams.Builder) {
		one := b.Stream([]string{"topic"}).SelectKey(describeKeyOnly)
		two := b.Stream([]string{"topic2"}).SelectKey(describeKeyOnly)
		three := b.Stream([]string{"topic3"}).SelectKey(describeKeyOnly)
		opts := []streams.Option{streams.Named("join-repartition"), streams.Materialized(streams.StoreOptions{Name: "join-store"})}
		w := streams.JoinTimeDifference(30*time.Millisecond, 0)
		one.Join(two, describeJoiner, w, opts...).Join(three, describeJoiner, w, opts...)
	}),
)
