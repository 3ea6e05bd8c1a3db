package streams_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// QueryMetadata says where a key lives: the partition its records go to,
// the task of that partition and the member running it, with the server
// that member advertised. LookupKey then reads the key from this
// instance's copy of that task; with stale true a standby's copy would
// do too, and would say how far behind it is.
func ExampleApp_QueryMetadata() {
	brk, err := broker.Start(broker.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer brk.Close()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 4, 1, nil, "clicks"); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Key: []byte("user-7"), Value: []byte("click")})
	}
	stateDir, err := os.MkdirTemp("", "query-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)

	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "per-user"}))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	app, err := streams.New(topo, streams.Config{
		ApplicationID:     "clicks",
		InstanceID:        "node-1",
		ApplicationServer: "node-1.example:7070",
		Brokers:           brk.Addrs(),
		StateDir:          stateDir,
		CommitInterval:    100 * time.Millisecond,
		Logger:            testLogger(),
	})
	if err != nil {
		log.Fatal(err)
	}
	var none *streams.NoAssignmentError
	_, err = app.QueryMetadata("per-user", "user-7")
	fmt.Println("before the first rebalance:", errors.As(err, &none))
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	var got streams.KeyLookup
	for !got.Found || got.Row.Value != int64(3) {
		time.Sleep(10 * time.Millisecond)
		got, _ = app.LookupKey("per-user", "user-7", false)
	}
	md, err := app.QueryMetadata("per-user", "user-7")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("user-7: partition %d, task %s, active %s on %s\n", md.Partition, md.Task, md.Active.InstanceID, md.Active.Server)
	fmt.Printf("read from %s (standby: %v): %v clicks\n", got.Instance, got.Standby, got.Row.Value)
	_, err = app.QueryMetadata("no-such-store", "user-7")
	fmt.Println(err)
	app.Close()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// before the first rebalance: true
	// user-7: partition 0, task 0_0, active node-1 on node-1.example:7070
	// read from node-1 (standby: false): 3 clicks
	// querying store "no-such-store": no such store in the topology
}
