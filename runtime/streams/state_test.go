package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ---- helpers for the state tests ----

// restoreLog keeps every restore event, progress included.
type restoreLog struct {
	mu                     sync.Mutex
	starts, progress, ends []streams.RestoreEvent
}

func (r *restoreLog) OnRestoreStart(e streams.RestoreEvent) {
	r.mu.Lock()
	r.starts = append(r.starts, e)
	r.mu.Unlock()
}

func (r *restoreLog) OnRestoreProgress(e streams.RestoreEvent) {
	r.mu.Lock()
	r.progress = append(r.progress, e)
	r.mu.Unlock()
}

func (r *restoreLog) OnRestoreEnd(e streams.RestoreEvent) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	r.mu.Unlock()
}

func (r *restoreLog) snapshot() (starts, progress, ends []streams.RestoreEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.starts), slices.Clone(r.progress), slices.Clone(r.ends)
}

func (r *restoreLog) ended() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ends)
}

// restored sums the records restores reported at their end.
func (r *restoreLog) restored() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, e := range r.ends {
		n += e.Restored
	}
	return n
}

// logCapture is a slog.Handler that keeps every message with its
// attributes as one line of text, for assertions on what the App logs.
type logCapture struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newLogCapture() *logCapture { return &logCapture{mu: &sync.Mutex{}, lines: new([]string)} }

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, sb.String())
	h.mu.Unlock()
	return nil
}

