package streams_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// t0 is a window start (windows up to an hour long align to it: they align
// to the epoch) six to seven hours before the test runs: the records tests
// write after it stay in the past (Kafka refuses a timestamp more than an
// hour ahead of its clock, message.timestamp.after.max.ms) and within a
// day (see below). Not a fixed date: on
// Apache Kafka, records older than a topic's retention.ms are deleted by
// their timestamps (a windowed changelog keeps its windows' retention plus
// a day), and a segment whose first record is older than segment.ms rolls
// at once, so a test on records from years ago would see its changelogs
// emptied under it.
var t0 = time.Now().Add(-6 * time.Hour).Truncate(time.Hour).UnixMilli()

const readingKeys = 6

// windowTopology counts readings per key in tumbling 10 s windows with
// 5 s grace, emitting on close, and writes the results as JSON keys.
func windowTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"readings"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-window"})).
		ToStream().
		To("window-counts", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// produceReadings writes one reading per key at each offset (ms after t0).
func produceReadings(t testing.TB, b *brokertest.Cluster, offsets ...int64) {
	t.Helper()
	var recs []*kgo.Record
	for _, off := range offsets {
		for k := range readingKeys {
			recs = append(recs, &kgo.Record{Topic: "readings", Key: []byte(fmt.Sprintf("sensor-%d", k)),
				Value: []byte("r"), Timestamp: time.UnixMilli(t0 + off)})
		}
	}
	produce(t, b, recs...)
}

// windowLog records the window hooks.
type windowLog struct {
	mu     sync.Mutex
	closed []streams.WindowClosedEvent
	late   []streams.LateRecordEvent
}

func (l *windowLog) OnWindowClosed(e streams.WindowClosedEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = append(l.closed, e)
}

func (l *windowLog) OnLateRecordDropped(e streams.LateRecordEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.late = append(l.late, e)
}

func (l *windowLog) counts() (closed, late int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.closed), len(l.late)
}

// windowResults decodes the output: "sensor-k@start" to count, failing
// on a window that appears twice.
func windowResults(t *testing.T, recs []*kgo.Record) map[string]int64 {
	t.Helper()
	out := make(map[string]int64)
	for _, r := range recs {
		var k struct {
			Key   string `json:"key"`
			Start int64  `json:"start"`
			End   int64  `json:"end"`
		}
		if err := json.Unmarshal(r.Key, &k); err != nil {
			t.Fatalf("result key %q: %v", r.Key, err)
		}
		if k.End-k.Start != 10_000 {
			t.Errorf("result key %s: a window of %d ms, want 10000", r.Key, k.End-k.Start)
		}
		id := fmt.Sprintf("%s@%d", k.Key, k.Start-t0)
		if _, dup := out[id]; dup {
			t.Errorf("window %s emitted twice", id)
		}
		out[id] = int64(binary.BigEndian.Uint64(r.Value))
	}
	return out
}

func taskStreamTimes(app *streams.App) []int64 {
	var out []int64
	for _, task := range app.Stats().Tasks {
		if !task.Restoring {
			out = append(out, task.StreamTime)
		}
	}
	return out
}

