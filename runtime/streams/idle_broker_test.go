package streams_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Task idling on the broker: a stream-stream join of "il" and "ir" (one
// partition each) within 20 ms and no grace, so that a record the task
// takes after the other side's stream time ran past it is dropped as late.
// Left record i is at t0+100i, right record i at t0+100i+10: each joins
// its partner only.
var idleJoinWindows = streams.JoinWindows{Before: 20 * time.Millisecond, After: 20 * time.Millisecond}

// idleJoin joins the left value with the right one's name, the part before
// '|': right values carry padding.
func idleJoin(_, l, r any) (any, error) {
	name, _, _ := strings.Cut(r.(string), "|")
	return l.(string) + "+" + name, nil
}

func idleTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	left := b.Stream([]string{"il"}, streams.WithSerdes(streams.String, streams.String))
	right := b.Stream([]string{"ir"}, streams.WithSerdes(streams.String, streams.String))
	left.Join(right, idleJoin, idleJoinWindows).To("ij", streams.WithSerdes(streams.String, streams.String))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func idleBroker(t *testing.T) *brokertest.Cluster {
	t.Helper()
	b := startBroker(t)
	for _, topic := range []string{"il", "ir", "ij"} {
		createTopic(t, b, topic, 1)
	}
	return b
}

// idleRecord is left (or right) record i of the join.
func idleRecord(right bool, i int) *kgo.Record {
	k := fmt.Sprintf("k%d", i%5)
	if right {
		// 3 KB: a fetch of 4 KB per partition brings one right record,
		// and some fifty left ones.
		v := fmt.Sprintf("r%d|%s", i, strings.Repeat("x", 3000))
		return &kgo.Record{Topic: "ir", Key: []byte(k), Value: []byte(v), Timestamp: time.UnixMilli(t0 + int64(i)*100 + 10)}
	}
	return &kgo.Record{Topic: "il", Key: []byte(k), Value: []byte(fmt.Sprintf("l%d", i)), Timestamp: time.UnixMilli(t0 + int64(i)*100)}
}

// idleWant is the join of left and right records from..to-1 in order.
func idleWant(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("k%d=l%d+r%d", i%5, i, i))
	}
	return out
}

// produceEach writes every record in a batch of its own, so that a fetch
// can stop after any; with txn in transactions of txnRecords records, so
// that commit markers lie between them and end the partition.
func produceEach(t *testing.T, b *brokertest.Cluster, txn bool, recs ...*kgo.Record) {
	t.Helper()
	const txnRecords = 10
	opts := []kgo.Opt{kgo.ProducerLinger(0)}
	if txn {
		opts = append(opts, kgo.TransactionalID("idle-writer"))
	}
	cl := newClient(t, b, opts...)
	ctx := context.Background()
	for i, r := range recs {
		if txn && i%txnRecords == 0 {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
		if txn && (i%txnRecords == txnRecords-1 || i == len(recs)-1) {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("committing a transaction: %v", err)
			}
		}
	}
}

// readAll reads topic's committed records, up to its last stable offset,
// as "key=value".
func readAll(t *testing.T, b *brokertest.Cluster, topic string) []string {
	t.Helper()
	listed, err := admin(t, b).ListCommittedOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := listed.Lookup(topic, 0)
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: at offset %d of %d when the time was up", topic, next, end.Offset)
		}
		for _, r := range fs.Records() {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, fmt.Sprintf("%s=%s", r.Key, r.Value))
			}
		}
	}
	return out
}

// taskStats returns task 0_0's stats, and whether the App runs it.
func taskStats(app *streams.App) (streams.TaskStats, bool) {
	for _, ts := range app.Stats().Tasks {
		if ts.ID == (streams.TaskID{}) {
			return ts, true
		}
	}
	return streams.TaskStats{}, false
}

