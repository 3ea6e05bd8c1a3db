package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStandbyCheckpointBeforeLogStart restarts a standby whose checkpoint
// is before its changelog's log start: the active deleted a row while the
// standby was down, and the changelog's records up to past the tombstone
// were deleted. The standby must not keep the deleted row, nor hand it to
// the active it becomes at a failover: the records between its checkpoint
// and the log start are gone, so it starts empty from the log start, as a
// restore does. It used to apply the log start's records on top of its
// stale rows.
func TestStandbyCheckpointBeforeLogStart(t *testing.T) {
	const app, store = "standby-log-start", "users"
	const changelog = app + "-" + store + "-changelog"
	b := startBroker(t)
	createTopic(t, b, "users", 1)
	start := func(id, dir string) (*streams.App, func() error) {
		builder := streams.NewBuilder()
		builder.Table("users", streams.WithSerdes(streams.String, streams.String),
			streams.Materialized(streams.StoreOptions{Name: store, CachingDisabled: true}))
		topo, err := builder.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(b, app)
		cfg.InstanceID, cfg.StateDir, cfg.StandbyReplicas = id, dir, 1
		cfg.Logger = failureLog(t)
		a, err := streams.New(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, runApp(t, a)
	}
	lookup := func(a *streams.App, key string) streams.KeyLookup {
		res, err := a.LookupKey(store, key, true)
		if err != nil {
			return streams.KeyLookup{Lag: -1}
		}
		return res
	}
	// caughtUp: b keeps the standby, at lag 0, and it holds key.
	caughtUp := func(bApp *streams.App, key string) func() bool {
		return func() bool {
			res := lookup(bApp, key)
			return res.Standby && res.Lag == 0 && res.Found
		}
	}

	aApp, _ := start("a", t.TempDir())
	waitFor(t, 60*time.Second, "a running the task", func() bool {
		st := aApp.Stats()
		return st.State == streams.Running && len(st.Tasks) == 1
	})
	bDir := t.TempDir()
	bApp, stopB := start("b", bDir)
	produce(t, b, &kgo.Record{Topic: "users", Key: []byte("gone"), Value: []byte("v1")})
	waitFor(t, 60*time.Second, "b's standby holding the row", caughtUp(bApp, "gone"))
	if err := stopB(); err != nil {
		t.Fatal(err)
	}

	// While b is down, the row is deleted and another written; then the
	// changelog loses everything before the other row.
	produce(t, b,
		&kgo.Record{Topic: "users", Key: []byte("gone")},
		&kgo.Record{Topic: "users", Key: []byte("other"), Value: []byte("v2")})
	waitFor(t, 60*time.Second, "the tombstone and the other row in the changelog", func() bool {
		return endOffsets(t, b, changelog)[0] == 3
	})
	deleteRecordsBefore(t, b, changelog, 2)

	bApp, _ = start("b", bDir)
	waitFor(t, 60*time.Second, "b's standby back at lag 0 with the other row", caughtUp(bApp, "other"))
	if res := lookup(bApp, "gone"); res.Found {
		t.Fatalf("b's standby holds the row deleted at an offset before the log start: %+v", res)
	}

	// The failover: b's stores become the active's.
	aApp.Close()
	waitFor(t, 60*time.Second, "b running the task", func() bool {
		st := bApp.Stats()
		return st.State == streams.Running && len(st.Tasks) == 1 && !st.Tasks[0].Restoring
	})
	if v, found, err := bApp.Get(store, "gone"); err != nil || found {
		t.Fatalf("after the failover, b's store answers %v, %v, %v for the deleted row; want not found", v, found, err)
	}
}

// deleteRecordsBefore deletes the records of topic's partition 0 before
// offset, moving its log start there. Kafka deletes records only from a
// topic with the delete policy, as a windowed store's changelog has
// (compact,delete).
func deleteRecordsBefore(t *testing.T, b *brokertest.Cluster, topic string, offset int64) {
	t.Helper()
	ctx := context.Background()
	alter, err := admin(t, b).AlterTopicConfigs(ctx,
		[]kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("compact,delete")}}, topic)
	if err == nil {
		_, err = alter.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("setting %s's cleanup.policy to compact,delete: %v", topic, err)
	}
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	resp, err := admin(t, b).DeleteRecords(ctx, to)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting the records of %s before %d: %v", topic, offset, err)
	}
}