func (h *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{mu: h.mu, lines: h.lines, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// matching returns the captured lines that contain every one of subs.
func (h *logCapture) matching(subs ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range *h.lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// watchedRun is an App running in the background whose Run may fail or
// even panic: both are caught, so that a bug in the App fails one test
// instead of the whole test binary.
type watchedRun struct {
	app      *streams.App
	done     chan struct{}
	err      error
	panicked any
	stack    []byte
}

func runWatched(t testing.TB, app *streams.App) *watchedRun {
	t.Helper()
	w := &watchedRun{app: app, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer func() {
			if w.panicked = recover(); w.panicked != nil {
				w.stack = debug.Stack()
			}
		}()
		w.err = app.Run(context.Background())
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *watchedRun) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop closes the App and returns what Run returned; a panic becomes an
// error.
func (w *watchedRun) stop() error {
	if !w.exited() {
		w.app.Close()
	}
	<-w.done
	if w.panicked != nil {
		return fmt.Errorf("Run panicked: %v\n%s", w.panicked, w.stack)
	}
	return w.err
}

// wait waits for Run to return by itself.
func (w *watchedRun) wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(timeout):
		t.Fatalf("Run did not return by itself within %v", timeout)
	}
	return w.stop()
}

// eventually polls cond until it holds or timeout passes and says which.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func fromI64(t testing.TB, b []byte) int64 {
	t.Helper()
	if len(b) != 8 {
		t.Fatalf("value %x is not an int64", b)
	}
	return int64(binary.BigEndian.Uint64(b))
}

// topicConfig returns a topic's value of config name ("" if unset).
func topicConfig(t testing.TB, b *brokertest.Cluster, topic, name string) string {
	t.Helper()
	rcs, err := admin(t, b).DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatalf("describing the configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describing the configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}

// processed sums the Processed counters of the App's tasks.
func processed(app *streams.App) int64 {
	var n int64
	for _, ts := range app.Stats().Tasks {
		n += ts.Processed
	}
	return n
}

func (r *recorder) commitEvents() []streams.CommitEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.commits)
}

// consumeAll reads topic from the start until done says the records read
// so far are complete, failing after timeout.
func consumeAll(t testing.TB, b *brokertest.Cluster, topic string, timeout time.Duration, done func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	deadline := time.Now().Add(timeout)
	var out []*kgo.Record
	for !done(out) {
		if time.Now().After(deadline) {
			t.Fatalf("consuming %s: the %d records read in %v are not complete", topic, len(out), timeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("consuming %s/%d: %v", topic, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// newCountApp builds GroupByKey().Count() from "clicks" (String keys) into
// store "counts", written to "click-counts", and returns an App for it.
func newCountApp(t testing.TB, b *brokertest.Cluster, cfg streams.Config, store streams.StoreOptions) *streams.App {
	t.Helper()
	if store.Name == "" {
		store.Name = "counts"
	}
	builder := streams.NewBuilder()
	builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Named("counter"), streams.Materialized(store)).
		To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// clickRecords makes n records over users keys, "user-00"..., with
// timestamps base+i seconds.
func clickRecords(from, n, users int, base time.Time) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{
			Topic:     "clicks",
			Key:       fmt.Appendf(nil, "user-%02d", i%users),
			Value:     []byte("click"),
			Timestamp: base.Add(time.Duration(i) * time.Second),
		})
	}
	return recs
}

// countsAre reports whether the store holds want for every key.
func countsAre(app *streams.App, store string, want map[string]int64) bool {
	for k, n := range want {
		v, ok, err := app.Get(store, k)
		if err != nil || !ok || v.(int64) != n {
			return false
		}
	}
	return true
}

func uniformCounts(users int, n int64) map[string]int64 {
	want := make(map[string]int64, users)
	for u := range users {
		want[fmt.Sprintf("user-%02d", u)] = n
	}
	return want
}

// ---- 1. record cache ----

// TestRecordCacheDedupsBetweenCommits counts 1,000 clicks over 10 users
// between two commits. With the cache, the commit writes one record per
// user to the output and the changelog, each the full count; without it,
// every update goes out (counts 1..100 per user, in order). Queries read
// committed state only: before the commit they find nothing. The
// changelog is compacted with the input's partition count.
//
// The commit interval is an hour, so that the App commits only when it is
// stopped: every record is processed, and queried uncommitted, before the
// one commit, whatever the machine's speed. A second App on the same state
// then answers with the committed counts.
func TestRecordCacheDedupsBetweenCommits(t *testing.T) {
	const (
		records    = 1000
		users      = 10
		partitions = 3
		perUser    = records / users
	)
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			b := startBroker(t)
			createTopic(t, b, "clicks", partitions)
			createTopic(t, b, "click-counts", partitions)
			produce(t, b, clickRecords(0, records, users, time.UnixMilli(1_700_000_000_000))...)
			appID := fmt.Sprintf("cache-%v", cached)
			changelog := appID + "-counts-changelog"

			rec := &recorder{}
			cfg := testConfig(b, appID)
			cfg.StateDir = t.TempDir()
			cfg.CommitInterval = time.Hour
			cfg.Hooks = []streams.Hook{rec}
			app := newCountApp(t, b, cfg, streams.StoreOptions{CachingDisabled: !cached})
			stop := runApp(t, app)

			waitFor(t, 30*time.Second, "every record processed", func() bool { return processed(app) == records })
			if n := len(rec.commitEvents()); n != 0 {
				t.Fatalf("%d commits before the App was stopped, want none within the commit interval", n)
			}
			// The counts are in the cache or the uncommitted batch.
			for u := range users {
				user := fmt.Sprintf("user-%02d", u)
				if v, found, err := app.Get("counts", user); err != nil || found {
					t.Errorf("before the commit Get(%s) = %v, %v, %v; want nothing (queries read committed state)", user, v, found, err)
				}
			}
			if cached {
				if n := sum(endOffsets(t, b, changelog)); n != 0 {
					t.Errorf("before the commit the changelog holds %d records, want none: the cache holds every update", n)
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			commits := rec.commitEvents()
			if len(commits) != 1 {
				t.Fatalf("%d commits, want one, on stopping", len(commits))
			}
			var committed int64
			for _, off := range commits[0].Offsets {
				committed += off
			}
			if committed != records {
				t.Errorf("the commit covered %d records, want all %d", committed, records)
			}

			if cached {
				if n := sum(endOffsets(t, b, "click-counts")); n != users {
					t.Errorf("after the commit the output holds %d records, want %d (one per user)", n, users)
				}
				if n := sum(endOffsets(t, b, changelog)); n != users {
					t.Errorf("after the commit the changelog holds %d records, want %d (one per user)", n, users)
				}
				out := consumeN(t, b, "click-counts", users, 10*time.Second)
				for _, r := range out {
					if n := fromI64(t, r.Value); n != perUser {
						t.Errorf("output %s = %d, want the full count %d", r.Key, n, perUser)
					}
				}
			} else {
				out := consumeN(t, b, "click-counts", records, 10*time.Second)
				seqs := map[string][]int64{}
				for _, r := range out {
					seqs[string(r.Key)] = append(seqs[string(r.Key)], fromI64(t, r.Value))
				}
				want := make([]int64, perUser)
				for i := range want {
					want[i] = int64(i + 1)
				}
				if len(seqs) != users {
					t.Errorf("output has %d users, want %d", len(seqs), users)
				}
				for u, seq := range seqs {
					if !slices.Equal(seq, want) {
						t.Errorf("output for %s = %v, want 1..%d in order", u, seq, perUser)
					}
				}
				if n := sum(endOffsets(t, b, changelog)); n != records {
					t.Errorf("the changelog holds %d records, want %d, one per update", n, records)
				}
			}

			// The committed counts, from a second App on the same state.
			again := newCountApp(t, b, cfg, streams.StoreOptions{CachingDisabled: !cached})
			stopAgain := runApp(t, again)
			waitFor(t, 30*time.Second, "the committed counts", func() bool {
				return countsAre(again, "counts", uniformCounts(users, perUser))
			})
			if p := topicConfig(t, b, changelog, "cleanup.policy"); p != "compact" {
				t.Errorf("changelog %s has cleanup.policy %q, want compact", changelog, p)
			}
			if n := len(endOffsets(t, b, changelog)); n != partitions {
				t.Errorf("changelog %s has %d partitions, want the input's %d", changelog, n, partitions)
			}
			if err := stopAgain(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecordCacheEvictsWhenFull counts with a cache far smaller than the
// keys: rows are evicted between commits, in the order they became dirty,
// and still every count is right, each key's outputs increase to its
// count, and the changelog's last record of each key is its count.
func TestRecordCacheEvictsWhenFull(t *testing.T) {
	const (
		records = 1000
		users   = 50
	)
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	produce(t, b, clickRecords(0, records, users, time.UnixMilli(1_700_000_000_000))...)
	cfg := testConfig(b, "evict")
	cfg.StateDir = t.TempDir()
	cfg.CommitInterval = 500 * time.Millisecond
	cfg.CacheMaxBytes = 1000 // a few rows per task
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	stop := runApp(t, app)
	want := uniformCounts(users, records/users)
	waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	check := func(topic string) {
		n := int(sum(endOffsets(t, b, topic)))
		if n <= users {
			t.Errorf("%s holds %d records: with a cache of a few rows, evictions should send more than one per key", topic, n)
		}
		seqs := map[string][]int64{}
		for _, r := range consumeN(t, b, topic, n, 10*time.Second) {
			seqs[string(r.Key)] = append(seqs[string(r.Key)], fromI64(t, r.Value))
		}
		for k, c := range want {
			seq := seqs[k]
			if len(seq) == 0 || seq[len(seq)-1] != c || !slices.IsSorted(seq) || len(slices.Compact(slices.Clone(seq))) != len(seq) {
				t.Errorf("%s for %s = %v, want strictly increasing counts ending at %d", topic, k, seq, c)
			}
		}
	}
	check("click-counts")
	check("evict-counts-changelog")
}

// ---- 2. Reduce and Aggregate ----

// TestReduceAndAggregate sums int64 values with Reduce, and collects and
// sums values with Aggregate into JSON stores; it checks the stores
// through Get and the last output record of each key, whose serde defaults
// to the store's.
func TestReduceAndAggregate(t *testing.T) {
	const (
		keys    = 4
		perKey  = 25
		records = keys * perKey
	)
	type kv struct {
		key   string
		value int
	}
	var input []kv
	for i := range records {
		input = append(input, kv{fmt.Sprintf("k-%d", i%keys), i})
	}
	cases := []struct {
		name string
		// value encodes an input value.
		value func(i int) []byte
		build func(s *streams.Stream)
		// want is the expected aggregate of a key from its values.
		want func(values []int) any
		// decode decodes an output value.
		decode func(t *testing.T, b []byte) any
	}{
		{
			name:  "Reduce int64 sum",
			value: func(i int) []byte { return i64(int64(i)) },
			build: func(s *streams.Stream) {
				s.GroupByKey().
					Reduce(func(agg, v any) (any, error) { return agg.(int64) + v.(int64), nil },
						streams.Materialized(streams.StoreOptions{Name: "agg"})).
					To("out")
			},
			want: func(vs []int) any {
				var n int64
				for _, v := range vs {
					n += int64(v)
				}
				return n
			},
			decode: func(t *testing.T, b []byte) any { return fromI64(t, b) },
		},
		{
			name:  "Aggregate JSON list",
			value: func(i int) []byte { return i64(int64(i)) },
			build: func(s *streams.Stream) {
				s.GroupByKey().
					Aggregate(func() (any, error) { return []any{}, nil },
						func(_, v, agg any) (any, error) {
							return append(agg.([]any), fmt.Sprintf("v%d", v.(int64))), nil
						},
						streams.Materialized(streams.StoreOptions{Name: "agg", ValueSerde: streams.JSON})).
					To("out")
			},
			want: func(vs []int) any {
				out := []any{}
				for _, v := range vs {
					out = append(out, fmt.Sprintf("v%d", v))
				}
				return out
			},
			decode: func(t *testing.T, b []byte) any {
				v, err := streams.JSON.Deserialize("out", b)
				if err != nil {
					t.Fatal(err)
				}
				return v
			},
		},
		{
			name:  "Aggregate JSON sum",
			value: func(i int) []byte { return i64(int64(i)) },
			build: func(s *streams.Stream) {
				s.GroupByKey().
					Aggregate(func() (any, error) { return float64(0), nil },
						func(_, v, agg any) (any, error) {
							f, ok := agg.(float64)
							if !ok {
								return nil, fmt.Errorf("aggregate %v is a %T, not a JSON number", agg, agg)
							}
							return f + float64(v.(int64)), nil
						},
						streams.Materialized(streams.StoreOptions{Name: "agg", ValueSerde: streams.JSON})).
					To("out")
			},
			want: func(vs []int) any {
				var n float64
				for _, v := range vs {
					n += float64(v)
				}
				return n
			},
			decode: func(t *testing.T, b []byte) any {
				v, err := streams.JSON.Deserialize("out", b)
				if err != nil {
					t.Fatal(err)
				}
				return v
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t)
			createTopic(t, b, "in", 2)
			createTopic(t, b, "out", 2)
			want := map[string]any{}
			values := map[string][]int{}
			var recs []*kgo.Record
			// Two halves, so that the second half updates aggregates that
			// the first commit already wrote to pebble.
			half := func(from, to int) {
				recs = recs[:0]
				for _, r := range input[from:to] {
					recs = append(recs, &kgo.Record{Topic: "in", Key: []byte(r.key), Value: tc.value(r.value)})
				}
				produce(t, b, recs...)
			}
			for _, r := range input {
				values[r.key] = append(values[r.key], r.value)
			}
			for k, vs := range values {
				want[k] = tc.want(vs)
			}
			builder := streams.NewBuilder()
			tc.build(builder.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.Int64)))
			topo, err := builder.Build()
			if err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(b, fmt.Sprintf("agg-%d", i))
			cfg.StateDir = t.TempDir()
			app, err := streams.New(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, app)
			half(0, records/2)
			waitFor(t, 15*time.Second, "the first half committed", func() bool {
				return sum(committedOffsets(t, b, cfg.ApplicationID, "in")) == records/2
			})
			half(records/2, records)
			var got map[string]any
			if !eventually(15*time.Second, func() bool {
				got = map[string]any{}
				for k := range want {
					v, ok, err := app.Get("agg", k)
					if err != nil {
						t.Fatalf("Get(agg, %s): %v", k, err)
					}
					if ok {
						got[k] = v
					}
				}
				return reflect.DeepEqual(got, want)
			}) {
				t.Fatalf("store agg = %v, want %v", got, want)
			}
			last := map[string]any{}
			consumeAll(t, b, "out", 10*time.Second, func(rs []*kgo.Record) bool {
				for _, r := range rs {
					last[string(r.Key)] = tc.decode(t, r.Value)
				}
				return reflect.DeepEqual(last, want)
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ---- 4. interactive queries ----

// TestInteractiveQueries looks keys up and scans ranges of a running
// App's store, and asks for a store the topology does not have.
func TestInteractiveQueries(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	// user-0i clicks i+1 times.
	var recs []*kgo.Record
	want := map[string]int64{}
	for u := range 10 {
		k := fmt.Sprintf("user-%02d", u)
		want[k] = int64(u + 1)
		for range u + 1 {
			recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(k), Value: []byte("click")})
		}
	}
	produce(t, b, recs...)
	cfg := testConfig(b, "queries")
	cfg.StateDir = t.TempDir()
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	runApp(t, app)
	waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", want) })

	if v, found, err := app.Get("counts", "nobody"); err != nil || found {
		t.Errorf("Get(counts, nobody) = %v, %v, %v; want not found, no error", v, found, err)
	}
	users := func(from, to int) []string {
		var out []string
		for u := from; u < to; u++ {
			out = append(out, fmt.Sprintf("user-%02d", u))
		}
		return out
	}
	ranges := []struct {
		name     string
		from, to any
		want     []string
	}{
		{"all", nil, nil, users(0, 10)},
		{"bounded", "user-03", "user-06", users(3, 6)},
		{"from only", "user-07", nil, users(7, 10)},
		{"to only", nil, "user-02", users(0, 2)},
		{"bounds between keys", "user-03x", "user-05x", users(4, 6)},
		{"empty", "user-04", "user-04", nil},
		{"reversed", "user-06", "user-03", nil},
		{"beyond", "zzz", nil, nil},
	}
	for _, r := range ranges {
		t.Run("Range "+r.name, func(t *testing.T) {
			var got []string
			err := app.Range("counts", r.from, r.to, func(k, v any) bool {
				got = append(got, k.(string))
				if v.(int64) != want[k.(string)] {
					t.Errorf("Range gave %v = %v, want %d", k, v, want[k.(string)])
				}
				return true
			})
			if err != nil {
				t.Fatalf("Range(%v, %v): %v", r.from, r.to, err)
			}
			slices.Sort(got) // key order holds within a task only
			if !slices.Equal(got, r.want) {
				t.Errorf("Range(%v, %v) = %v, want %v", r.from, r.to, got, r.want)
			}
		})
	}
	t.Run("Range stops when fn says so", func(t *testing.T) {
		calls := 0
		if err := app.Range("counts", nil, nil, func(any, any) bool { calls++; return false }); err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Errorf("fn was called %d times after returning false, want 1", calls)
		}
	})
	t.Run("key of the wrong type", func(t *testing.T) {
		if _, _, err := app.Get("counts", 42); err == nil {
			t.Error("Get with an int key of a String store gave no error")
		}
		if err := app.Range("counts", 1, nil, func(any, any) bool { return true }); err == nil {
			t.Error("Range with an int bound of a String store gave no error")
		}
	})
	t.Run("unknown store", func(t *testing.T) {
		if _, _, err := app.Get("no-such-store", "user-01"); !errors.Is(err, streams.ErrUnknownStore) {
			t.Errorf("Get on an unknown store: %v, want ErrUnknownStore", err)
		}
		err := app.Range("no-such-store", nil, nil, func(any, any) bool { return true })
		if !errors.Is(err, streams.ErrUnknownStore) {
			t.Errorf("Range on an unknown store: %v, want ErrUnknownStore", err)
		}
	})
}

// TestQueryWhileRestoring starts an App on an empty state dir over a
// changelog of 200,000 updates of 100,000 keys and queries it while a task
// restores: Get says *StoreNotReadyError naming the store and the task;
// afterwards every row is right. The changelog is written directly, as the
// App would have (String keys, Int64 counts, keys in the partitions of
// their input), which is faster than counting 200,000 records under the
// race detector. The first restore's start hook holds that restore until
// the query has been made, so the query meets a restore however fast the
// machine restores.
func TestQueryWhileRestoring(t *testing.T) {
	const (
		keys    = 100_000
		updates = 200_000
		appID   = "restoring"
	)
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	changelog := appID + "-counts-changelog"
	resp, err := admin(t, b).CreateTopic(context.Background(), 2, -1, map[string]*string{"cleanup.policy": ptr("compact")}, changelog)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, 0, updates)
	for i := range updates {
		recs = append(recs, &kgo.Record{Topic: changelog, Key: fmt.Appendf(nil, "k-%06d", i%keys), Value: i64(int64(i/keys + 1))})
	}
	began := time.Now()
	produce(t, b, recs...)
	recs = nil
	t.Logf("produced the changelog in %v", time.Since(began))
	began = time.Now()

	rl := &heldRestore{held: make(chan streams.RestoreEvent, 1), release: make(chan struct{})}
	cfg := testConfig(b, appID)
	cfg.StateDir = t.TempDir()
	cfg.Hooks = []streams.Hook{rl}
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	runApp(t, app)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(rl.release) }) }
	t.Cleanup(release) // before the App's stop, which waits for the restore

	var held streams.RestoreEvent
	select {
	case held = <-rl.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no restore started")
	}
	// A key no task has asks every task: the held one is restoring.
	_, _, err = app.Get("counts", "no-such-key")
	var notReady *streams.StoreNotReadyError
	if !errors.As(err, &notReady) {
		t.Fatalf("Get while task %s restores = %v, want a *StoreNotReadyError", held.Task, err)
	}
	if notReady.Store != "counts" {
		t.Errorf("StoreNotReadyError.Store = %q, want counts", notReady.Store)
	}
	restoring := false
	for _, ts := range app.Stats().Tasks {
		restoring = restoring || ts.ID == notReady.Task && ts.Restoring
	}
	if !restoring {
		t.Errorf("StoreNotReadyError.Task = %v, which is not restoring (task %s is held restoring)", notReady.Task, held.Task)
	}
	if msg := notReady.Error(); !strings.Contains(msg, "counts") || !strings.Contains(msg, notReady.Task.String()) {
		t.Errorf("StoreNotReadyError says %q, which does not name the store and the task", msg)
	}
	release()

	waitFor(t, 30*time.Second, "every task restored", func() bool {
		_, _, err := app.Get("counts", "no-such-key")
		if errors.As(err, &notReady) {
			return false
		}
		if err != nil {
			t.Fatalf("Get during the restore: %v, want a *StoreNotReadyError", err)
		}
		return true
	})
	t.Logf("restored in %v", time.Since(began))
	rows, bad := 0, 0
	err = app.Range("counts", nil, nil, func(k, v any) bool {
		rows++
		if v.(int64) != updates/keys {
			bad++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows != keys || bad != 0 {
		t.Errorf("after the restore the store has %d rows, %d of them wrong; want %d rows of %d", rows, bad, keys, updates/keys)
	}
	_, _, ends := rl.snapshot()
	var restored int64
	for _, e := range ends {
		restored += e.Restored
	}
	if restored != updates {
		t.Errorf("restore end events report %d records, want %d", restored, updates)
	}
}

func ptr[T any](v T) *T { return &v }

// heldRestore is a restoreLog whose first restore start sends its event on
// held and blocks that restore until release is closed.
type heldRestore struct {
	restoreLog
	once    sync.Once
	held    chan streams.RestoreEvent
	release chan struct{}
}

func (h *heldRestore) OnRestoreStart(e streams.RestoreEvent) {
	h.restoreLog.OnRestoreStart(e)
	h.once.Do(func() {
		h.held <- e
		<-h.release
	})
}

// ---- 5. restore hooks and stream time ----

// TestRestoreHooksAndStreamTime counts, stops, and starts again with the
// state dir kept and with an empty one. The empty one restores each task's
// store from the whole changelog, reporting start (0 to the partition's
// end offset), progress and end events; the counts come back, and so does
// each task's stream time, which is part of the state.
func TestRestoreHooksAndStreamTime(t *testing.T) {
	const (
		records = 600
		users   = 12
		appID   = "hooks"
	)
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	base := time.UnixMilli(1_700_000_000_000)
	recs := clickRecords(0, records, users, base)
	produce(t, b, recs...)
	maxTS := map[int32]int64{}
	for _, r := range recs {
		maxTS[r.Partition] = max(maxTS[r.Partition], r.Timestamp.UnixMilli())
	}
	changelog := appID + "-counts-changelog"
	stateDir := t.TempDir()
	cfg := testConfig(b, appID)
	cfg.StateDir = stateDir
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	stop := runApp(t, app)
	want := uniformCounts(users, records/users)
	waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", want) })
	streamTimes := func(app *streams.App) map[int32]int64 {
		out := map[int32]int64{}
		for _, ts := range app.Stats().Tasks {
			out[ts.ID.Partition] = ts.StreamTime
		}
		return out
	}
	waitFor(t, 10*time.Second, "stream time at the last record of each partition", func() bool {
		return reflect.DeepEqual(streamTimes(app), maxTS)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, b, changelog)

	for _, tc := range []struct {
		name     string
		stateDir string
		restore  bool
	}{
		{"kept state dir", stateDir, false},
		{"empty state dir", t.TempDir(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl := &restoreLog{}
			cfg := cfg
			cfg.StateDir = tc.stateDir
			cfg.Hooks = []streams.Hook{rl}
			app := newCountApp(t, b, cfg, streams.StoreOptions{})
			stop := runApp(t, app)
			// Get answers once no task restores, and a task's stream
			// time is set when its restore ends.
			waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", want) })
			if tc.restore {
				waitFor(t, 5*time.Second, "two restore end events", func() bool { return rl.ended() == 2 })
			}
			var got map[int32]int64
			if !eventually(2*time.Second, func() bool { got = streamTimes(app); return reflect.DeepEqual(got, maxTS) }) {
				t.Errorf("stream time per partition after the restart = %v, want %v as before it: stream time is part of the state and must come back with it", got, maxTS)
			}
			starts, progress, endEvents := rl.snapshot()
			if !tc.restore {
				if len(starts)+len(progress)+len(endEvents) != 0 {
					t.Errorf("a clean restart with the state dir kept restored: %d start, %d progress, %d end events", len(starts), len(progress), len(endEvents))
				}
			} else {
				checkRestoreEvents(t, appID, "counts", ends, starts, progress, endEvents)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkRestoreEvents checks a restore of store from the start of every
// partition of its changelog, whose end offsets are ends: one start and
// one end per task, progress in between.
func checkRestoreEvents(t *testing.T, appID, store string, ends map[int32]int64, starts, progress, endEvents []streams.RestoreEvent) {
	t.Helper()
	changelog := appID + "-" + store + "-changelog"
	byPartition := func(evs []streams.RestoreEvent, what string) map[int32]streams.RestoreEvent {
		out := map[int32]streams.RestoreEvent{}
		for _, e := range evs {
			if _, dup := out[e.Partition]; dup {
				t.Errorf("two %s events for partition %d", what, e.Partition)
			}
			out[e.Partition] = e
		}
		if len(out) != len(ends) {
			t.Errorf("%s events for partitions %v, want one for each of the %d changelog partitions", what, slices.Sorted(maps.Keys(out)), len(ends))
		}
		return out
	}
	s, e := byPartition(starts, "start"), byPartition(endEvents, "end")
	for p, end := range ends {
		for what, ev := range map[string]streams.RestoreEvent{"start": s[p], "end": e[p]} {
			wantTask := streams.TaskID{Subtopology: 0, Partition: p}
			if ev.Task != wantTask || ev.Store != store || ev.Changelog != changelog || ev.Partition != p || ev.ApplicationID != appID {
				t.Errorf("%s event %+v, want task %v store %s changelog %s partition %d", what, ev, wantTask, store, changelog, p)
			}
			if ev.StartOffset != 0 || ev.EndOffset != end {
				t.Errorf("%s event of partition %d restores [%d, %d), want [0, %d)", what, p, ev.StartOffset, ev.EndOffset, end)
			}
		}
		if e[p].Restored != end {
			t.Errorf("end event of partition %d: Restored = %d, want end-start = %d", p, e[p].Restored, end)
		}
		var last int64
		n := 0
		for _, ev := range progress {
			if ev.Partition != p {
				continue
			}
			n++
			if ev.Restored < last {
				t.Errorf("progress of partition %d went back from %d to %d", p, last, ev.Restored)
			}
			last = ev.Restored
		}
		if end > 0 && (n == 0 || last != end) {
			t.Errorf("partition %d: %d progress events, the last at %d records; want at least one, the last at %d", p, n, last, end)
		}
	}
}

// ---- 6. bad input ----

// TestAggregatorError feeds an Aggregate 11 records of which the one at
// offset 5 makes the aggregator fail. FailOnError stops the App with the
// record named and everything before it committed, state included: a
// restart that skips the record ends with the exact sum. LogAndContinue
// skips it.
func TestAggregatorError(t *testing.T) {
	const (
		n   = 11
		bad = 5
	)
	agg := func(_, v, agg any) (any, error) {
		if v.(int64) == bad {
			return nil, fmt.Errorf("value %d: %w", bad, errBoom)
		}
		return agg.(int64) + v.(int64), nil
	}
	newApp := func(t *testing.T, b *brokertest.Cluster, cfg streams.Config) *streams.App {
		builder := streams.NewBuilder()
		builder.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.Int64)).
			GroupByKey().
			Aggregate(func() (any, error) { return int64(0), nil }, agg,
				streams.Named("summer"), streams.Materialized(streams.StoreOptions{Name: "sums", ValueSerde: streams.Int64})).
			To("out")
		topo, err := builder.Build()
		if err != nil {
			t.Fatal(err)
		}
		app, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	const wantSum = n*(n-1)/2 - bad
	for _, handling := range []streams.ErrorHandling{streams.FailOnError, streams.LogAndContinue} {
		t.Run(handling.String(), func(t *testing.T) {
			b := startBroker(t)
			createTopic(t, b, "in", 1)
			createTopic(t, b, "out", 1)
			var recs []*kgo.Record
			for i := range n {
				recs = append(recs, &kgo.Record{Topic: "in", Key: []byte("k"), Value: i64(int64(i))})
			}
			produce(t, b, recs...)
			rec := &recorder{}
			cfg := testConfig(b, "aggerr")
			cfg.StateDir = t.TempDir()
			cfg.ProcessingErrors = handling
			cfg.Hooks = []streams.Hook{rec}
			app := newApp(t, b, cfg)
			if handling == streams.FailOnError {
				err := runWatched(t, app).wait(t, 20*time.Second)
				checkProcessingError(t, err, "summer", "in", bad)
				if !errors.Is(err, errBoom) {
					t.Errorf("the error %v does not wrap the aggregator's", err)
				}
				if got := committedOffsets(t, b, "aggerr", "in")[0]; got != bad {
					t.Errorf("committed offset %d after the failure, want %d (just before the bad record)", got, bad)
				}
				// Skipping the record on restart must give the exact sum:
				// the stored state and the committed offset agree.
				cfg.ProcessingErrors = streams.LogAndContinue
				cfg.Hooks = nil
				app = newApp(t, b, cfg)
			}
			runApp(t, app)
			waitFor(t, 15*time.Second, "all records committed", func() bool {
				return committedOffsets(t, b, "aggerr", "in")[0] == n
			})
			if v, ok, err := app.Get("sums", "k"); err != nil || !ok || v.(int64) != wantSum {
				t.Errorf("sum = %v (found %v, err %v), want %d: every record but the bad one, once", v, ok, err, wantSum)
			}
			if handling == streams.LogAndContinue {
				if sk := rec.skippedRecords(); len(sk) != 1 || sk[0].Offset != bad || sk[0].Topic != "in" {
					t.Errorf("skipped records %+v, want the one at offset %d", sk, bad)
				}
				if st := app.Stats(); len(st.Tasks) != 1 || st.Tasks[0].Skipped != 1 {
					t.Errorf("Stats %+v, want one task with one skipped record", st.Tasks)
				}
			}
		})
	}
}

func checkProcessingError(t *testing.T, err error, node, topic string, offset int64) {
	t.Helper()
	var tf *streams.TaskFailedError
	if !errors.As(err, &tf) {
		t.Fatalf("Run returned %v (%T), want a *TaskFailedError", err, err)
	}
	var pe *streams.ProcessingError
	if !errors.As(err, &pe) {
		t.Fatalf("Run returned %v, which wraps no *ProcessingError", err)
	}
	if pe.Node != node || pe.Topic != topic || pe.Partition != 0 || pe.Offset != offset {
		t.Errorf("ProcessingError names node %q record %s/%d@%d, want node %q record %s/0@%d",
			pe.Node, pe.Topic, pe.Partition, pe.Offset, node, topic, offset)
	}
}

// failingSerde is Int64 that cannot serialize values of at least limit.
type failingSerde struct{ limit int64 }

func (failingSerde) Name() string { return "failing-int64" }

func (s failingSerde) Serialize(topic string, v any) ([]byte, error) {
	if n, ok := v.(int64); ok && n >= s.limit {
		return nil, fmt.Errorf("%d is too large: %w", n, errBoom)
	}
	return streams.Int64.Serialize(topic, v)
}

func (failingSerde) Deserialize(topic string, b []byte) (any, error) {
	return streams.Int64.Deserialize(topic, b)
}

// TestStoreSerdeError counts 11 records of one key into a store whose
// value serde cannot write counts of 5 and more. The record that makes the
// count 5 (offset 4) goes to the error handler with its coordinates, with
// the cache on or off: FailOnError fails the App there, LogAndContinue
// skips it and every record after it (each would make the count 5 again).
func TestStoreSerdeError(t *testing.T) {
	const (
		n   = 11
		bad = 4 // the record that makes the count 5
	)
	for _, cached := range []bool{false, true} {
		for _, handling := range []streams.ErrorHandling{streams.FailOnError, streams.LogAndContinue} {
			t.Run(fmt.Sprintf("cached=%v/%v", cached, handling), func(t *testing.T) {
				b := startBroker(t)
				createTopic(t, b, "clicks", 1)
				createTopic(t, b, "click-counts", 1)
				produce(t, b, clickRecords(0, n, 1, time.UnixMilli(1_700_000_000_000))...)
				rec := &recorder{}
				cfg := testConfig(b, "serdeerr")
				cfg.StateDir = t.TempDir()
				cfg.ProcessingErrors = handling
				cfg.Hooks = []streams.Hook{rec}
				app := newCountApp(t, b, cfg, streams.StoreOptions{ValueSerde: failingSerde{limit: 5}, CachingDisabled: !cached})
				w := runWatched(t, app)
				if handling == streams.FailOnError {
					err := w.wait(t, 20*time.Second)
					if w.panicked != nil {
						t.Fatalf("Run panicked after the serde failed: %v\n%s", w.panicked, w.stack)
					}
					checkProcessingError(t, err, "counter", "clicks", bad)
					if got := committedOffsets(t, b, "serdeerr", "clicks")[0]; got != bad {
						t.Errorf("committed offset %d after the failure, want %d (just before the record whose count cannot be stored)", got, bad)
					}
					return
				}
				waitFor(t, 15*time.Second, "all records handled or Run ended", func() bool {
					return w.exited() || committedOffsets(t, b, "serdeerr", "clicks")[0] == n
				})
				if w.exited() {
					t.Fatalf("with LogAndContinue Run ended: %v", w.stop())
				}
				if v, ok, err := app.Get("counts", "user-00"); err != nil || !ok || v.(int64) != bad {
					t.Errorf("count = %v (found %v, err %v), want %d: the records whose count cannot be stored are skipped", v, ok, err, bad)
				}
				if sk := rec.skippedRecords(); len(sk) != n-bad || sk[0].Offset != bad {
					t.Errorf("skipped %+v, want the %d records from offset %d on", sk, n-bad, bad)
				}
				if err := w.stop(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestUnwritableStateDir points StateDir under a regular file: Run fails
// at once, before joining the group, with an error naming the directory
// (reading it for the state a previous run left).
func TestUnwritableStateDir(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	produce(t, b, clickRecords(0, 10, 2, time.UnixMilli(1_700_000_000_000))...)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, "unwritable")
	cfg.StateDir = filepath.Join(file, "state")
	rec := &recorder{}
	cfg.Hooks = []streams.Hook{rec}
	app := newCountApp(t, b, cfg, streams.StoreOptions{})
	err := runWatched(t, app).wait(t, 15*time.Second)
	if err == nil {
		t.Fatal("Run returned nil, want an error")
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("the error %q does not name the directory %s", err, file)
	}
	// Before joining the group: no task was ever assigned.
	rec.mu.Lock()
	assigned := slices.Clone(rec.assigned)
	rec.mu.Unlock()
	if len(assigned) != 0 {
		t.Errorf("tasks %+v were assigned before Run failed, want it to fail before joining the group", assigned)
	}
	if got := committedOffsets(t, b, "unwritable", "clicks"); len(got) != 0 {
		t.Errorf("committed %v although nothing was processed", got)
	}
}

// ---- 7. torn and foreign state ----

// TestUntrustedStateIsRebuilt counts, stops, spoils the store directories
// and starts again: the App notices, logs it, rebuilds each store from its
// whole changelog and the counts are right.
func TestUntrustedStateIsRebuilt(t *testing.T) {
	const (
		records = 500
		users   = 10
	)
	cases := []struct {
		name  string
		spoil func(t *testing.T, storeDirs []string)
	}{
		{"garbage in every file", func(t *testing.T, dirs []string) {
			rng := rand.New(rand.NewPCG(1, 2))
			for _, dir := range dirs {
				files := 0
				err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					info, err := d.Info()
					if err != nil {
						return err
					}
					garbage := make([]byte, max(info.Size(), 64))
					for i := range garbage {
						garbage[i] = byte(rng.Uint32())
					}
					files++
					return os.WriteFile(path, garbage, 0o644)
				})
				if err != nil {
					t.Fatal(err)
				}
				if files == 0 {
					t.Fatalf("store dir %s has no files", dir)
				}
			}
		}},
		{"stores of two tasks swapped", func(t *testing.T, dirs []string) {
			tmp := dirs[0] + ".tmp"
			for _, mv := range [][2]string{{dirs[0], tmp}, {dirs[1], dirs[0]}, {tmp, dirs[1]}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			appID := fmt.Sprintf("torn-%d", i)
			b := startBroker(t)
			createTopic(t, b, "clicks", 2)
			createTopic(t, b, "click-counts", 2)
			produce(t, b, clickRecords(0, records, users, time.UnixMilli(1_700_000_000_000))...)
			stateDir := t.TempDir()
			cfg := testConfig(b, appID)
			cfg.StateDir = stateDir
			app := newCountApp(t, b, cfg, streams.StoreOptions{})
			stop := runApp(t, app)
			want := uniformCounts(users, records/users)
			waitFor(t, 15*time.Second, "the counts", func() bool { return countsAre(app, "counts", want) })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			ends := endOffsets(t, b, appID+"-counts-changelog")
			dirs := []string{
				filepath.Join(stateDir, appID, "0_0", "counts"),
				filepath.Join(stateDir, appID, "0_1", "counts"),
			}
			tc.spoil(t, dirs)

			rl := &restoreLog{}
			logs := newLogCapture()
			cfg.Hooks = []streams.Hook{rl}
			cfg.Logger = slog.New(logs)
			app = newCountApp(t, b, cfg, streams.StoreOptions{})
			w := runWatched(t, app)
			waitFor(t, 15*time.Second, "the counts after the rebuild", func() bool {
				return w.exited() || countsAre(app, "counts", want)
			})
			if w.exited() {
				t.Fatalf("Run ended: %v", w.stop())
			}
			waitFor(t, 5*time.Second, "two restore end events", func() bool { return rl.ended() == 2 })
			starts, progress, endEvents := rl.snapshot()
			checkRestoreEvents(t, appID, "counts", ends, starts, progress, endEvents)
			for _, task := range []string{"0_0", "0_1"} {
				if len(logs.matching("WARN", "rebuild", task, "counts")) == 0 {
					t.Errorf("no warning says the store of task %s is rebuilt", task)
				}
			}
			// The rebuilt stores count on.
			produce(t, b, clickRecords(records, records, users, time.UnixMilli(1_700_000_000_000))...)
			waitFor(t, 15*time.Second, "counts after more input", func() bool {
				return countsAre(app, "counts", uniformCounts(users, 2*records/users))
			})
			if err := w.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStateAheadOfChangelogIsRebuilt keeps a state dir across brokers, as
// `braid` does with its in-memory broker and a persistent state dir: the
// new cluster's changelog is behind the store's checkpoint, so the state
// is foreign and must be rebuilt from that changelog, not trusted and not
// a reason to fail for good.
func TestStateAheadOfChangelogIsRebuilt(t *testing.T) {
	const (
		appID = "ahead"
		users = 5
	)
	stateDir := t.TempDir()
	run := func(t *testing.T, records int) error {
		b := startBroker(t)
		defer b.Embedded(t, "each run needs a broker of its own").Close()
		createTopic(t, b, "clicks", 1)
		createTopic(t, b, "click-counts", 1)
		produce(t, b, clickRecords(0, records, users, time.UnixMilli(1_700_000_000_000))...)
		cfg := testConfig(b, appID)
		cfg.StateDir = stateDir
		app := newCountApp(t, b, cfg, streams.StoreOptions{CachingDisabled: true})
		w := runWatched(t, app)
		want := uniformCounts(users, int64(records/users))
		if !eventually(15*time.Second, func() bool { return w.exited() || countsAre(app, "counts", want) }) {
			t.Fatalf("the counts never reached %v", want)
		}
		return w.stop()
	}
	if err := run(t, 100); err != nil {
		t.Fatal(err)
	}
	// The second cluster has fewer records: its changelog ends at 10
	// while the state dir's checkpoint says 100.
	if err := run(t, 10); err != nil {
		t.Errorf("with a state dir ahead of the changelog Run failed instead of rebuilding the store: %v", err)
	}
}
