package streams_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The exactly-once topology: events counted per key (store "totals",
// output "event-totals") and per key in tumbling 1 s windows emitting
// final results (store "per-second", output "event-windows"), in one
// sub-topology, so that a task commits two stores.
const (
	eosPartitions = 2
	eosKeys       = 20
	// eosStep is the event time between two records: 50 records a second
	// of event time, so each window holds a few records of each key.
	eosStep = 20
)

func eosTopology(t *testing.T) *streams.Topology { return pacedEOSTopology(t, 0) }

// pacedEOSTopology is eosTopology taking pace to process each record, so
// that a test can act while an instance works through its input.
func pacedEOSTopology(t *testing.T, pace time.Duration) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	events := b.Stream([]string{"events"}, streams.WithSerdes(streams.String, streams.String))
	if pace > 0 {
		events = events.Peek(func(_, _ any) { time.Sleep(pace) })
	}
	grouped := events.GroupByKey()
	grouped.Count(streams.Materialized(streams.StoreOptions{Name: "totals"})).
		ToStream().
		To("event-totals", streams.WithSerdes(streams.String, streams.Int64))
	grouped.WindowedBy(streams.Tumbling(time.Second, 0)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-second"})).
		ToStream().
		To("event-windows", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// eosTruth is what the producer wrote: records per key, and per key and
// window start.
type eosTruth struct {
	mu      sync.Mutex
	next    int
	totals  map[string]int64
	windows map[string]int64
}

func newEOSTruth() *eosTruth {
	return &eosTruth{totals: map[string]int64{}, windows: map[string]int64{}}
}

// produce writes the next n events, key i%eosKeys at event time t0 +
// i*eosStep, and counts them.
func (tr *eosTruth) produce(t testing.TB, b *brokertest.Cluster, n int) {
	t.Helper()
	tr.mu.Lock()
	recs := make([]*kgo.Record, 0, n)
	for i := tr.next; i < tr.next+n; i++ {
		k, ts := fmt.Sprintf("key-%02d", i%eosKeys), t0+int64(i)*eosStep
		tr.totals[k]++
		tr.windows[fmt.Sprintf("%s@%d", k, ts-ts%1000)]++
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(k), Value: []byte("e"), Timestamp: time.UnixMilli(ts)})
	}
	tr.next += n
	tr.mu.Unlock()
	produce(t, b, recs...)
}

// closeWindows writes one record per key a minute of event time past the
// last: every window of the records before closes. Its own windows and
// its count are left out of the truth's windows, but not of its totals.
func (tr *eosTruth) closeWindows(t testing.TB, b *brokertest.Cluster) {
	tr.mu.Lock()
	ts := t0 + int64(tr.next)*eosStep + 60_000
	var recs []*kgo.Record
	for k := range eosKeys {
		key := fmt.Sprintf("key-%02d", k)
		tr.totals[key]++
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(key), Value: []byte("e"), Timestamp: time.UnixMilli(ts)})
	}
	tr.mu.Unlock()
	produce(t, b, recs...)
}

func startEOSBroker(t *testing.T) *brokertest.Cluster {
	b := startBroker(t)
	for _, topic := range []string{"events", "event-totals", "event-windows"} {
		createTopic(t, b, topic, eosPartitions)
	}
	return b
}

func eosConfig(b *brokertest.Cluster, stateDir string, hooks ...streams.Hook) streams.Config {
	cfg := testConfig(b, "eos")
	cfg.ProcessingGuarantee = streams.ExactlyOnce
	cfg.CommitInterval = 0 // the exactly-once default, 100 ms
	cfg.InstanceID = "eos-1"
	cfg.StateDir = stateDir
	cfg.Hooks = hooks
	return cfg
}

