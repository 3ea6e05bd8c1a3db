package streams_test

// The port of Kafka Streams' KStreamWindowAggregateTest (but testJoin,
// which the port of timestamped tables covers): hopping windows, late
// records, null keys and final results. Kafka's tests that drive the
// processor alone run here through the DSL, which builds the same
// processor.

import (
	"path/filepath"
	"testing"

	"github.com/braidstream/braid/runtime/streams"
)

// windowAggBasicIn is testAggBasic's input: in order, then three records
// for [0,10) of B, two of them out of order.
var windowAggBasicIn = []string{
	"A:1@0", "B:2@1", "C:3@2", "D:4@3", "A:1@4",
	"A:1@5", "B:2@6", "D:4@7", "B:2@8", "C:3@9",
	"A:1@10", "B:2@11", "D:4@12", "B:2@13", "C:3@14",
	"B:1@3", "B:2@2", "B:3@9",
}

// windowAggBasic runs testAggBasic's topology: hopping windows of 10ms
// every 5ms with 100ms of grace, aggregated into strings.
func windowAggBasic(t *testing.T, final bool, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := g.WindowedBy(streams.Hopping(10*windowsMs, 5*windowsMs, 100*windowsMs)).Emit(windowsEmit(final)).
			Aggregate(windowsStringInit, windowsToStringAdder("+"), windowsStore("topic1-Canonized", cached))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in(windowAggBasicIn...)
		w.expectOut(want...)
	})
}

// windowAggProcessor runs the topology of the tests that drive
// KStreamWindowAggregate directly: hopping windows of 10ms every 5ms with
// 5ms of grace, aggregated into strings, the store uncached (the mock
// context forwards every update).
func windowAggProcessor(t *testing.T, final bool, stateDir string) *windowsDriver {
	b, g := windowsGrouped()
	table := g.WindowedBy(streams.Hopping(10*windowsMs, 5*windowsMs, 5*windowsMs)).Emit(windowsEmit(final)).
		Aggregate(windowsStringInit, windowsToStringAdder("+"), streams.Materialized(streams.StoreOptions{
			Name: "dummy-store-name", CachingDisabled: true, LoggingDisabled: true,
		}))
	table.ToStream().To(windowsOut, streams.WithSerdes(windowsTimeKeys(10*windowsMs), streams.String))
	return &windowsDriver{
		kafkaDriver: newKafkaDriver(t, b, streams.DriverConfig{StateDir: stateDir}),
		keySerde:    windowsTimeKeys(10 * windowsMs), valueSerde: streams.String,
	}
}

// windowExpired runs shouldLogAndMeterWhenSkippingExpiredWindow's
// topology: hopping windows of 10ms every 5ms with 90ms of grace and
// 100ms of retention.
func windowExpired(t *testing.T, final bool, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := g.WindowedBy(streams.Hopping(10*windowsMs, 5*windowsMs, 90*windowsMs)).Emit(windowsEmit(final)).
			Aggregate(func() (any, error) { return "", nil }, windowsToStringAdder("+"), streams.Materialized(streams.StoreOptions{
				Name: "topic1-Canonicalized", CachingDisabled: !cached, LoggingDisabled: true, Retention: 100 * windowsMs,
			}))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in("k:100@100", "k:0@0", "k:1@1", "k:2@2", "k:3@3", "k:4@4", "k:5@5", "k:6@6", "k:105@105", "k:106@106")
		// Seven (record, window) pairs were late: those of 0..6 in [0,10).
		if n := w.lateDrops(); n != 7 {
			t.Errorf("late drops: %d, want 7", n)
		}
		w.expectOut(want...)
	})
}

// windowExpiredByGrace runs shouldLogAndMeterWhenSkippingExpiredWindowByGrace:
// tumbling windows of 10ms with 90ms of grace.
func windowExpiredByGrace(t *testing.T, final bool, want ...string) {
	windowsCaches(t, func(t *testing.T, cached bool) {
		b, g := windowsGrouped()
		table := g.WindowedBy(streams.Hopping(10*windowsMs, 10*windowsMs, 90*windowsMs)).Emit(windowsEmit(final)).
			Aggregate(func() (any, error) { return "", nil }, windowsToStringAdder("+"), streams.Materialized(streams.StoreOptions{
				Name: "topic1-Canonicalized", CachingDisabled: !cached, LoggingDisabled: true,
			}))
		w := newWindowsDriver(t, b, table, windowsTimeKeys(10*windowsMs), streams.String)
		w.in("k:100@200", "k:0@100", "k:1@101", "k:2@102", "k:3@103", "k:4@104", "k:5@105", "k:6@6")
		if n := w.lateDrops(); n != 7 {
			t.Errorf("late drops: %d, want 7", n)
		}
		if !final {
			w.expectOut(want...)
		}
	})
}