func windowApp(t *testing.T, b *brokertest.Cluster, topo *streams.Topology, stateDir string, hooks ...streams.Hook) *streams.App {
	t.Helper()
	cfg := testConfig(b, "windows")
	cfg.StateDir = stateDir
	cfg.Hooks = hooks
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// TestWindowsSurviveFailoverAndRestart fills a window on one instance,
// moves it to an instance with an empty state dir (a restore from the
// changelog) and then restarts that one on its own state dir: stream time
// comes back with the state, so the window closes exactly once, with every
// record counted, and windows closed before a move are not emitted again.
func TestWindowsSurviveFailoverAndRestart(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "readings", 1)
	createTopic(t, b, "window-counts", 1)
	topo := windowTopology(t)

	first := windowApp(t, b, topo, t.TempDir())
	stopFirst := runApp(t, first)
	produceReadings(t, b, 1000, 2000, 12_000) // [0,10s) open until 15 s
	waitFor(t, 30*time.Second, "stream time 12 s", func() bool {
		st := taskStreamTimes(first)
		return len(st) == 1 && st[0] == t0+12_000
	})
	open, err := first.OpenWindows("per-window")
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 2 || open[0].Start != t0 || open[0].ClosesAt != t0+15_000 || open[0].Keys != readingKeys {
		t.Fatalf("open windows %+v, want [t0, t0+10s) closing at t0+15s with %d keys, then [t0+10s, t0+20s)", open, readingKeys)
	}
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}

	secondDir := t.TempDir()
	log := &windowLog{}
	second := windowApp(t, b, topo, secondDir, log)
	stopSecond := runApp(t, second)
	waitFor(t, 30*time.Second, "the restored task at stream time 12 s", func() bool {
		st := taskStreamTimes(second)
		return len(st) == 1 && st[0] == t0+12_000
	})
	// Out of order but within grace: counts. Then 16 s closes [0,10s).
	produceReadings(t, b, 9_000, 16_000)
	got := windowResults(t, consumeN(t, b, "window-counts", readingKeys, 30*time.Second))
	for k := range readingKeys {
		if c := got[fmt.Sprintf("sensor-%d@0", k)]; c != 3 {
			t.Errorf("sensor-%d in [0,10s): count %d, want 3 (1 s, 2 s and 9 s)", k, c)
		}
	}
	waitFor(t, 10*time.Second, "one close event", func() bool { c, _ := log.counts(); return c == 1 })
	ev := log.closed[0]
	if ev.Start != t0 || ev.End != t0+10_000 || ev.ClosesAt != t0+15_000 || ev.StreamTime != t0+16_000 || ev.Keys != readingKeys || !ev.Emitted {
		t.Errorf("close event %+v", ev)
	}

	// Late: [0,10s) closed at 15 s.
	produceReadings(t, b, 5_000)
	waitFor(t, 10*time.Second, "the late records counted", func() bool {
		for _, task := range second.Stats().Tasks {
			for _, s := range task.Stores {
				if s.Name == "per-window" && s.LateDrops == readingKeys {
					return true
				}
			}
		}
		return false
	})
	_, late := log.counts()
	if late != readingKeys || log.late[0].Timestamp != t0+5_000 || log.late[0].StreamTime != t0+16_000 || log.late[0].Offset < 0 {
		t.Errorf("%d late events, first %+v; want %d at 5 s, stream time 16 s, with an offset", late, log.late[0], readingKeys)
	}
	// Queries read committed state; [0,10s) is gone, dropped at its close
	// by the default retention (size + grace).
	var results []streams.WindowResult
	waitFor(t, 10*time.Second, "[10s,20s) committed with 2 readings", func() bool {
		results, err = second.FetchWindows("per-window", "sensor-0", t0, t0+20_000)
		return err == nil && len(results) == 1 && results[0].Value == int64(2)
	})
	if w := results[0]; w.Window.Start != t0+10_000 || w.Window.End != t0+20_000 || w.Timestamp != t0+16_000 {
		t.Errorf("FetchWindows: %+v, want [10s,20s) at 16 s", w)
	}
	// Open-ended: the scan stops at the last segment written.
	if all, err := second.FetchWindows("per-window", "sensor-0", 0, math.MaxInt64); err != nil || len(all) != 1 {
		t.Errorf("FetchWindows(0, MaxInt64) = %+v, %v; want the one window", all, err)
	}
	if err := stopSecond(); err != nil {
		t.Fatal(err)
	}

	// Restart on the same state dir: nothing to restore, nothing re-emitted.
	third := windowApp(t, b, topo, secondDir)
	runApp(t, third)
	produceReadings(t, b, 31_000) // closes [10s,20s)
	got = windowResults(t, consumeN(t, b, "window-counts", 2*readingKeys, 30*time.Second))
	if c := got["sensor-0@10000"]; c != 2 {
		t.Errorf("sensor-0 in [10s,20s): %d, want 2", c)
	}
	// Every reading committed: whatever they emit is in the output.
	waitFor(t, 30*time.Second, "every reading committed", func() bool { return allCommitted(t, b, "windows", "readings") })
	if n := sum(endOffsets(t, b, "window-counts")); n != 2*readingKeys {
		t.Errorf("%d results, want %d: a window was emitted twice", n, 2*readingKeys)
	}
}

