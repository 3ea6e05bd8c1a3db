package streams_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The tests in this file run restores, standbys and warm-ups over every
// changelog a previous run can leave: an exactly-once run ends each commit
// with a transaction marker, which takes an offset but is never a record a
// reader without exactly-once's read options receives; a killed or fenced
// exactly-once run leaves aborted transactions, at the end or in the
// middle; and the guarantee can change between runs over the same
// changelogs and state directories.

// changelogStep is one write of a hand-made changelog: values for keys,
// committed or aborted in a transaction, or written without one.
type changelogStep struct {
	txn    string // "commit", "abort" or "" (no transaction)
	counts map[string]int64
}

// writeChangelog writes steps to partition 0 of topic, as the runs of an
// App would: a transactional producer for the transactions, a plain one
// for the rest.
func writeChangelog(t *testing.T, b *brokertest.Cluster, topic string, steps []changelogStep) {
	t.Helper()
	ctx := context.Background()
	txn := newClient(t, b, kgo.TransactionalID("writer-"+topic), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	plain := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	for _, s := range steps {
		var recs []*kgo.Record
		for k, n := range s.counts {
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: binary.BigEndian.AppendUint64(nil, uint64(n)), Partition: 0})
		}
		if s.txn == "" {
			if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("producing to %s: %v", topic, err)
			}
			continue
		}
		if err := txn.BeginTransaction(); err != nil {
			t.Fatalf("beginning a transaction: %v", err)
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing to %s in a transaction: %v", topic, err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(s.txn == "commit")); err != nil {
			t.Fatalf("ending a transaction (%s): %v", s.txn, err)
		}
	}
}

// newMarkerCountApp counts "clicks" by key into store "counts", with one
// partition, under guarantee g.
func newMarkerCountApp(t *testing.T, b *brokertest.Cluster, appID, stateDir string, g streams.Guarantee, hooks ...streams.Hook) *streams.App {
	t.Helper()
	builder := streams.NewBuilder()
	builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Named("counter"), streams.Materialized(streams.StoreOptions{Name: "counts"})).
		To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, appID)
	cfg.StateDir = stateDir
	cfg.ProcessingGuarantee = g
	cfg.Hooks = hooks
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// storeHolds reports whether app answers want for every key of store
// "counts" and nothing for the keys of absent.
func storeHolds(app *streams.App, want map[string]int64, absent ...string) bool {
	for k, n := range want {
		v, ok, err := app.Get("counts", k)
		if err != nil || !ok || v.(int64) != n {
			return false
		}
	}
	for _, k := range absent {
		if _, ok, err := app.Get("counts", k); err != nil || ok {
			return false
		}
	}
	return true
}

