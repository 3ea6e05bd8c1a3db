package streams

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// windowHarness drives one task of a windowed topology record by record,
// on real pebble stores without a broker: the stores log nothing, and the
// results are captured by a processor below the aggregation, with their
// timestamps. Results, late drops and closes go to one log, in order.
type windowHarness struct {
	t    *testing.T
	tk   *task
	log  []string
	next map[string]int64 // next offset per topic
}

// captureProc logs every record it gets as "out key=... start=... end=...
// value=... ts=...".
type captureProc struct{ log *[]string }

func (c captureProc) process(_ *task, r record) error {
	w := r.key.(Windowed)
	*c.log = append(*c.log, fmt.Sprintf("out key=%v start=%d end=%d value=%v ts=%d", w.Key, w.Start, w.End, r.value, r.timestamp))
	return nil
}

func (h *windowHarness) OnLateRecordDropped(e LateRecordEvent) {
	h.log = append(h.log, fmt.Sprintf("late start=%d end=%d", e.WindowStart, e.WindowEnd))
}

func (h *windowHarness) OnWindowClosed(e WindowClosedEvent) {
	h.log = append(h.log, fmt.Sprintf("closed start=%d end=%d at=%d keys=%d", e.Start, e.End, e.StreamTime, e.Keys))
}

// newWindowHarness builds task 0_0 of: streams of topics, merged, grouped
// by key, windowed by w, counted with caching and logging off, results
// captured. logCloses adds the window-closed events to the log.
func newWindowHarness(t *testing.T, w Windows, emit EmitStrategy, logCloses bool, topics ...string) *windowHarness {
	t.Helper()
	count := func(ws *WindowedStream, store Option) *Table { return ws.Count(store) }
	return newAggregateHarness(t, w, emit, logCloses, count, topics...)
}