// readCommitted reads topic from the start to its last stable offset with
// a read-committed consumer.
func readCommitted(t *testing.T, b *brokertest.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ends, err := admin(t, b).ListCommittedOffsets(context.Background(), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offsets[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(want) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v; still to read to %v", topic, ctx.Err(), want)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				if !r.Attrs.IsControl() {
					out = append(out, r)
				}
				if r.Offset == end-1 {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out
}

// checkExactlyOnce reads both outputs read-committed and checks them
// against the truth: every key's totals rise by one at a time to its
// truth (the record cache may skip values, but never repeats or goes
// back), and every window's final result appears once and is right.
func checkExactlyOnce(t *testing.T, b *brokertest.Cluster, tr *eosTruth) {
	t.Helper()
	last := map[string]int64{}
	for _, r := range readCommitted(t, b, "event-totals") {
		k, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
		if n <= last[k] {
			t.Errorf("%s counted %d after %d: an update repeated or went back", k, n, last[k])
		}
		last[k] = n
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for k, n := range tr.totals {
		if last[k] != n {
			t.Errorf("%s: final count %d, want %d", k, last[k], n)
		}
	}
	got := map[string]int64{}
	for _, r := range readCommitted(t, b, "event-windows") {
		id := windowResultID(t, r)
		if _, dup := got[id]; dup {
			t.Errorf("window %s emitted twice", id)
		}
		got[id] = int64(binary.BigEndian.Uint64(r.Value))
	}
	for id, n := range tr.windows {
		if got[id] != n {
			t.Errorf("window %s: %d, want %d", id, got[id], n)
		}
	}
	if len(got) != len(tr.windows) {
		t.Errorf("%d window results, want %d", len(got), len(tr.windows))
	}
}

// windowResultID names a windowed result by its key and window start,
// "key@start", from its JSON key.
func windowResultID(t *testing.T, r *kgo.Record) string {
	t.Helper()
	var k struct {
		Key   string `json:"key"`
		Start int64  `json:"start"`
	}
	if err := json.Unmarshal(r.Key, &k); err != nil {
		t.Fatalf("result key %q: %v", r.Key, err)
	}
	return fmt.Sprintf("%s@%d", k.Key, k.Start)
}

// processedAll waits until the group committed every produced event.
func processedAll(t *testing.T, b *brokertest.Cluster) {
	t.Helper()
	waitFor(t, 60*time.Second, "every event committed", func() bool {
		ends := endOffsets(t, b, "events")
		got := committedOffsets(t, b, "eos", "events")
		for p, end := range ends {
			if got[p] < end {
				return false
			}
		}
		return true
	})
}

// crashAtNextCommit makes app crash at point in the first commit that
// begins after the returned arm is called. Not in one already under way:
// the commit that made processedAll true may still be between its end
// and its stores' checkpoint, and crashing there would leave no
// checkpoint to restore from.
func crashAtNextCommit(app *streams.App, point string) (arm func()) {
	var mu sync.Mutex
	armed, fresh := false, false
	streams.SetCrashAt(app, func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		if armed && p == streams.CrashBeforeCommit {
			fresh = true
		}
		return fresh && p == point
	})
	return func() {
		mu.Lock()
		armed = true
		mu.Unlock()
	}
}

// awaitCrash waits for the Run of an App armed to crash (done) to return.
func awaitCrash(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after the crash: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no crash within 60 s")
	}
}

// runAfterCrash runs the exactly-once topology again with cfg after a
// crash, through 1000 more events and the close of their windows, checks
// that the outputs hold every count exactly once, and returns its
// stores' restore starts and ends.
func runAfterCrash(t *testing.T, b *brokertest.Cluster, tr *eosTruth, cfg streams.Config) (starts, ends []streams.RestoreEvent) {
	t.Helper()
	restores := &restoreLog{}
	cfg.Hooks = append(cfg.Hooks, restores)
	second, err := streams.New(eosTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runApp(t, second)
	tr.produce(t, b, 1000)
	tr.closeWindows(t, b)
	processedAll(t, b)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, b, tr)
	starts, _, ends = restores.snapshot()
	return starts, ends
}

// TestExactlyOnceCrashPoints crashes an instance at each crash point of a
// commit (eos.go) once it has committed earlier work, and restarts it on
// the same state dir: its stores are never wiped (restores start at their
// checkpoints and replay only the committed tail), and the outputs, read
// committed, hold every count and window result exactly once.
func TestExactlyOnceCrashPoints(t *testing.T) {
	skipShort(t, "crashes an instance at every commit point")
	for _, point := range []string{streams.CrashBeforeCommit, streams.CrashAfterCommit, streams.CrashDuringApply} {
		t.Run(point, func(t *testing.T) {
			b := startEOSBroker(t)
			dir := t.TempDir()
			tr := newEOSTruth()
			tr.produce(t, b, 1000)

			first, err := streams.New(eosTopology(t), eosConfig(b, dir))
			if err != nil {
				t.Fatal(err)
			}
			arm := crashAtNextCommit(first, point)
			done := make(chan error, 1)
			go func() { done <- first.Run(context.Background()) }()
			processedAll(t, b)
			arm()
			tr.produce(t, b, 1000)
			awaitCrash(t, done)
			starts, ends := runAfterCrash(t, b, tr, eosConfig(b, dir))
			for _, ev := range starts {
				if ev.StartOffset == 0 {
					t.Errorf("store %s of task %s restored from offset 0: its state was wiped", ev.Store, ev.Task)
				}
			}
			replayed := map[string]int64{}
			for _, ev := range ends {
				replayed[ev.Store] += ev.Restored
				t.Logf("restored %s of task %s: %d records from offset %d", ev.Store, ev.Task, ev.Restored, ev.StartOffset)
			}
			switch point {
			case streams.CrashBeforeCommit:
				// The transaction was aborted: a restore reads past its
				// records and marker but applies none of them.
				if replayed["totals"]+replayed["per-second"] > 0 {
					t.Errorf("restored %v after a crash before the commit; the aborted transaction must not be replayed", replayed)
				}
			case streams.CrashAfterCommit:
				if replayed["totals"] == 0 || replayed["per-second"] == 0 {
					t.Errorf("replayed %v after a crash between the commit and the stores applying it; want both stores replayed", replayed)
				}
			case streams.CrashDuringApply:
				if len(ends) == 0 {
					t.Errorf("nothing replayed after a crash while the stores applied the commit")
				}
			}
		})
	}
}

// TestExactlyOnceFailoverCountsExactly crashes an instance of three under
// steady input, with standbys, and starts it again: at-least-once would
// count the records the crashed instance processed after its last commit
// twice; exactly-once counts each once, in the stores and in the output.
func TestExactlyOnceFailoverCountsExactly(t *testing.T) {
	g := startHAGroup(t, "eos-failover", 1, func(c *streams.Config) {
		c.ProcessingGuarantee = streams.ExactlyOnce
		c.CommitInterval = 0
	})
	victim := "instance-2"
	moved := g.activeOn(victim)
	if err := g.sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	for _, ev := range g.failovers(moved, 30*time.Second) {
		logFailover(t, ev)
	}
	if err := g.sup.Start(victim); err != nil {
		t.Fatal(err)
	}
	g.stopInput()
	g.truthMu.Lock()
	truth := g.truth
	g.truthMu.Unlock()
	var last map[string]int64
	waitFor(t, 60*time.Second, "every count equal to its truth", func() bool {
		last = g.counts()
		for user, n := range truth {
			if last[user] != n {
				return false
			}
		}
		return true
	})
	// Once the group settled, with the restarted instance back, and every
	// click committed, nothing is left to process: a count above its
	// truth would be a click counted twice.
	waitFor(t, 60*time.Second, "the group settled and every click committed", func() bool {
		return g.settled(1) && allCommitted(t, g.b, "eos-failover", "clicks")
	})
	for user, n := range g.counts() {
		if n != truth[user] {
			t.Errorf("%s: %d, want %d", user, n, truth[user])
		}
	}
	lastOut := map[string]int64{}
	for _, r := range readCommitted(t, g.b, "click-counts") {
		u, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
		if n <= lastOut[u] {
			t.Errorf("%s: output %d after %d", u, n, lastOut[u])
		}
		lastOut[u] = n
	}
	for user, n := range truth {
		if lastOut[user] != n {
			t.Errorf("%s: last output %d, want %d", user, lastOut[user], n)
		}
	}
}