// holdsWithin polls cond until it holds, false if it still does not
// after timeout.
func holdsWithin(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// restoring reports whether any of app's tasks restores.
func restoring(app *streams.App) bool {
	for _, ts := range app.Stats().Tasks {
		if ts.Restoring {
			return true
		}
	}
	return false
}

// TestRestoreFinishesOnEveryChangelog restores a store, under each
// guarantee, from a changelog that ends in a commit marker, in an aborted
// transaction, has an aborted transaction in the middle, or was written
// without transactions. Each restore must reach the changelog's end,
// report its end and let the store answer; under exactly-once the aborted
// values never reach the store.
func TestRestoreFinishesOnEveryChangelog(t *testing.T) {
	committed := changelogStep{"commit", map[string]int64{"a": 1, "b": 2}}
	cases := []struct {
		name  string
		steps []changelogStep
		// want is what a read-committed restore finds; aborted the
		// keys only aborted transactions wrote.
		want    map[string]int64
		aborted []string
	}{
		{"commit marker at the end", []changelogStep{committed}, map[string]int64{"a": 1, "b": 2}, nil},
		{"aborted transaction at the end", []changelogStep{committed, {"abort", map[string]int64{"a": 10, "x": 1}}},
			map[string]int64{"a": 1, "b": 2}, []string{"x"}},
		{"aborted transaction in the middle", []changelogStep{committed, {"abort", map[string]int64{"a": 10, "x": 1}},
			{"commit", map[string]int64{"b": 3}}}, map[string]int64{"a": 1, "b": 3}, []string{"x"}},
		{"only an aborted transaction", []changelogStep{{"abort", map[string]int64{"x": 1}}}, map[string]int64{}, []string{"x"}},
		{"no transactions", []changelogStep{{"", map[string]int64{"a": 1}}, {"", map[string]int64{"b": 2}}},
			map[string]int64{"a": 1, "b": 2}, nil},
	}
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		for i, tc := range cases {
			t.Run(fmt.Sprintf("%v/%s", g, tc.name), func(t *testing.T) {
				b := startBroker(t)
				appID := fmt.Sprintf("markers-%d-%d", g, i)
				changelog := appID + "-counts-changelog"
				createTopic(t, b, "clicks", 1)
				createTopic(t, b, "click-counts", 1)
				createTopic(t, b, changelog, 1)
				writeChangelog(t, b, changelog, tc.steps)
				end := endOffsets(t, b, changelog)[0]

				rl := &restoreLog{}
				app := newMarkerCountApp(t, b, appID, t.TempDir(), g, rl)
				stop := runApp(t, app)
				waitFor(t, 30*time.Second, "the restore's end", func() bool { return rl.ended() == 1 })
				_, _, ends := rl.snapshot()
				if ev := ends[0]; ev.StartOffset != 0 || ev.EndOffset != end {
					t.Errorf("the restore read [%d, %d), want [0, %d)", ev.StartOffset, ev.EndOffset, end)
				}
				waitFor(t, 30*time.Second, "no task restoring", func() bool { return !restoring(app) })
				if g == streams.AtLeastOnce {
					// At-least-once reads uncommitted, as Kafka
					// Streams does: it has to finish, and answer.
					for k := range tc.want {
						if _, ok, err := app.Get("counts", k); err != nil || !ok {
							t.Errorf("Get(%q) after the restore = found %v, %v; want found", k, ok, err)
						}
					}
				} else if !storeHolds(app, tc.want, tc.aborted...) {
					t.Errorf("the restored store does not hold %v without %v", tc.want, tc.aborted)
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestGuaranteeSwitchBetweenRuns runs one supervised instance under one
// guarantee, stops it, and runs it again under the other over the same
// state directory and changelogs, as a redeploy does, with a second,
// empty instance added and one standby per task, and no new input: the
// second run's restores (from the first run's checkpoints, which the
// exactly-once run's markers follow, and from nothing) and standbys must
// reach the changelogs' ends, every count must be answered, and every
// standby reach lag 0.
func TestGuaranteeSwitchBetweenRuns(t *testing.T) {
	const partitions, users, clicks = 2, 20, 400
	for _, order := range [][2]streams.Guarantee{{streams.ExactlyOnce, streams.AtLeastOnce}, {streams.AtLeastOnce, streams.ExactlyOnce}} {
		t.Run(fmt.Sprintf("%v then %v", order[0], order[1]), func(t *testing.T) {
			b := startBroker(t)
			createTopic(t, b, "clicks", partitions)
			createTopic(t, b, "click-counts", partitions)
			produceClicks(t, b, 0, clicks, users)
			stateDir := t.TempDir()
			for run, g := range order {
				builder := streams.NewBuilder()
				builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
					GroupByKey().
					Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
					To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
				topo, err := builder.Build()
				if err != nil {
					t.Fatal(err)
				}
				cfg := testConfig(b, "switch")
				cfg.StateDir = stateDir
				cfg.ProcessingGuarantee = g
				cfg.StandbyReplicas = 1
				sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{Config: cfg, Instances: 1})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- sup.Run(ctx) }()
				wantStandbys := 0
				if run == 1 {
					waitFor(t, 30*time.Second, "the supervisor running", func() bool { return len(sup.Instances()) == 1 })
					if _, err := sup.Add(); err != nil {
						t.Fatal(err)
					}
					wantStandbys = partitions
				}
				var total int64
				var lags []int64
				settled := func() bool {
					total, lags = 0, nil
					for u := range users {
						if v, ok, err := sup.Get("counts", fmt.Sprintf("user-%02d", u)); err == nil && ok {
							total += v.(int64)
						}
					}
					for _, in := range sup.Instances() {
						for _, ts := range in.Stats.Tasks {
							if ts.Restoring {
								return false
							}
						}
						for _, sb := range in.Stats.Standbys {
							for _, st := range sb.Stores {
								lags = append(lags, st.Lag)
							}
						}
					}
					for _, l := range lags {
						if l != 0 {
							return false
						}
					}
					return total == clicks && len(lags) == wantStandbys
				}
				if !holdsWithin(60*time.Second, settled) {
					t.Fatalf("run %d (%v): %d clicks counted of %d, standby lags %v (want %d at 0), or a task still restoring",
						run+1, g, total, clicks, lags, wantStandbys)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("run %d (%v): %v", run+1, g, err)
				}
			}
		})
	}
}
