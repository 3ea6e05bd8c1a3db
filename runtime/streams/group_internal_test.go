package streams

import (
	"context"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Under exactly-once the group can ask this instance to lead its first
// rebalance while the App still waits for its producer id, before the
// group client is the App's (seen on Apache Kafka). The balancer must
// still learn the changelogs' ends, or it places every task by the state
// members report.
func TestListEndsBeforeTheGroupClient(t *testing.T) {
	b := brokertest.Start(t, broker.Config{})
	const topic = "ends-before-client-changelog"
	cl, err := kgo.NewClient(append(b.ClientOptions(), kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	a := cleanupApp(t, 0)
	a.cfg.Brokers = b.Addrs()
	a.cfg.ClientOptions = b.ClientOptions()
	if a.kc() != nil {
		t.Fatal("the App has a group client before it started")
	}
	ends, err := a.listEnds(ctx, []string{topic})
	if err != nil {
		t.Fatalf("listing ends before the group client: %v", err)
	}
	if got := ends[topic]; got[0] != 0 || got[1] != 3 {
		t.Errorf("ends %v, want partition 0 at 0 and 1 at 3", got)
	}
}

// A transaction left open on a changelog (a crashed owner's) holds its
// LSO back but is not waited for: awaitCommitMarkers returns the LSO at
// once. heldBack finds it among the transactions in the Ongoing state:
// the producers that hold a partition back, and their coordinators'
// states, are learned from the broker as a committing one's would be.
func TestAwaitCommitMarkersSkipsOpenTransactions(t *testing.T) {
	b := brokertest.Start(t, broker.Config{})
	const topic = "markers-changelog"
	ctx := context.Background()
	txnClient := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(append(b.ClientOptions(), kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic),
			kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	committed, open := txnClient("markers-committed"), txnClient("markers-open")
	adm := kadm.NewClient(committed)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	listLSOs := func() kadm.ListedOffsets {
		lsos, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = lsos.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return lsos
	}
	// Two records and a commit marker first. EndTransaction returns once
	// the coordinator has decided; Apache Kafka writes the marker after
	// that (the very race awaitCommitMarkers exists for), so the test
	// waits for the LSO to pass the marker before it opens the other
	// transaction: a record of that one written before the marker would
	// hold the LSO at 2 for good (seen on Kafka).
	if err := committed.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := committed.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := committed.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		lso, _ := listLSOs().Lookup(topic, 1)
		if lso.Offset == 3 {
			break
		}
		if lso.Offset > 3 || time.Now().After(deadline) {
			t.Fatalf("LSO of %s/1 after the committed transaction is %d, want 3", topic, lso.Offset)
		}
		time.Sleep(markerPoll)
	}
	// Then the open transaction's record, at 3, which holds the LSO there.
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lsos := listLSOs()
	if lso, _ := lsos.Lookup(topic, 1); lso.Offset != 3 {
		t.Fatalf("LSO of %s/1 with a transaction open at 3 is %d, want 3", topic, lso.Offset)
	}

	held, behind, err := heldBack(ctx, adm, lsos, []string{"Ongoing"})
	if err != nil || !behind {
		t.Fatalf("heldBack: behind %v, %v; want the LSO of %s/1 below its end", behind, err, topic)
	}
	if len(held) != 1 || held[0].Topic != topic || held[0].Partition != 1 || held[0].State != "Ongoing" {
		t.Fatalf("held back by Ongoing transactions: %v, want %s/1 alone", held, topic)
	}
	if held, _, err := heldBack(ctx, adm, lsos, committingStates); err != nil || len(held) != 0 {
		t.Fatalf("held back by committing transactions: %v (%v), want none", held, err)
	}

	a := cleanupApp(t, 0)
	a.cfg.Brokers = b.Addrs()
	a.cfg.ClientOptions = b.ClientOptions()
	ends, err := a.awaitCommitMarkers(ctx, adm, lsos)
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := ends.Lookup(topic, 1); end.Offset != 3 {
		t.Errorf("restore end of %s/1 is %d, want the LSO, 3", topic, end.Offset)
	}

	// A checkpoint past the LSO (3) within the log (end 4) is a committed
	// transaction's whose marker is late, under exactly-once: the store
	// is not rebuilt. Past the log's end, or at-least-once, it is.
	st := &taskStore{changelog: topic, partition: 1}
	a.txn = &transactions{}
	for _, c := range []struct {
		checkpoint int64
		want       bool
	}{{4, true}, {5, false}} {
		if got := a.aheadOfStableOffset(ctx, adm, st, c.checkpoint); got != c.want {
			t.Errorf("exactly-once, checkpoint %d: ahead of the LSO within the log = %v, want %v", c.checkpoint, got, c.want)
		}
	}
	a.txn = nil
	if a.aheadOfStableOffset(ctx, adm, st, 4) {
		t.Error("at-least-once: a checkpoint past the end offset is not kept")
	}
}

// The rebalance timeout the App's member sends is below the bound of its
// own join by a session timeout: the coordinator drops a member that died
// during a join before the live members give their joins up. With
// franz-go's 60 s default, members giving up at joinTimeout and joining
// again restarted the wait for the dead one each time (kfake restarts it
// at every join), and a chaos run's group never completed.
func TestRebalanceTimeoutIsBelowTheJoinBound(t *testing.T) {
	b := brokertest.Start(t, broker.Config{})
	for _, tc := range []struct {
		name         string
		session, txn time.Duration
	}{
		{"defaults", 0, 0},
		{"chaos worker", 3 * time.Second, 0},
		{"long session", 45 * time.Second, 0},
		{"long transaction timeout", 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := cleanupApp(t, 0)
			a.cfg.Brokers = b.Addrs()
			a.cfg.ClientOptions = b.ClientOptions()
			a.cfg.SessionTimeout, a.cfg.HeartbeatInterval, a.cfg.TransactionTimeout = tc.session, 0, tc.txn
			a.cfg = a.cfg.WithDefaults()
			a.clientCtx, a.clientCancel = context.WithCancel(context.Background())
			defer a.clientCancel()
			if err := a.startClient(); err != nil {
				t.Fatal(err)
			}
			defer a.kc().Close()
			sent := a.kc().OptValue(kgo.RebalanceTimeout).(time.Duration)
			if sent != a.rebalanceTimeout() || sent+a.cfg.SessionTimeout > a.joinTimeout() {
				t.Errorf("session %v, transaction timeout %v: the member sends a rebalance timeout of %v (want %v) and gives a join up after %v: want the join bound a session timeout above it",
					a.cfg.SessionTimeout, a.cfg.TransactionTimeout, sent, a.rebalanceTimeout(), a.joinTimeout())
			}
		})
	}
}
