package streams_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restoredCounter sums the changelog records the tasks replayed before
// their first record.
type restoredCounter struct{ n atomic.Int64 }

func (c *restoredCounter) OnTaskResumed(ev streams.TaskResumedEvent) { c.n.Add(ev.Restored) }

// TestExactlyOnceJoinReplaysOneRetention runs an inner join whose buffers
// keep 30 minutes (1 s windows, 30 min of grace) over three hours of
// event time, produced in phases of 10 minutes, each processed before the
// next is produced (so that no interleaving of the two inputs matters),
// and crashes it at each crash point of a commit in the 16th phase. The
// buffers live in memory, pebble holding neither them nor their commits:
// the restarted instance rebuilds them from the changelog, from the last
// commit before which every buffered record had expired, which is far
// less than the whole changelog. Read committed, every pair is joined
// exactly once.
func TestExactlyOnceJoinReplaysOneRetention(t *testing.T) {
	skipShort(t, "crashes an instance at every commit point")
	const (
		phases, crashPhase = 18, 15
		perPhase           = 60
		phaseMs            = 10 * 60_000
	)
	windows := streams.JoinWindows{Before: time.Second, After: time.Second, Grace: 30 * time.Minute}
	topology := func() *streams.Topology {
		b := streams.NewBuilder()
		b.Stream([]string{"jl"}).Join(b.Stream([]string{"jr"}), concat, windows).To("joined")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	for _, point := range []string{streams.CrashBeforeCommit, streams.CrashAfterCommit, streams.CrashDuringApply} {
		t.Run(point, func(t *testing.T) {
			b := startBroker(t)
			for _, topic := range []string{"jl", "jr", "joined"} {
				createTopic(t, b, topic, 2)
			}
			var want []string
			phase := func(p int) {
				var recs []*kgo.Record
				for i := range perPhase {
					key, ts := fmt.Sprintf("k%d", i%10), t0+int64(p*phaseMs+i*10_000)
					l, r := fmt.Sprintf("l%d_%d", p, i), fmt.Sprintf("r%d_%d", p, i)
					recs = append(recs,
						&kgo.Record{Topic: "jl", Key: []byte(key), Value: []byte(l), Timestamp: time.UnixMilli(ts)},
						&kgo.Record{Topic: "jr", Key: []byte(key), Value: []byte(r), Timestamp: time.UnixMilli(ts + 500)})
					want = append(want, fmt.Sprintf("%s=%s+%s", key, l, r))
				}
				produce(t, b, recs...)
			}
			dir := t.TempDir()
			first, err := streams.New(topology(), joinEOSConfig(b, dir))
			if err != nil {
				t.Fatal(err)
			}
			arm, done := runArmedToCrash(first, point)
			for p := range crashPhase {
				phase(p)
				joinProcessedAll(t, b)
			}
			arm()
			phase(crashPhase)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("no crash within 60 s")
			}
			buffered := 2 * perPhase * (crashPhase + 1)

			restored := &restoredCounter{}
			cfg := joinEOSConfig(b, dir)
			cfg.Hooks = append(cfg.Hooks, restored)
			second, err := streams.New(topology(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, second)
			joinProcessedAll(t, b)
			for p := crashPhase + 1; p < phases; p++ {
				phase(p)
				joinProcessedAll(t, b)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range readCommitted(t, b, "joined") {
				got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				missing, extra := diffSorted(want, got)
				t.Errorf("%d results, want %d: missing %q, not expected or repeated %q", len(got), len(want), missing, extra)
			}
			t.Logf("the restart replayed %d changelog records; the buffers' changelogs held about %d", restored.n.Load(), buffered)
			if n := restored.n.Load(); n == 0 || n > int64(buffered)/2 {
				t.Errorf("the restart replayed %d changelog records, want some and at most half of the %d buffered", n, buffered)
			}
		})
	}
}

// TestJoinBuffersMoveToStandbyAndBack moves join tasks away from an
// instance and back while their buffers hold records whose partners are
// still to come: a second instance takes some tasks (the first keeps
// standbys of them, from the snapshot its buffers wrote as they left),
// buffers more records, and stops; the first promotes its standbys, whose
// pebble followed the second's changelog, into buffers in memory again.
// Every pair is joined, across both moves.
func TestJoinBuffersMoveToStandbyAndBack(t *testing.T) {
	skipShort(t, "moves tasks between two instances")
	const app, perPhase = "joinmove", 40
	b := startBroker(t)
	for _, topic := range []string{"jl", "jr", "joined"} {
		createTopic(t, b, topic, 4)
	}
	windows := streams.JoinWindows{Before: time.Second, After: time.Second, Grace: time.Hour}
	start := func(instance string) (*streams.App, func() error) {
		t.Helper()
		bld := streams.NewBuilder()
		bld.Stream([]string{"jl"}).Join(bld.Stream([]string{"jr"}), concat, windows).To("joined")
		topo, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(b, app)
		cfg.InstanceID, cfg.StateDir, cfg.StandbyReplicas = instance, t.TempDir(), 1
		cfg.DefaultKeySerde, cfg.DefaultValueSerde = streams.String, streams.String
		a, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, runApp(t, a)
	}
	processedAll := func(what string) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() bool {
			for _, topic := range []string{"jl", "jr"} {
				got := committedOffsets(t, b, app, topic)
				for p, end := range endOffsets(t, b, topic) {
					if got[p] < end {
						return false
					}
				}
			}
			return true
		})
	}
	var want []string
	left := func(phase int) int64 { return t0 + int64(phase)*100_000 }
	// produce sends the left records of phase and the right partners of
	// the left records of the phase before.
	produceAll := func(phase int) {
		var recs []*kgo.Record
		for i := range perPhase {
			key := fmt.Sprintf("k%d", i)
			if phase < 2 {
				recs = append(recs, &kgo.Record{Topic: "jl", Key: []byte(key), Value: []byte(fmt.Sprintf("l%d_%d", phase, i)),
					Timestamp: time.UnixMilli(left(phase) + int64(i)*1000)})
			}
			if phase > 0 {
				l, r := fmt.Sprintf("l%d_%d", phase-1, i), fmt.Sprintf("r%d_%d", phase-1, i)
				recs = append(recs, &kgo.Record{Topic: "jr", Key: []byte(key), Value: []byte(r),
					Timestamp: time.UnixMilli(left(phase-1) + int64(i)*1000 + 500)})
				want = append(want, fmt.Sprintf("%s=%s+%s", key, l, r))
			}
		}
		produce(t, b, recs...)
	}

	first, stopFirst := start("a")
	produceAll(0)
	processedAll("the first phase processed")
	second, stopSecond := start("b")
	waitFor(t, 60*time.Second, "the second instance running tasks and the first keeping standbys of them", func() bool {
		return len(second.Stats().Tasks) > 0 && len(first.Stats().Standbys) > 0 && len(first.Stats().Suspended) == 0
	})
	moved := len(second.Stats().Tasks)
	produceAll(1)
	processedAll("the second phase processed")
	if err := stopSecond(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the first instance running every task again", func() bool {
		return len(first.Stats().Tasks) == 4
	})
	produceAll(2)
	processedAll("the third phase processed")
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	got := make(map[string]int)
	for _, r := range readCommitted(t, b, "joined") {
		got[fmt.Sprintf("%s=%s", r.Key, r.Value)]++
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Errorf("missing %s", w)
		}
		delete(got, w)
	}
	for extra := range got {
		t.Errorf("not expected: %s", extra)
	}
	t.Logf("%d tasks moved to the second instance and back; %d pairs joined", moved, len(want))
}

// runArmedToCrash runs app in the background, armed to crash at point
// once arm is called; done receives Run's error.
func runArmedToCrash(app *streams.App, point string) (arm func(), done <-chan error) {
	var mu sync.Mutex
	armed := false
	streams.SetCrashAt(app, func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		return armed && p == point
	})
	errc := make(chan error, 1)
	go func() { errc <- app.Run(context.Background()) }()
	return func() {
		mu.Lock()
		armed = true
		mu.Unlock()
	}, errc
}