// TestWindowChangelogIsCompactAndDelete checks the changelog topic config
// of a windowed store: compacted and deleted past the store's retention
// plus a day.
func TestWindowChangelogIsCompactAndDelete(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "readings", 1)
	createTopic(t, b, "window-counts", 1)
	app := windowApp(t, b, windowTopology(t), t.TempDir())
	runApp(t, app)
	waitFor(t, 30*time.Second, "the app running", func() bool { return app.State() == streams.Running })
	configs, err := admin(t, b).DescribeTopicConfigs(context.Background(), "windows-per-window-changelog")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On("windows-per-window-changelog", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact,delete", "retention.ms": strconv.Itoa(15_000 + 86_400_000)}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if c.MaybeValue() != w {
				t.Errorf("%s = %q, want %q", c.Key, c.MaybeValue(), w)
			}
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("configs missing: %v", want)
	}
}

// TestWindowSurvivesCrash kills an instance (a child process running this
// test binary) with SIGKILL in the middle of a window after it committed,
// and lets a new instance with an empty state dir take over: the window's
// final result comes out once, counting every record.
func TestWindowSurvivesCrash(t *testing.T) {
	if addr := os.Getenv("BRAID_CRASH_CHILD_BROKER"); addr != "" {
		runCrashChild(t, addr)
		return
	}
	if testing.Short() {
		t.Skip("waits for the killed member's session to time out")
	}
	b := startBroker(t)
	createTopic(t, b, "readings", 1)
	createTopic(t, b, "window-counts", 1)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWindowSurvivesCrash$")
	cmd.Env = append(os.Environ(), "BRAID_CRASH_CHILD_BROKER="+strings.Join(b.Addrs(), ","), "BRAID_CRASH_CHILD_STATE="+t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	produceReadings(t, b, 1000, 3000, 12_000)
	waitFor(t, 60*time.Second, "the child committing every reading", func() bool {
		return committedOffsets(t, b, "windows", "readings")[0] == 3*readingKeys
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	app := windowApp(t, b, windowTopology(t), t.TempDir())
	runApp(t, app)
	produceReadings(t, b, 8_000, 15_000)
	got := windowResults(t, consumeN(t, b, "window-counts", readingKeys, 60*time.Second))
	for k := range readingKeys {
		if c := got[fmt.Sprintf("sensor-%d@0", k)]; c != 3 {
			t.Errorf("sensor-%d in [0,10s): %d, want 3 (1 s, 3 s and 8 s)", k, c)
		}
	}
	waitFor(t, 30*time.Second, "every reading committed", func() bool { return allCommitted(t, b, "windows", "readings") })
	if n := sum(endOffsets(t, b, "window-counts")); n != readingKeys {
		t.Errorf("%d results, want %d", n, readingKeys)
	}
}

// runCrashChild is the instance TestWindowSurvivesCrash kills: it runs
// until killed.
func runCrashChild(t *testing.T, brokers string) {
	cfg := streams.Config{
		ApplicationID:  "windows",
		Brokers:        strings.Split(brokers, ","),
		StateDir:       os.Getenv("BRAID_CRASH_CHILD_STATE"),
		CommitInterval: 100 * time.Millisecond,
		SessionTimeout: 6 * time.Second,
		Logger:         testLogger(),
	}
	app, err := streams.New(windowTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