// idleProcessedAll waits until task 0_0 has processed n records and committed
// them: its inputs' committed offsets have reached their last records.
func idleProcessedAll(t *testing.T, b *brokertest.Cluster, app *streams.App, n int64, lastLeft, lastRight int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ts, ok := taskStats(app)
		if ok && ts.Processed == n &&
			committedOffsets(t, b, "idle", "il")[0] > lastLeft && committedOffsets(t, b, "idle", "ir")[0] > lastRight {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d records processed and committed: task running %v, processed %d, waiting on %v since %v, partitions %+v, app %+v",
				n, ok, ts.Processed, ts.WaitingOn, ts.IdlingSince, ts.Partitions, app.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleWaitsForLaggingSide runs the join on inputs that are all on the
// broker, with fetches of 4 KB per partition: one right record per fetch
// against fifty left ones. A task that idles while the right side's lag
// is positive takes the records in timestamp order and joins every pair;
// with idling off it runs the left side ahead, and the right records that
// come later are dropped as late. With the inputs written in transactions
// of ten records, the commit markers between the records of a fetch and
// at the end of each partition must not make the task wait for ever.
func TestIdleWaitsForLaggingSide(t *testing.T) {
	const n = 60
	for _, tc := range []struct {
		name      string
		guarantee streams.Guarantee
		txnInput  bool
		maxIdle   time.Duration
	}{
		{"AtLeastOnce", streams.AtLeastOnce, false, 0},
		{"AtLeastOnceTransactionalInput", streams.AtLeastOnce, true, 0},
		{"ExactlyOnce", streams.ExactlyOnce, true, 0},
		{"AtLeastOnceDisabled", streams.AtLeastOnce, false, streams.MaxTaskIdleDisabled},
		{"ExactlyOnceDisabled", streams.ExactlyOnce, true, streams.MaxTaskIdleDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := idleBroker(t)
			var left, right []*kgo.Record
			for i := range n {
				left, right = append(left, idleRecord(false, i)), append(right, idleRecord(true, i))
			}
			produceEach(t, b, tc.txnInput, left...)
			produceEach(t, b, tc.txnInput, right...)
			cfg := testConfig(b, "idle")
			cfg.ProcessingGuarantee, cfg.MaxTaskIdle = tc.guarantee, tc.maxIdle
			cfg.ClientOptions = []kgo.Opt{kgo.FetchMaxPartitionBytes(4 << 10)}
			app, err := streams.New(idleTopology(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A partition that seems to lag for this long is listed
			// again; markers must not need that.
			streams.SetLagStaleAfter(app, time.Hour)
			runApp(t, app)
			idleProcessedAll(t, b, app, 2*n, left[n-1].Offset, right[n-1].Offset)
			got := readAll(t, b, "ij")
			slices.Sort(got)
			want := idleWant(0, n)
			slices.Sort(want)
			if tc.maxIdle != streams.MaxTaskIdleDisabled {
				if !slices.Equal(got, want) {
					t.Errorf("joined %d pairs, want all %d:\n got %q\nwant %q", len(got), len(want), got, want)
				}
				return
			}
			// With idling off the task ran ahead of the right side.
			if len(got) >= n/2 {
				t.Errorf("joined %d pairs of %d with idling off; want most right records dropped as late, or the test proves nothing", len(got), n)
			}
		})
	}
}

// TestIdleMaxTaskIdleForCaughtUpSide has the left side on the broker and
// the right side empty: with MaxTaskIdle of a minute the task waits (its
// Stats say for ir/0) until the right records come, and joins every pair
// (the last record waits for the next left one);
// with MaxTaskIdle 0 it processes the left side at once, and the right
// records that come after it are late.
func TestIdleMaxTaskIdleForCaughtUpSide(t *testing.T) {
	const n = 10
	for _, maxIdle := range []time.Duration{time.Minute, 0} {
		t.Run(maxIdle.String(), func(t *testing.T) {
			b := idleBroker(t)
			var left, right []*kgo.Record
			for i := range n {
				left, right = append(left, idleRecord(false, i)), append(right, idleRecord(true, i))
			}
			produceEach(t, b, false, left...)
			cfg := testConfig(b, "idle")
			cfg.MaxTaskIdle = maxIdle
			app, err := streams.New(idleTopology(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			runApp(t, app)
			if maxIdle > 0 {
				waitFor(t, 30*time.Second, "the task to wait for ir/0", func() bool {
					ts, ok := taskStats(app)
					return ok && !ts.IdlingSince.IsZero() && slices.Equal(ts.WaitingOn, []streams.TopicPartition{{Topic: "ir", Partition: 0}})
				})
				if ts, _ := taskStats(app); ts.Processed != 0 {
					t.Fatalf("processed %d records while waiting, want 0", ts.Processed)
				}
			} else {
				waitFor(t, 30*time.Second, "the left side processed", func() bool {
					ts, ok := taskStats(app)
					return ok && ts.Processed == n
				})
			}
			produceEach(t, b, false, right...)
			// A minute's wait holds the last right record too, for the
			// left side that is empty by then: one more left record
			// lets it through, and waits itself.
			if maxIdle > 0 {
				produceEach(t, b, false, idleRecord(false, n))
			}
			idleProcessedAll(t, b, app, 2*n, left[n-1].Offset, right[n-1].Offset)
			got := readAll(t, b, "ij")
			slices.Sort(got)
			want := idleWant(0, n)
			slices.Sort(want)
			if maxIdle > 0 && !slices.Equal(got, want) {
				t.Errorf("joined %q, want %q", got, want)
			}
			if maxIdle == 0 && len(got) >= n/2 {
				t.Errorf("joined %q with MaxTaskIdle 0; want the right records late", got)
			}
			if ts, _ := taskStats(app); maxIdle == 0 && ts.EnforcedProcessing == 0 {
				t.Errorf("EnforcedProcessing 0 after processing the left side alone")
			}
		})
	}
}

// TestIdleDeadlineEndsWait checks that a task waiting MaxTaskIdle for an
// empty side goes on by itself when the time passes, long before the
// next commit would end the App's poll, and counts the enforced records.
func TestIdleDeadlineEndsWait(t *testing.T) {
	b := idleBroker(t)
	var left []*kgo.Record
	for i := range 5 {
		left = append(left, idleRecord(false, i))
	}
	produceEach(t, b, false, left...)
	cfg := testConfig(b, "idle")
	cfg.MaxTaskIdle, cfg.CommitInterval = 300*time.Millisecond, time.Hour
	app, err := streams.New(idleTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	waitFor(t, 30*time.Second, "the left side processed after the idle time", func() bool {
		ts, ok := taskStats(app)
		return ok && ts.Processed == 5
	})
	ts, _ := taskStats(app)
	if ts.EnforcedProcessing != 5 || !ts.IdlingSince.IsZero() || len(ts.WaitingOn) != 0 {
		t.Errorf("enforced %d, idling since %v on %v; want 5 and no wait", ts.EnforcedProcessing, ts.IdlingSince, ts.WaitingOn)
	}
}