var _ = port(
	// KStreamWindowAggregateTest.java, testAggBasic: every update, at the
	// largest timestamp of the window's records (B's late records leave
	// [0,10) at 8, then 9).
	kafkaCase{Kafka: "KStreamWindowAggregateTest.testAggBasic/emit-update", Area: "hopping", Run: func(t *testing.T) {
		windowAggBasic(t, false,
			"[A@0/10]:0+1@0", "[B@0/10]:0+2@1", "[C@0/10]:0+3@2", "[D@0/10]:0+4@3", "[A@0/10]:0+1+1@4",
			"[A@0/10]:0+1+1+1@5", "[A@5/15]:0+1@5",
			"[B@0/10]:0+2+2@6", "[B@5/15]:0+2@6",
			"[D@0/10]:0+4+4@7", "[D@5/15]:0+4@7",
			"[B@0/10]:0+2+2+2@8", "[B@5/15]:0+2+2@8",
			"[C@0/10]:0+3+3@9", "[C@5/15]:0+3@9",
			"[A@5/15]:0+1+1@10", "[A@10/20]:0+1@10",
			"[B@5/15]:0+2+2+2@11", "[B@10/20]:0+2@11",
			"[D@5/15]:0+4+4@12", "[D@10/20]:0+4@12",
			"[B@5/15]:0+2+2+2+2@13", "[B@10/20]:0+2+2@13",
			"[C@5/15]:0+3+3@14", "[C@10/20]:0+3@14",
			"[B@0/10]:0+2+2+2+1@8",
			"[B@0/10]:0+2+2+2+1+2@8",
			"[B@0/10]:0+2+2+2+1+2+3@9", "[B@5/15]:0+2+2+2+2+3@13")
	}},
	// KStreamWindowAggregateTest.java, testAggBasic, final: the grace of
	// 100ms closes no window.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.testAggBasic/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		windowAggBasic(t, true)
	}},
	// KStreamWindowAggregateTest.java, shouldLogAndMeterWhenSkippingNullKey:
	// skipped, counted and reported, with either strategy.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingNullKey", Area: "hopping", Run: func(t *testing.T) {
		for _, final := range []bool{false, true} {
			t.Run(windowsEmit(final).String(), func(t *testing.T) {
				b, g := windowsGrouped()
				g.WindowedBy(streams.Hopping(10*windowsMs, 5*windowsMs, 0)).Emit(windowsEmit(final)).
					Aggregate(windowsStringInit, windowsToStringAdder("+"), windowsStore("topic1-Canonicalized", false))
				skips := &windowsSkips{}
				w := newWindowsDriver(t, b, nil, nil, nil, skips)
				w.in("null:1@0")
				w.expectSkips(skips, streams.ErrNullKey, 0)
			})
		}
	}},
	// KStreamWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindow:
	// at stream time 100 the window [0,10) has closed (end + grace), so
	// 0..6 are late there; 5 and 6 still count in [5,15).
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow/emit-update", Area: "grace", Run: func(t *testing.T) {
		windowExpired(t, false,
			"[k@95/105]:+100@100", "[k@100/110]:+100@100",
			"[k@5/15]:+5@5", "[k@5/15]:+5+6@6",
			"[k@100/110]:+100+105@105", "[k@105/115]:+105@105",
			"[k@100/110]:+100+105+106@106", "[k@105/115]:+105+106@106")
	}},
	// KStreamWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindow,
	// final: stream time 105 closes [5,15).
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		windowExpired(t, true, "[k@5/15]:+5+6@6")
	}},
	// KStreamWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindowByGrace.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace/emit-update", Area: "grace", Run: func(t *testing.T) {
		windowExpiredByGrace(t, false, "[k@200/210]:+100@200")
	}},
	// KStreamWindowAggregateTest.java, shouldLogAndMeterWhenSkippingExpiredWindowByGrace,
	// final: the same seven drops (Kafka asserts no output here).
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace/emit-final", Area: "grace", Run: func(t *testing.T) {
		windowExpiredByGrace(t, true)
	}},
	// KStreamWindowAggregateTest.java, shouldNotEmitFinalIfNotProgressEnough.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldNotEmitFinalIfNotProgressEnough/emit-update", Area: "hopping", Run: func(t *testing.T) {
		w := windowAggProcessor(t, false, "")
		w.in("A:1@0", "B:2@5", "C:3@15")
		w.expectOut("[A@0/10]:0+1@0", "[B@0/10]:0+2@5", "[B@5/15]:0+2@5", "[C@10/20]:0+3@15", "[C@15/25]:0+3@15")
		w.in("D:4@15")
		w.expectOut("[D@10/20]:0+4@15", "[D@15/25]:0+4@15")
		w.in("E:5@19")
		w.expectOut("[E@10/20]:0+5@19", "[E@15/25]:0+5@19")
	}},
	// KStreamWindowAggregateTest.java, shouldNotEmitFinalIfNotProgressEnough,
	// final: stream time 15 closes [0,10); neither 15 again nor 19 closes
	// [5,15).
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldNotEmitFinalIfNotProgressEnough/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		w := windowAggProcessor(t, true, "")
		w.in("A:1@0", "B:2@5", "C:3@15")
		w.expectOut("[A@0/10]:0+1@0", "[B@0/10]:0+2@5")
		w.in("D:4@15")
		w.expectOut()
		w.in("E:5@19")
		w.expectOut()
	}},
	// KStreamWindowAggregateTest.java, shouldEmitWithInterval0.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldEmitWithInterval0/emit-update", Area: "hopping", Run: func(t *testing.T) {
		w := windowAggProcessor(t, false, "")
		w.in("A:1@0", "A:1@5", "B:2@10", "C:3@15", "D:4@20")
		w.expectOut("[A@0/10]:0+1@0", "[A@0/10]:0+1+1@5", "[A@5/15]:0+1@5",
			"[B@5/15]:0+2@10", "[B@10/20]:0+2@10", "[C@10/20]:0+3@15", "[C@15/25]:0+3@15",
			"[D@15/25]:0+4@20", "[D@20/30]:0+4@20")
	}},
	// KStreamWindowAggregateTest.java, shouldEmitWithInterval0, final:
	// the windows that stream times 15 and 20 close.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldEmitWithInterval0/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		w := windowAggProcessor(t, true, "")
		w.in("A:1@0", "A:1@5", "B:2@10", "C:3@15", "D:4@20")
		w.expectOut("[A@0/10]:0+1+1@5", "[A@5/15]:0+1@5", "[B@5/15]:0+2@10")
	}},
	// KStreamWindowAggregateTest.java, shouldEmitFromLastEmitTime: a new
	// processor over the same store (here a new driver over the same state
	// directory) goes on emitting updates.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldEmitFromLastEmitTime/emit-update", Area: "hopping", Run: func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		w := windowAggProcessor(t, false, dir)
		w.in("A:1@0", "B:2@5", "C:3@15")
		w.expectOut("[A@0/10]:0+1@0", "[B@0/10]:0+2@5", "[B@5/15]:0+2@5", "[C@10/20]:0+3@15", "[C@15/25]:0+3@15")
		windowsRestart(w)
		w = windowAggProcessor(t, false, dir)
		w.in("D:4@25")
		w.expectOut("[D@20/30]:0+4@25", "[D@25/35]:0+4@25")
	}},
	// KStreamWindowAggregateTest.java, shouldEmitFromLastEmitTime, final:
	// the new processor emits the windows closed since the last emit, not
	// those emitted before.
	kafkaCase{Kafka: "KStreamWindowAggregateTest.shouldEmitFromLastEmitTime/emit-final", Area: "emit-final", Run: func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		w := windowAggProcessor(t, true, dir)
		w.in("A:1@0", "B:2@5", "C:3@15")
		w.expectOut("[A@0/10]:0+1@0", "[B@0/10]:0+2@5")
		windowsRestart(w)
		w = windowAggProcessor(t, true, dir)
		w.in("D:4@25")
		w.expectOut("[B@5/15]:0+2@5", "[C@10/20]:0+3@15")
	}},
)

// windowsRestart closes w's driver, committed, so that a new one can open
// its state directory.
func windowsRestart(w *windowsDriver) {
	w.t.Helper()
	w.commit()
	if err := w.d.Close(); err != nil {
		w.t.Fatalf("closing test driver: %v", err)
	}
}
