package streams_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestoreWaitsForATransactionHoldingOffsets restores a count under
// exactly-once while a transaction that a member the group gave up on
// began is still open, with a changelog record and the group's offsets in
// it, and commits that transaction once the restore has begun or waits:
// as a member whose session expired while a broker was stopped commits
// after the group moved its task (seen on Apache Kafka: counts came out
// short). The new owner's consumer resumes after that transaction, so its
// store must hold what the transaction wrote: the count goes on from 8,
// not from the 5 that the changelog's LSO showed before the commit.
func TestRestoreWaitsForATransactionHoldingOffsets(t *testing.T) {
	b := startBroker(t)
	const appID = "stable-offsets"
	changelog := appID + "-counts-changelog"
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	createTopic(t, b, changelog, 1)
	click := func() *kgo.Record {
		return &kgo.Record{Topic: "clicks", Key: []byte("a"), Value: []byte("x"), Partition: 0}
	}
	for range 8 {
		produce(t, b, click())
	}
	// A past owner counted 5 clicks and committed.
	writeChangelog(t, b, changelog, []changelogStep{{"commit", map[string]int64{"a": 5}}})
	ctx := context.Background()
	adm := kadm.NewClient(newClient(t, b))
	if err := adm.CommitAllOffsets(ctx, appID, kadm.OffsetsFromRecords(kgo.Record{Topic: "clicks", Partition: 0, Offset: 4})); err != nil {
		t.Fatalf("committing the past owner's offsets: %v", err)
	}
	// The member the group gave up on counted 3 more: its transaction
	// holds the count 8 and the offset 8, and is not committed yet.
	zombie := beginZombieTransaction(t, b, appID, changelog, 8, 8)

	started := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(started) }) }
	cfg := testConfig(b, appID)
	cfg.StateDir = t.TempDir()
	cfg.ProcessingGuarantee = streams.ExactlyOnce
	cfg.Hooks = []streams.Hook{restoreStarted(signal)}
	cfg.Logger = slog.New(&messageWatch{Handler: cfg.Logger.Handler(), substr: "waiting for a transaction that holds offsets", fn: signal})
	builder := streams.NewBuilder()
	builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Named("counter"), streams.Materialized(streams.StoreOptions{Name: "counts"})).
		To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runApp(t, app)
	defer stop()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the App neither restored nor waited for the open transaction within 60 s")
	}
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the transaction: %v", err)
	}
	produce(t, b, click(), click())
	if !holdsWithin(60*time.Second, func() bool { return storeHolds(app, map[string]int64{"a": 10}) }) {
		v, _, _ := app.Get("counts", "a")
		t.Fatalf("count of a = %v after the transaction's 8 and 2 more clicks, want 10", v)
	}
}

// beginZombieTransaction begins a transaction that writes count to key
// "a" of changelog and commits offset for clicks/0 in group, as a member
// the group no longer knows would (no member id, no generation, which
// the group takes for a transactional commit), and leaves it open.
func beginZombieTransaction(t *testing.T, b *brokertest.Cluster, group, changelog string, count, offset int64) *kgo.Client {
	t.Helper()
	ctx := context.Background()
	cl := newClient(t, b, kgo.TransactionalID("zombie-"+group), kgo.ProducerLinger(0))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("beginning the zombie's transaction: %v", err)
	}
	rec := &kgo.Record{Topic: changelog, Partition: 0, Key: []byte("a"), Value: binary.BigEndian.AppendUint64(nil, uint64(count))}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("producing in the zombie's transaction: %v", err)
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("the zombie's producer id: %v", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "zombie-"+group, id, epoch, group
	addResp, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("adding the group's offsets to the zombie's transaction: %v", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "zombie-"+group, group, id, epoch
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "clicks"
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "clicks")
	if err != nil {
		t.Fatalf("listing clicks: %v", err)
	}
	rt.TopicID = topics["clicks"].ID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("committing offsets in the zombie's transaction: %v", err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("committing offset %d of %s/%d in the zombie's transaction: %v", offset, rt.Topic, rp.Partition, err)
			}
		}
	}
	return cl
}

// restoreStarted is a RestoreHook that calls fn when a restore starts.
type restoreStarted func()

func (f restoreStarted) OnRestoreStart(streams.RestoreEvent)    { f() }
func (f restoreStarted) OnRestoreProgress(streams.RestoreEvent) {}
func (f restoreStarted) OnRestoreEnd(streams.RestoreEvent)      {}

// messageWatch is a slog handler that calls fn when a record's message
// holds substr, and passes every record on.
type messageWatch struct {
	slog.Handler
	substr string
	fn     func()
}

func (w *messageWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, w.substr) {
		w.fn()
	}
	return w.Handler.Handle(ctx, r)
}

func (w *messageWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &messageWatch{Handler: w.Handler.WithAttrs(attrs), substr: w.substr, fn: w.fn}
}

func (w *messageWatch) WithGroup(name string) slog.Handler {
	return &messageWatch{Handler: w.Handler.WithGroup(name), substr: w.substr, fn: w.fn}
}
