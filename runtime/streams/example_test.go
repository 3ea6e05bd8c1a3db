package streams_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A topology is described in Kafka Streams' describe() format.
func ExampleTopology_Describe() {
	b := streams.NewBuilder()
	b.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
		Filter(func(_, v any) (bool, error) { return v.(map[string]any)["amount"].(float64) >= 100, nil }, streams.Named("big")).
		SelectKey(func(_, v any) (any, error) { return v.(map[string]any)["customer"], nil }).
		Repartition(streams.Named("by-customer")).
		To("big-orders-by-customer")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(topo.Describe())
	fmt.Println(topo.RepartitionTopics("shop"))
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
	//       --> big
	//     Processor: big (stores: [])
	//       --> KSTREAM-KEY-SELECT-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
	//       --> by-customer-repartition-filter
	//       <-- big
	//     Processor: by-customer-repartition-filter (stores: [])
	//       --> by-customer-repartition-sink
	//       <-- KSTREAM-KEY-SELECT-0000000002
	//     Sink: by-customer-repartition-sink (topic: by-customer-repartition)
	//       <-- by-customer-repartition-filter
	//
	//   Sub-topology: 1
	//     Source: by-customer-repartition-source (topics: [by-customer-repartition])
	//       --> KSTREAM-SINK-0000000006
	//     Sink: KSTREAM-SINK-0000000006 (topic: big-orders-by-customer)
	//       <-- by-customer-repartition-source
	//
	// [shop-by-customer-repartition]
}

// An App runs a topology as one member of the application's consumer
// group; here against the embedded broker.
func ExampleApp() {
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
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "words", "shouted"); err != nil {
		log.Fatal(err)
	}
	for _, w := range []string{"hello", "stream", "hi", "world"} {
		cl.ProduceSync(ctx, &kgo.Record{Topic: "words", Key: []byte(w), Value: []byte(w)})
	}

	b := streams.NewBuilder()
	b.Stream([]string{"words"}, streams.WithSerdes(streams.String, streams.String)).
		FilterNot(func(_, v any) (bool, error) { return len(v.(string)) < 3, nil }).
		MapValues(func(v any) (any, error) { return strings.ToUpper(v.(string)) + "!", nil }).
		To("shouted", streams.WithSerdes(streams.String, streams.String))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	app, err := streams.New(topo, streams.Config{
		ApplicationID:  "shout",
		Brokers:        brk.Addrs(),
		CommitInterval: 100 * time.Millisecond,
		Logger:         testLogger(),
	})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	out, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics("shouted"))
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	var got []string
	for len(got) < 3 {
		out.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	app.Close()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	slices.Sort(got)
	fmt.Println(got)
	// Output:
	// [hello=HELLO! stream=STREAM! world=WORLD!]
}

// JSONTimestamp takes event time from a field of the value.
func ExampleJSONTimestamp() {
	extract := streams.JSONTimestamp("ts")
	for _, value := range []any{
		map[string]any{"ts": float64(1700000000000)},
		[]byte(`{"ts":"2023-11-14T22:13:20Z"}`),
		map[string]any{"id": 1},
	} {
		ts, err := extract(nil, value, 0)
		fmt.Println(ts, err)
	}
	// Output:
	// 1700000000000 <nil>
	// 1700000000000 <nil>
	// 0 timestamp field "ts" is missing
}

// Count keeps a count per key in a pebble store, logged to a changelog
// topic, and answers interactive queries.
func ExampleGroupedStream_Count() {
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
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "page-views"); err != nil {
		log.Fatal(err)
	}
	for _, page := range []string{"home", "docs", "home", "blog", "home", "docs"} {
		cl.ProduceSync(ctx, &kgo.Record{Topic: "page-views", Key: []byte(page), Value: []byte("view")})
	}

	b := streams.NewBuilder()
	views := b.Stream([]string{"page-views"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "views-per-page"}))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	stateDir, err := os.MkdirTemp("", "braid-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)
	app, err := streams.New(topo, streams.Config{
		ApplicationID:  "page-stats",
		Brokers:        brk.Addrs(),
		StateDir:       stateDir,
		CommitInterval: 50 * time.Millisecond,
		Logger:         testLogger(),
	})
	if err != nil {
		log.Fatal(err)
	}
	go app.Run(ctx)
	defer app.Close()

	// Queries read committed state: wait until the last view is counted.
	for {
		if n, ok, _ := app.Get(views.StoreName(), "docs"); ok && n.(int64) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	app.Range(views.StoreName(), nil, nil, func(page, n any) bool {
		fmt.Println(page, n)
		return true
	})
	// Unordered output:
	// blog 1
	// docs 2
	// home 3
}
