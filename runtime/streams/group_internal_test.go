package streams

import (
	"context"
	"testing"

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
