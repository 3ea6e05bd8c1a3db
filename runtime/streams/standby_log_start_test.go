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

const (
	logStartApp       = "standby-log-start"
	logStartStore     = "users"
	logStartChangelog = logStartApp + "-" + logStartStore + "-changelog"
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
	b := startBroker(t)
	createTopic(t, b, "users", 1)
	aApp, _ := startUsersTable(t, b, "a", t.TempDir())
	waitFor(t, 60*time.Second, "a running the task", func() bool { return runsOneTask(aApp) })
	bDir := t.TempDir()
	bApp, stopB := startUsersTable(t, b, "b", bDir)
	produce(t, b, &kgo.Record{Topic: "users", Key: []byte("gone"), Value: []byte("v1")})
	waitFor(t, 60*time.Second, "b's standby holding the row", standbyHolds(bApp, "gone"))
	if err := stopB(); err != nil {
		t.Fatal(err)
	}

	deleteRowAndLogStart(t, b)

	bApp, _ = startUsersTable(t, b, "b", bDir)
	waitFor(t, 60*time.Second, "b's standby back at lag 0 with the other row", standbyHolds(bApp, "other"))
	if res, err := bApp.LookupKey(logStartStore, "gone", true); err != nil || res.Found {
		t.Fatalf("b's standby answers %+v, %v for the row deleted before the log start; want not found", res, err)
	}

	// The failover: b's stores become the active's.
	aApp.Close()
	waitFor(t, 60*time.Second, "b running the task", func() bool { return runsOneTask(bApp) })
	if v, found, err := bApp.Get(logStartStore, "gone"); err != nil || found {
		t.Fatalf("after the failover, b's store answers %v, %v, %v for the deleted row; want not found", v, found, err)
	}
}

// TestStandbyFallingBehindLogStart is TestStandbyCheckpointBeforeLogStart
// with a standby that keeps following but too slowly: its fetches stop
// while the row is deleted and the changelog's records before the next
// one are deleted. Its consumer is reset to the log start, and the
// standby must empty its store rather than apply the log start's records
// on top of its stale rows.
func TestStandbyFallingBehindLogStart(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "users", 1)
	aApp, _ := startUsersTable(t, b, "a", t.TempDir())
	waitFor(t, 60*time.Second, "a running the task", func() bool { return runsOneTask(aApp) })
	bApp, _ := startUsersTable(t, b, "b", t.TempDir())
	produce(t, b, &kgo.Record{Topic: "users", Key: []byte("gone"), Value: []byte("v1")})
	waitFor(t, 60*time.Second, "b's standby holding the row", standbyHolds(bApp, "gone"))

	streams.PauseStandbyFetches(bApp)
	deleteRowAndLogStart(t, b)
	streams.ResumeStandbyFetches(bApp)

	waitFor(t, 60*time.Second, "b's standby at lag 0 with the other row", standbyHolds(bApp, "other"))
	if res, err := bApp.LookupKey(logStartStore, "gone", true); err != nil || res.Found {
		t.Fatalf("b's standby answers %+v, %v for the row deleted before the log start; want not found", res, err)
	}
}

// startUsersTable runs instance id of an App that keeps topic users as a
// table, with a standby of each task, its state in dir.
func startUsersTable(t *testing.T, b *brokertest.Cluster, id, dir string) (*streams.App, func() error) {
	t.Helper()
	builder := streams.NewBuilder()
	builder.Table("users", streams.WithSerdes(streams.String, streams.String),
		streams.Materialized(streams.StoreOptions{Name: logStartStore, CachingDisabled: true}))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, logStartApp)
	cfg.InstanceID, cfg.StateDir, cfg.StandbyReplicas = id, dir, 1
	cfg.Logger = failureLog(t)
	a, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, runApp(t, a)
}

func runsOneTask(a *streams.App) bool {
	st := a.Stats()
	return st.State == streams.Running && len(st.Tasks) == 1 && !st.Tasks[0].Restoring
}

// standbyHolds reports whether a keeps the standby of key's task, at lag
// 0, holding key.
func standbyHolds(a *streams.App, key string) func() bool {
	return func() bool {
		res, err := a.LookupKey(logStartStore, key, true)
		return err == nil && res.Standby && res.Lag == 0 && res.Found
	}
}

// deleteRowAndLogStart deletes the row "gone" (offset 0 of the changelog)
// and writes the row "other"; then the changelog loses everything before
// the other row, the tombstone included.
func deleteRowAndLogStart(t *testing.T, b *brokertest.Cluster) {
	t.Helper()
	produce(t, b,
		&kgo.Record{Topic: "users", Key: []byte("gone")},
		&kgo.Record{Topic: "users", Key: []byte("other"), Value: []byte("v2")})
	waitFor(t, 60*time.Second, "the tombstone and the other row in the changelog", func() bool {
		return endOffsets(t, b, logStartChangelog)[0] == 3
	})
	deleteRecordsBefore(t, b, logStartChangelog, 2)
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
