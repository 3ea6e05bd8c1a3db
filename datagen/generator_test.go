package datagen

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newTestGenerator returns a generator whose client is never used.
func newTestGenerator(t *testing.T, spec Spec) *Generator {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g, err := New(cl, spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, Spec{Topic: "t"}); err == nil {
		t.Error("New(nil client) = nil error")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = New(cl, Spec{Topic: "t", Rate: -1, Template: map[string]string{"x": "nope"}})
	if err == nil || !strings.Contains(err.Error(), "Rate -1") || !strings.Contains(err.Error(), `Template field "x"`) {
		t.Errorf("New with a bad spec = %v, want both problems", err)
	}
}

func TestTimestamps(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		spec   Spec
		jitter time.Duration // records lie in [now-jitter, now] unless late
		lateBy time.Duration
		frac   float64 // the late fraction wanted, within ±0.01 over n records
	}{
		{"in order", Spec{Topic: "t"}, 0, time.Minute, 0},
		{"jitter", Spec{Topic: "t", Jitter: 3 * time.Second}, 3 * time.Second, time.Minute, 0},
		{"jitter sub-millisecond", Spec{Topic: "t", Jitter: 500 * time.Microsecond}, 500 * time.Microsecond, time.Minute, 0},
		{"late 5%", Spec{Topic: "t", LateFraction: 0.05}, 0, time.Minute, 0.05},
		{"late 30% and jitter", Spec{Topic: "t", LateFraction: 0.3, LateBy: time.Hour, Jitter: 10 * time.Second}, 10 * time.Second, time.Hour, 0.3},
		{"all late", Spec{Topic: "t", LateFraction: 1, LateBy: 5 * time.Minute}, 0, 5 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Seed = 42
			g := newTestGenerator(t, tc.spec)
			const n = 20_000
			late := 0
			minTS, maxTS := now, now.Add(-tc.jitter)
			for i := range n {
				rec, isLate := g.next(now)
				var v map[string]any
				if err := json.Unmarshal(rec.Value, &v); err != nil {
					t.Fatal(err)
				}
				if v["seq"] != float64(i) || v["key"] != string(rec.Key) {
					t.Fatalf("record %d: key %s, value %s", i, rec.Key, rec.Value)
				}
				if isLate {
					late++
					if !rec.Timestamp.Equal(now.Add(-tc.lateBy)) {
						t.Fatalf("late record at %v, want %v", rec.Timestamp, now.Add(-tc.lateBy))
					}
					continue
				}
				// Kafka keeps milliseconds: a timestamp may lie up to 1 ms
				// below now-jitter after truncation.
				if rec.Timestamp.After(now) || rec.Timestamp.Before(now.Add(-tc.jitter-time.Millisecond)) {
					t.Fatalf("timestamp %v outside [now-%v, now]", rec.Timestamp, tc.jitter)
				}
				if rec.Timestamp.Before(minTS) {
					minTS = rec.Timestamp
				}
				if rec.Timestamp.After(maxTS) {
					maxTS = rec.Timestamp
				}
			}
			if got := float64(late) / n; got < tc.frac-0.01 || got > tc.frac+0.01 {
				t.Errorf("%d of %d records late (%.3f), want about %.2f", late, n, got, tc.frac)
			}
			// The jitter spreads the timestamps over most of its range.
			if tc.jitter >= 10*time.Millisecond && now.Sub(minTS) < tc.jitter*9/10 {
				t.Errorf("timestamps span only [%v, %v] of a %v jitter", minTS, maxTS, tc.jitter)
			}
		})
	}
}

func TestKeysAndSeed(t *testing.T) {
	now := time.Now()
	keysOf := func(spec Spec) []string {
		g := newTestGenerator(t, spec)
		var keys []string
		for range 1000 {
			rec, _ := g.next(now)
			keys = append(keys, string(rec.Key))
		}
		return keys
	}
	a := keysOf(Spec{Topic: "t", Keys: 7, KeyPrefix: "cust", Seed: 9})
	seen := map[string]int{}
	for _, k := range a {
		n, err := strconv.Atoi(strings.TrimPrefix(k, "cust-"))
		if !strings.HasPrefix(k, "cust-") || err != nil || n < 0 || n >= 7 {
			t.Fatalf("key %q outside cust-0..cust-6", k)
		}
		seen[k]++
	}
	for k, n := range seen {
		if len(seen) != 7 || n < 100 || n > 200 { // about 143 each
			t.Errorf("key counts %v: want all 7 keys, about uniformly (%s: %d)", seen, k, n)
			break
		}
	}
	if b := keysOf(Spec{Topic: "t", Keys: 7, KeyPrefix: "cust", Seed: 9}); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Error("the same seed gave other keys")
	}
	if b := keysOf(Spec{Topic: "t", Keys: 7, KeyPrefix: "cust", Seed: 10}); strings.Join(a, ",") == strings.Join(b, ",") {
		t.Error("another seed gave the same keys")
	}
}