// newAggregateHarness is newWindowHarness with the aggregation agg makes.
func newAggregateHarness(t *testing.T, w Windows, emit EmitStrategy, logCloses bool, agg func(*WindowedStream, Option) *Table, topics ...string) *windowHarness {
	t.Helper()
	h := &windowHarness{t: t, next: make(map[string]int64)}
	b := NewBuilder()
	s := b.Stream([]string{topics[0]}, WithSerdes(String, String))
	for _, topic := range topics[1:] {
		s = s.Merge(b.Stream([]string{topic}, WithSerdes(String, String)))
	}
	counts := agg(s.GroupByKey().WindowedBy(w).Emit(emit),
		Materialized(StoreOptions{Name: "counts", LoggingDisabled: true, CachingDisabled: true}))
	counts.ToStream().derive("Capture", "CAPTURE-", nil, func(string, []processor, *task) processor {
		return captureProc{&h.log}
	})
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	hooks := []Hook{lateOnly{h}}
	if logCloses {
		hooks = []Hook{h}
	}
	cfg := Config{ApplicationID: "windows", Brokers: []string{"unused:9092"}, StateDir: t.TempDir(), Hooks: hooks}.WithDefaults()
	a := &App{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), hooks: newHookSet(cfg.Hooks)}
	st := topo.subtopologies[0]
	if h.tk, err = a.newTask(st, TaskID{0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.tk.closeStores)
	for _, src := range st.sources {
		h.tk.addPartition(TopicPartition{src.topics[0], 0}, h.tk.sources[src])
	}
	if err := h.tk.start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// lateOnly passes on late drops but not closes.
type lateOnly struct{ h *windowHarness }

func (l lateOnly) OnLateRecordDropped(e LateRecordEvent) { l.h.OnLateRecordDropped(e) }

// push buffers records of key at the given timestamps on topic, without
// processing them.
func (h *windowHarness) push(topic, key string, timestamps ...int64) {
	var recs []*kgo.Record
	for _, ts := range timestamps {
		recs = append(recs, &kgo.Record{Topic: topic, Offset: h.next[topic], Timestamp: time.UnixMilli(ts), Key: []byte(key), Value: []byte("v")})
		h.next[topic]++
	}
	for _, q := range h.tk.queues {
		if q.tp.Topic == topic {
			q.push(recs)
		}
	}
}

// pipe processes one record, logging "# input" first.
func (h *windowHarness) pipe(key string, ts int64) {
	h.t.Helper()
	h.log = append(h.log, fmt.Sprintf("# input ts=%d", ts))
	h.push(h.tk.queues[0].tp.Topic, key, ts)
	if err := h.tk.processAvailable(); err != nil {
		h.t.Fatalf("processing %s@%d: %v", key, ts, err)
	}
}

// input is one record of a table case: a key and a timestamp.
type input struct {
	key string
	ts  int64
}

func inputs(key string, timestamps ...int64) []input {
	out := make([]input, len(timestamps))
	for i, ts := range timestamps {
		out[i] = input{key, ts}
	}
	return out
}

func checkLog(t *testing.T, got []string, want string) {
	t.Helper()
	var w []string
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			w = append(w, line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Errorf("got:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}

const ms = time.Millisecond

// TestWindowSemantics checks windowed counts record by record against
// expectations written from Kafka Streams' semantics.
func TestWindowSemantics(t *testing.T) {
	cases := []struct {
		name      string
		windows   Windows
		emit      EmitStrategy
		logCloses bool
		in        []input
		want      string
	}{{
		// The case from the Kafka Streams talk: window [100,110) with
		// grace 10 closes when stream time reaches 120.
		name: "talk/emit-final", windows: Tumbling(10*ms, 10*ms), emit: EmitOnWindowClose, logCloses: true,
		in: inputs("k", 100, 101, 102, 111, 112, 105, 120, 105),
		want: `
			# input ts=100
			# input ts=101
			# input ts=102
			# input ts=111
			# input ts=112
			// out of order, within grace: it counts
			# input ts=105
			// reaches 110 + 10: exactly one result, at the largest timestamp in the window
			# input ts=120
			out key=k start=100 end=110 value=4 ts=105
			closed start=100 end=110 at=120 keys=1
			// too late: dropped and counted
			# input ts=105
			late start=100 end=110`,
	}, {
		name: "talk/emit-updates", windows: Tumbling(10*ms, 10*ms),
		in: inputs("k", 100, 101, 102, 111, 112, 105, 120, 105),
		want: `
			# input ts=100
			out key=k start=100 end=110 value=1 ts=100
			# input ts=101
			out key=k start=100 end=110 value=2 ts=101
			# input ts=102
			out key=k start=100 end=110 value=3 ts=102
			# input ts=111
			out key=k start=110 end=120 value=1 ts=111
			# input ts=112
			out key=k start=110 end=120 value=2 ts=112
			# input ts=105
			out key=k start=100 end=110 value=4 ts=105
			# input ts=120
			out key=k start=120 end=130 value=1 ts=120
			# input ts=105
			late start=100 end=110`,
	}, {
		// size/advance = 10/5: each record lands in 2 windows; the older
		// one closes first, so a record can be late for one and count in
		// the other.
		name: "hopping", windows: Hopping(10*ms, 5*ms, 0), emit: EmitOnWindowClose,
		in: append(inputs("a", 12, 13), input{"b", 16}, input{"a", 14}, input{"c", 25}),
		want: `
			# input ts=12
			# input ts=13
			# input ts=16
			out key=a start=5 end=15 value=2 ts=13
			# input ts=14
			late start=5 end=15
			# input ts=25
			out key=a start=10 end=20 value=3 ts=14
			out key=b start=10 end=20 value=1 ts=16
			out key=b start=15 end=25 value=1 ts=16`,
	}, {
		name: "hopping/size-over-advance", windows: Hopping(10*ms, 2*ms, 0),
		in: inputs("a", 13),
		want: `
			# input ts=13
			out key=a start=4 end=14 value=1 ts=13
			out key=a start=6 end=16 value=1 ts=13
			out key=a start=8 end=18 value=1 ts=13
			out key=a start=10 end=20 value=1 ts=13
			out key=a start=12 end=22 value=1 ts=13`,
	}, {
		// Gap 5, grace 2: 6 bridges [0,3] and [9,9]; a session ending at
		// 9 closes when stream time passes 9 + 5 + 2 = 16.
		name: "session/emit-final", windows: Sessions(5*ms, 2*ms), emit: EmitOnWindowClose, logCloses: true,
		in: append(inputs("a", 0, 3, 9, 6), input{"b", 16}, input{"b", 17}, input{"a", 7}, input{"a", 25}),
		want: `
			# input ts=0
			# input ts=3
			# input ts=9
			# input ts=6
			# input ts=16
			# input ts=17
			out key=a start=0 end=9 value=4 ts=9
			closed start=0 end=9 at=17 keys=1
			// within the closed session, which is found no more (as in
			// Kafka Streams): its own session [7,7] is late
			# input ts=7
			late start=7 end=7
			// more than the gap after 9: a new session; and past 17 + 7,
			// which closes b's
			# input ts=25
			out key=b start=16 end=17 value=2 ts=17
			closed start=16 end=17 at=25 keys=1`,
	}, {
		name: "session/emit-updates", windows: Sessions(5*ms, 2*ms),
		in: inputs("a", 0, 3, 9, 6, 3),
		want: `
			# input ts=0
			out key=a start=0 end=0 value=1 ts=0
			# input ts=3
			out key=a start=0 end=0 value=<nil> ts=0
			out key=a start=0 end=3 value=2 ts=3
			# input ts=9
			out key=a start=9 end=9 value=1 ts=9
			# input ts=6
			out key=a start=0 end=3 value=<nil> ts=3
			out key=a start=9 end=9 value=<nil> ts=9
			out key=a start=0 end=9 value=4 ts=9
			// inside a session: a tombstone first, as in Kafka Streams
			# input ts=3
			out key=a start=0 end=9 value=<nil> ts=9
			out key=a start=0 end=9 value=5 ts=9`,
	}, {
		// Gap 5, no grace: [0,0] closed at stream time 6, so 5 finds
		// only [10,10]; Kafka Streams' store no longer returns [0,0]
		// (peer/difftest seed 17).
		name: "session/closed-not-merged", windows: Sessions(5*ms, 0),
		in: inputs("a", 0, 10, 5),
		want: `
			# input ts=0
			out key=a start=0 end=0 value=1 ts=0
			# input ts=10
			out key=a start=10 end=10 value=1 ts=10
			# input ts=5
			out key=a start=10 end=10 value=<nil> ts=10
			out key=a start=5 end=10 value=2 ts=10`,
	}, {
		// Not closed yet, but past Kafka Streams' store's retention (gap
		// plus grace behind the latest session end written, 5 by b's):
		// a@5 starts a session of its own.
		name: "session/past-store-retention", windows: Sessions(5*ms, 0),
		in: []input{{"a", 0}, {"b", 5}, {"a", 5}},
		want: `
			# input ts=0
			out key=a start=0 end=0 value=1 ts=0
			# input ts=5
			out key=b start=5 end=5 value=1 ts=5
			# input ts=5
			out key=a start=5 end=5 value=1 ts=5`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newWindowHarness(t, tc.windows, tc.emit, tc.logCloses, "in")
			for _, in := range tc.in {
				h.pipe(in.key, in.ts)
			}
			checkLog(t, h.log, tc.want)
		})
	}
}

// TestSlidingWindowsMatchKafkaStreams runs the input of the files in
// testdata/windows (see RULES.md there) in both emit strategies.
func TestSlidingWindowsMatchKafkaStreams(t *testing.T) {
	for _, tc := range []struct {
		file string
		emit EmitStrategy
	}{{"sliding-updates.txt", EmitOnWindowUpdate}, {"sliding-final.txt", EmitOnWindowClose}} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile("testdata/windows/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			h := newWindowHarness(t, Sliding(10*ms, 5*ms), tc.emit, false, "in")
			for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				if strings.HasPrefix(line, "# input ts=") {
					var ts int64
					fmt.Sscanf(line, "# input ts=%d", &ts)
					h.pipe("k", ts)
				}
				if !strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "# input") {
					want = append(want, line)
				}
			}
			checkLog(t, h.log, strings.Join(want, "\n"))
		})
	}
}

