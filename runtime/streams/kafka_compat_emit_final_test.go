package streams_test

// The port of SuppressScenarioTest's final-results tests. Kafka's tests
// send one windowed count both raw and through
// suppress(untilWindowCloses(unbounded())); Braid has no suppress
// operator, and its Emit(EmitOnWindowClose) gives what that suppress
// gives: one result per window, when stream time closes it, at the
// largest timestamp of its records. So here the raw results come from a
// count emitting updates and the suppressed ones from a count emitting
// final results, over the same input. (The tests of suppress with time,
// record or byte limits have no Braid form and are not ported.)

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

const (
	emitFinalRaw        = "output-raw"
	emitFinalSuppressed = "output-suppressed"
)

// emitFinalCounts counts the input over windows twice, uncached: updates
// to output-raw and final results to output-suppressed.
func emitFinalCounts(t *testing.T, w streams.Windows, keys streams.Serde) *windowsDriver {
	b, g := windowsGrouped()
	g.WindowedBy(w).Count(windowsStore("counts", false)).ToStream().
		To(emitFinalRaw, streams.WithSerdes(keys, streams.Int64))
	g.WindowedBy(w).Emit(streams.EmitOnWindowClose).Count(windowsStore("final-counts", false)).ToStream().
		To(emitFinalSuppressed, streams.WithSerdes(keys, streams.Int64))
	return &windowsDriver{kafkaDriver: newKafkaDriver(t, b, streams.DriverConfig{}), keySerde: keys, valueSerde: streams.Int64}
}

// expectTopic compares what topic got since the last read with want.
func (w *windowsDriver) expectTopic(topic string, want ...string) {
	w.t.Helper()
	w.expect(topic, w.keySerde, w.valueSerde, want...)
}

var _ = port(
	// SuppressScenarioTest.java, shouldSupportFinalResultsForTimeWindows:
	// tumbling windows of 2ms with 1ms of grace; the last k1@0 comes after
	// stream time 5 closed [0,2).
	kafkaCase{Kafka: "SuppressScenarioTest.shouldSupportFinalResultsForTimeWindows", Area: "emit-final", Run: func(t *testing.T) {
		w := emitFinalCounts(t, streams.Tumbling(2*windowsMs, 1*windowsMs), windowsTimeKeys(2*windowsMs))
		w.in("k1:v1@0", "k1:v1@1", "k1:v1@2", "k1:v1@1", "k1:v1@0", "k1:v1@5", "k1:v1@0")
		w.expectTopic(emitFinalRaw, "[k1@0/2]:1@0", "[k1@0/2]:2@1", "[k1@2/4]:1@2", "[k1@0/2]:3@1",
			"[k1@0/2]:4@1", "[k1@4/6]:1@5")
		w.expectTopic(emitFinalSuppressed, "[k1@0/2]:4@1", "[k1@2/4]:1@2")
	}},
	// SuppressScenarioTest.java, shouldSupportFinalResultsForTimeWindowsWithLargeJump:
	// the jump to 30 closes [4,6) too.
	kafkaCase{Kafka: "SuppressScenarioTest.shouldSupportFinalResultsForTimeWindowsWithLargeJump", Area: "emit-final", Run: func(t *testing.T) {
		w := emitFinalCounts(t, streams.Tumbling(2*windowsMs, 2*windowsMs), windowsTimeKeys(2*windowsMs))
		w.in("k1:v1@0", "k1:v1@1", "k1:v1@2", "k1:v1@0", "k1:v1@3", "k1:v1@0", "k1:v1@4", "k1:v1@0", "k1:v1@30")
		w.expectTopic(emitFinalRaw, "[k1@0/2]:1@0", "[k1@0/2]:2@1", "[k1@2/4]:1@2", "[k1@0/2]:3@1",
			"[k1@2/4]:2@3", "[k1@0/2]:4@1", "[k1@4/6]:1@4", "[k1@30/32]:1@30")
		w.expectTopic(emitFinalSuppressed, "[k1@0/2]:4@1", "[k1@2/4]:2@3", "[k1@4/6]:1@4")
	}},
	// SuppressScenarioTest.java, shouldSupportFinalResultsForSlidingWindows:
	// the raw results sorted by key and then timestamp, as the Java test
	// sorts them.
	kafkaCase{Kafka: "SuppressScenarioTest.shouldSupportFinalResultsForSlidingWindows", Area: "emit-final", Run: func(t *testing.T) {
		w := emitFinalCounts(t, streams.Sliding(5*windowsMs, 15*windowsMs), windowsTimeKeys(5*windowsMs))
		w.in("k1:v1@10", "k1:v1@11", "k1:v1@10", "k1:v1@13", "k1:v1@10", "k1:v1@24", "k1:v1@5", "k1:v1@7", "k1:v1@90")
		raw := w.read(emitFinalRaw, w.keySerde, w.valueSerde)
		slices.SortStableFunc(raw, func(a, b string) int {
			ka, ta := emitFinalKeyAndTime(a)
			kb, tb := emitFinalKeyAndTime(b)
			return cmp.Or(cmp.Compare(ka, kb), cmp.Compare(ta, tb))
		})
		want := []string{"[k1@11/16]:1@11", "[k1@11/16]:2@13", "[k1@12/17]:1@13", "[k1@19/24]:1@24",
			"[k1@5/10]:1@10", "[k1@5/10]:2@10", "[k1@5/10]:3@10", "[k1@5/10]:4@10", "[k1@5/10]:5@10",
			"[k1@6/11]:2@11", "[k1@6/11]:3@11", "[k1@6/11]:4@11", "[k1@6/11]:5@11",
			"[k1@8/13]:4@13", "[k1@8/13]:5@13", "[k1@85/90]:1@90"}
		if !slices.Equal(raw, want) {
			t.Errorf("%s, sorted:\n got  %s\n want %s", emitFinalRaw, kafkaLines(raw), kafkaLines(want))
		}
		w.expectTopic(emitFinalSuppressed, "[k1@5/10]:5@10", "[k1@6/11]:5@11", "[k1@8/13]:5@13",
			"[k1@11/16]:2@13", "[k1@12/17]:1@13", "[k1@19/24]:1@24")
	}},
	// SuppressScenarioTest.java, shouldSupportFinalResultsForSessionWindows:
	// k1@1 falls inside the session [0,5], which is deleted (a tombstone)
	// and written again; k2@11 closes it, k1@5 comes late.
	kafkaCase{Kafka: "SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows", Area: "emit-final", Run: func(t *testing.T) {
		w := emitFinalCounts(t, streams.Sessions(5*windowsMs, 0), sessionKeys)
		w.in("k1:v1@0", "k1:v1@5", "k1:v1@1", "k2:v1@11", "k1:v1@5", "k1:v1@30")
		w.expectTopic(emitFinalRaw, "[k1@0/0]:1@0", "[k1@0/0]:null@0", "[k1@0/5]:2@5", "[k1@0/5]:null@5",
			"[k1@0/5]:3@5", "[k2@11/11]:1@11", "[k1@30/30]:1@30")
		w.expectTopic(emitFinalSuppressed, "[k1@0/5]:3@5", "[k2@11/11]:1@11")
	}},
)

// emitFinalKeyAndTime splits a "key:value@ts" line into its key and
// timestamp.
func emitFinalKeyAndTime(line string) (string, int64) {
	key, _, _ := strings.Cut(line, "]:")
	ts, _ := strconv.ParseInt(line[strings.LastIndex(line, "@")+1:], 10, 64)
	return key + "]", ts
}