// startBroker starts an in-memory broker the way runtime/broker does
// (datagen may import only franz-go, tests included).
func startBroker(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func TestRun(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "orders"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	g, err := New(cl, Spec{
		Topic: topic, Rate: 500, Keys: 5, KeyPrefix: "customer", Seed: 1,
		Template:     map[string]string{"customer": "key", "amount": "random(1, 500)", "ts": "timestamp"},
		LateFraction: 0.1, LateBy: time.Hour, Jitter: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.Produced != 0 || !st.Started.IsZero() || st.Rate != 0 {
		t.Errorf("Stats before Run: %+v", st)
	}
	// Run until 300 records are acknowledged: a slow machine takes
	// longer, never produces faster than the rate.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	before := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx) }()
	for g.Stats().Produced < 300 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := g.Run(ctx); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Run = %v, want an error", err)
	}
	st := g.Stats()
	if st.Produced < 300 || st.Errors != 0 || st.Started.Before(before) {
		t.Errorf("Stats after 300 records were acknowledged: %+v", st)
	}
	// The pacing allows the first record at once and then Rate a second:
	// Produced <= 1 + Rate*d over the d that Run ran, that is, with Rate
	// = Produced/d, Stats' Rate <= 500 + Rate/Produced.
	if limit := 500 + st.Rate/float64(st.Produced); st.Rate > limit*(1+1e-9) {
		t.Errorf("Stats' rate %.1f records/s, above the 500/s asked (%.1f with the first record)", st.Rate, limit)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got, late int64
	for got < st.Produced && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		for _, rec := range fetches.Records() {
			got++
			var v struct {
				Customer string
				Amount   int
				TS       int64
			}
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				t.Fatalf("record %s: %v", rec.Value, err)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(string(rec.Key), "customer-"))
			if v.Customer != string(rec.Key) || err != nil || n < 0 || n >= 5 || v.Amount < 1 || v.Amount > 500 {
				t.Fatalf("record key %s value %s", rec.Key, rec.Value)
			}
			if v.TS != rec.Timestamp.UnixMilli() {
				t.Fatalf("value ts %d, record timestamp %d", v.TS, rec.Timestamp.UnixMilli())
			}
			if time.Since(rec.Timestamp) > 30*time.Minute {
				late++
			}
		}
	}
	if got != st.Produced || late != st.Late {
		t.Errorf("topic holds %d records, %d late; Stats say %d, %d late", got, late, st.Produced, st.Late)
	}
	if late == 0 || late > got/4 {
		t.Errorf("%d of %d records late, want about a tenth", late, got)
	}
}

func TestRunReportsProduceErrors(t *testing.T) {
	addr := startBroker(t)
	// The topic does not exist and the client may not create it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.UnknownTopicRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g, err := New(cl, Spec{Topic: "missing", Rate: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = g.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `datagen "missing": producing:`) || ctx.Err() != nil {
		t.Errorf("Run = %v (ctx %v), want a produce error before the deadline", err, ctx.Err())
	}
	if st := g.Stats(); st.Errors == 0 || st.Produced != 0 {
		t.Errorf("Stats: %+v", st)
	}
}

// TestRunPacing: no record is made ahead of the schedule the rate sets.
// The first record goes at once and credit accrues at Rate a second, so
// the record numbered i (from 0) is made at least i/Rate after Run
// started; its timestamp, the time it was made in milliseconds (without
// jitter or lateness), says so. A slow machine makes records later, never
// earlier.
func TestRunPacing(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, rate = "paced", 1000.0
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	g, err := New(cl, Spec{Topic: topic, Rate: rate, Keys: 3, Seed: 1, Template: map[string]string{"seq": "sequence", "ts": "timestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx) }()
	for g.Stats().Produced < 500 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	st := g.Stats()
	start := st.Started.UnixNano()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := make(map[int64]bool)
	for int64(len(seen)) < st.Produced && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		for _, rec := range fetches.Records() {
			var v struct{ Seq, TS int64 }
			if err := json.Unmarshal(rec.Value, &v); err != nil || seen[v.Seq] || v.TS != rec.Timestamp.UnixMilli() {
				t.Fatalf("record %s: %v (seen before: %v)", rec.Value, err, seen[v.Seq])
			}
			seen[v.Seq] = true
			// Made before ts + 1 ms, so at most that long after start.
			made := float64(v.TS*int64(time.Millisecond)+int64(time.Millisecond)-start) / float64(time.Second)
			if due := float64(v.Seq) / rate; due > made+1e-6 {
				t.Errorf("record %d made by %.4f s after Run started, due no sooner than %.4f s", v.Seq, made, due)
			}
		}
	}
	if int64(len(seen)) != st.Produced || st.Produced < 500 {
		t.Errorf("the topic holds %d records, Stats say %d produced", len(seen), st.Produced)
	}
}

// TestRunStopsWithTheBrokerGone: once its context ends, Run returns even
// if the broker died with records in flight, which the client would retry
// for as long as it lives (braid gen kept running minutes after SIGTERM).
func TestRunStopsWithTheBrokerGone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	g, err := New(cl, Spec{Topic: "orders", Rate: 2000, Keys: 5})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx) }()
	for g.Stats().Produced < 100 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	c.Close()
	before := g.Stats().Produced
	// Let records pile up at the dead broker before stopping.
	for g.Stats().Started.IsZero() || time.Since(g.Stats().Started) < 200*time.Millisecond {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	select {
	case err := <-ran:
		if err != nil && !strings.Contains(err.Error(), `datagen "orders": producing:`) {
			t.Errorf("Run = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after its context ended with the broker gone")
	}
	st := g.Stats()
	if st.Produced < before {
		t.Errorf("Stats went back: %d produced, %d before", st.Produced, before)
	}
	// Nothing counts after Run returned.
	cl.Close()
	if after := g.Stats(); after != st {
		t.Errorf("Stats changed after Run returned: %+v, then %+v", st, after)
	}
}