// TestStreamTimeIsPerTaskAcrossPartitions checks that a task reading two
// partitions takes records lowest timestamp first, so that a record
// buffered on the slower partition still counts, and closes windows by
// the largest timestamp it has processed from either.
func TestStreamTimeIsPerTaskAcrossPartitions(t *testing.T) {
	h := newWindowHarness(t, Tumbling(10*ms, 10*ms), EmitOnWindowClose, true, "a", "b")
	h.push("a", "k", 100, 121)
	h.push("b", "k", 105)
	if err := h.tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if h.tk.streamTime != 121 {
		t.Errorf("stream time %d, want 121", h.tk.streamTime)
	}
	h.push("b", "k", 106) // after stream time 121 closed [100,110)
	if err := h.tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	checkLog(t, h.log, `
		out key=k start=100 end=110 value=2 ts=105
		closed start=100 end=110 at=121 keys=1
		late start=100 end=110`)
}

// TestWindowedBuildErrors checks that Build names every mistake in
// windows and windowed stores at once.
func TestWindowedBuildErrors(t *testing.T) {
	b := NewBuilder()
	g := b.Stream([]string{"in"}).GroupByKey()
	g.WindowedBy(TimeWindows{Size: 0}).Count()
	g.WindowedBy(Hopping(10*ms, 20*ms, 0)).Count()
	g.WindowedBy(Tumbling(1500*time.Microsecond, -ms)).Count()
	g.WindowedBy(Sessions(10*ms, 0)).Aggregate(func() (any, error) { return 0, nil }, func(_, _, a any) (any, error) { return a, nil })
	g.WindowedBy(Tumbling(10*ms, 5*ms)).Count(Materialized(StoreOptions{Name: "short", Retention: 14 * ms}))
	g.Count(Materialized(StoreOptions{Name: "plain", Retention: time.Hour}))
	_, err := b.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	for _, want := range []string{
		"TimeWindows.Size 0s must be at least 1ms",
		"TimeWindows.Advance 20ms is larger than the size 10ms",
		"TimeWindows.Size 1.5ms is not a whole number of milliseconds",
		"TimeWindows.Grace -1ms is negative",
		"Aggregate over session windows: no Merger; call MergeSessionsWith",
		`store "short": retention 14ms is shorter than the windows stay open (15ms)`,
		`store "plain": Retention applies to windowed stores only`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build error lacks %q:\n%v", want, err)
		}
	}
}

// TestAggregatorReturningNilDeletesTheWindow checks that a windowed
// aggregate of nil removes the window's result, as in Kafka Streams, and
// that the next record starts the window afresh.
func TestAggregatorReturningNilDeletesTheWindow(t *testing.T) {
	agg := func(ws *WindowedStream, store Option) *Table {
		return ws.Aggregate(func() (any, error) { return "", nil }, func(_, _, a any) (any, error) {
			s := fmt.Sprintf("%s", a) // stored with the default (bytes) serde
			if s == "xx" {
				return nil, nil
			}
			return s + "x", nil
		}, store)
	}
	h := newAggregateHarness(t, Tumbling(10*ms, 0), EmitOnWindowUpdate, false, agg, "in")
	for _, ts := range []int64{1, 2, 3, 4} {
		h.pipe("k", ts)
	}
	checkLog(t, h.log, `
		# input ts=1
		out key=k start=0 end=10 value=x ts=1
		# input ts=2
		out key=k start=0 end=10 value=xx ts=2
		# input ts=3
		out key=k start=0 end=10 value=<nil> ts=3
		# input ts=4
		out key=k start=0 end=10 value=x ts=4`)
}
