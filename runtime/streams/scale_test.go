package streams_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTwoAppsShareTheWorkWithoutLoss scales a stateless pipeline from one
// instance to two while records flow, and back to one: nothing is lost,
// per-key order holds (duplicates are only replays), the tasks are split
// 3 and 3, and a graceful stop hands all tasks to the survivor.
func TestTwoAppsShareTheWorkWithoutLoss(t *testing.T) {
	const (
		partitions = 6
		keys       = 500
		seqs       = 200 // per key
		total      = keys * seqs
		batches    = 100 // the second half is produced in this many batches
	)
	b := startBroker(t)
	createTopic(t, b, "in", partitions)
	createTopic(t, b, "out", partitions)

	producer := newClient(t, b, kgo.ProducerLinger(0))
	produceSeqs := func(from, to int) {
		t.Helper()
		recs := make([]*kgo.Record, 0, (to-from)*keys)
		for seq := from; seq < to; seq++ {
			for k := range keys {
				recs = append(recs, &kgo.Record{Topic: "in", Key: key(k), Value: fmt.Appendf(nil, "%s:%d", key(k), seq)})
			}
		}
		if err := producer.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatalf("producing seqs %d to %d: %v", from, to, err)
		}
	}

	topo := func() *streams.Topology {
		builder := streams.NewBuilder()
		builder.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.String)).
			MapValues(func(v any) (any, error) { return v, nil }).
			To("out")
		topo, err := builder.Build()
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	newApp := func(instance string, hooks *recorder) *streams.App {
		cfg := testConfig(b, "scale")
		cfg.InstanceID = instance
		cfg.Hooks = []streams.Hook{hooks}
		app, err := streams.New(topo(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}

	start := time.Now()
	produceSeqs(0, seqs/2)
	t.Logf("produced the first half in %v", time.Since(start))

	hooks1, hooks2 := &recorder{}, &recorder{}
	app1 := newApp("app-1", hooks1)
	stop1 := runApp(t, app1)
	waitFor(t, 15*time.Second, "app 1 to run all 6 tasks", func() bool {
		st := app1.Stats()
		return st.State == streams.Running && len(st.Tasks) == partitions
	})

	// Start app 2 and produce the second half while it joins: paced
	// batches, the last fifth of them only once app 2 has tasks, so that
	// records flow before, during and after the rebalance.
	app2 := newApp("app-2", hooks2)
	stop2 := runApp(t, app2)
	per := seqs / 2 / batches
	pace := time.NewTicker(40 * time.Millisecond)
	defer pace.Stop()
	revokedAt := -1
	for i := range batches {
		if i == batches*4/5 {
			waitFor(t, 20*time.Second, "app 2 to get tasks", func() bool { return len(hooks2.assignedTasks()) > 0 })
			t.Logf("app 2 got tasks %v after the start, %d of %d batches produced", time.Since(start), i, batches)
		}
		from := seqs/2 + i*per
		produceSeqs(from, from+per)
		if revokedAt < 0 && len(hooks1.revokedTasks()) > 0 {
			revokedAt = i
		}
		<-pace.C
	}
	t.Logf("app 1's tasks were first revoked after batch %d of %d", revokedAt, batches)
	t.Logf("produced everything %v after the start", time.Since(start))

	// Read the output until it holds every input, keeping each
	// partition's records in offset order.
	byPartition := make(map[int32][]*kgo.Record)
	seen := make(map[string]bool, total)
	outputs := 0
	consumer := newClient(t, b, kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(seen) < total {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the output holds %d of %d inputs (%d records) after 60 s; app 1 %v, app 2 %v",
				len(seen), total, outputs, app1.Stats(), app2.Stats())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consuming %s/%d: %v", topic, p, err) })
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			byPartition[p.Partition] = append(byPartition[p.Partition], p.Records...)
			for _, r := range p.Records {
				seen[string(r.Value)] = true
				outputs++
			}
		})
	}
	t.Logf("all %d inputs came out %v after the start, in %d records", total, time.Since(start), outputs)

	// Per key: one partition, and the first occurrences of its sequence
	// numbers come in order; anything else is a replay of a seen one.
	partitionOf := make(map[string]int32)
	next := make(map[string]int) // per key, the next new seq expected
	duplicates := 0
	for p, recs := range byPartition {
		for i, r := range recs {
			if i > 0 && r.Offset <= recs[i-1].Offset {
				t.Fatalf("partition %d: offset %d after %d", p, r.Offset, recs[i-1].Offset)
			}
			k, seqText, ok := strings.Cut(string(r.Value), ":")
			seq, err := strconv.Atoi(seqText)
			if !ok || err != nil || k != string(r.Key) {
				t.Fatalf("out/%d@%d: key %q, value %q; want the input's key and \"key:seq\"", p, r.Offset, r.Key, r.Value)
			}
			if q, ok := partitionOf[k]; ok && q != p {
				t.Errorf("key %s is in output partitions %d and %d", k, q, p)
			}
			partitionOf[k] = p
			switch {
			case seq == next[k]:
				next[k]++
			case seq < next[k]:
				duplicates++
			default:
				t.Errorf("out/%d@%d: key %s seq %d comes before seq %d: order lost", p, r.Offset, k, seq, next[k])
			}
		}
	}
	for k := range keys {
		if got := next[string(key(k))]; got != seqs {
			t.Errorf("key %s: seqs 0 to %d came out in order, want 0 to %d", key(k), got-1, seqs-1)
		}
	}
	if duplicates != outputs-total {
		t.Errorf("%d duplicates counted, but %d outputs for %d inputs", duplicates, outputs, total)
	}
	t.Logf("duplicates (at-least-once replays): %d", duplicates)

	if len(hooks1.assignedTasks()) == 0 || len(hooks2.assignedTasks()) == 0 {
		t.Errorf("tasks assigned: %d to app 1, %d to app 2; want both to have had tasks",
			len(hooks1.assignedTasks()), len(hooks2.assignedTasks()))
	}
	// Each task on exactly one App, 3 and 3. A rebalance may still be
	// settling, so wait for it.
	var last string
	waitFor(t, 20*time.Second, "the tasks to be split 3 and 3", func() bool {
		st1, st2 := app1.Stats(), app2.Stats()
		ids1, ids2 := taskIDs(st1), taskIDs(st2)
		last = fmt.Sprintf("app 1 %s %v, app 2 %s %v", st1.State, ids1, st2.State, ids2)
		all := slices.Sorted(slices.Values(slices.Concat(ids1, ids2)))
		return st1.State == streams.Running && st2.State == streams.Running &&
			len(ids1) == 3 && len(ids2) == 3 &&
			slices.Equal(all, []string{"0_0", "0_1", "0_2", "0_3", "0_4", "0_5"})
	})
	t.Logf("tasks: %s", last)

	// A graceful stop of app 1 moves its tasks to app 2.
	if err := stop1(); err != nil {
		t.Fatalf("app 1 Run: %v", err)
	}
	waitFor(t, 20*time.Second, "app 2 to run all 6 tasks", func() bool {
		st := app2.Stats()
		return st.State == streams.Running && len(st.Tasks) == partitions
	})
	if err := stop2(); err != nil {
		t.Fatalf("app 2 Run: %v", err)
	}
	if got := committedOffsets(t, b, "scale", "in"); sum(got) != total {
		// Known bug (see TestIdleRestartKeepsCommittedOffsets): app 2's
		// tasks created when app 1 left processed nothing, and App.commit
		// commits their zero partitionQueue.next, rewinding the group.
		t.Errorf("after both Apps stopped, the committed input offsets are %v (sum %d), want them to sum to %d: "+
			"a task that processed nothing since its assignment committed offset 0", got, sum(got), total)
	}
	t.Logf("done %v after the start", time.Since(start))
}
