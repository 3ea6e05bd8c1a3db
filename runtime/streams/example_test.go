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

// WindowedBy counts per key and window. Here page views are counted in
// tumbling one-minute windows that accept late views for ten seconds, and
// only each window's final count is sent, as JSON keys.
func ExampleGroupedStream_WindowedBy() {
	b := streams.NewBuilder()
	b.Stream([]string{"page-views"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		WindowedBy(streams.Tumbling(time.Minute, 10*time.Second)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "views-per-minute"})).
		ToStream().
		To("views-per-minute", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(topo.Describe())

	// What a record key of "views-per-minute" looks like.
	key, err := streams.WindowedJSON(streams.String).Serialize("views-per-minute",
		streams.Windowed{Key: "home", Start: 1700000040000, End: 1700000100000})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(key))
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [page-views])
	//       --> KSTREAM-AGGREGATE-0000000001
	//     Processor: KSTREAM-AGGREGATE-0000000001 (stores: [views-per-minute])
	//       --> KTABLE-TOSTREAM-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Processor: KTABLE-TOSTREAM-0000000002 (stores: [])
	//       --> KSTREAM-SINK-0000000003
	//       <-- KSTREAM-AGGREGATE-0000000001
	//     Sink: KSTREAM-SINK-0000000003 (topic: views-per-minute)
	//       <-- KTABLE-TOSTREAM-0000000002
	//
	// {"key":"home","start":1700000040000,"end":1700000100000}
}

// Over session windows, Aggregate needs a Merger: a record that falls
// between two sessions of a key joins them into one, and their aggregates
// are merged. Here the total amount of each customer's visit, a session
// ending after 30 minutes without an order.
func ExampleWindowedStream_MergeSessionsWith() {
	b := streams.NewBuilder()
	orders := b.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
		GroupByKey().
		WindowedBy(streams.Sessions(30*time.Minute, time.Minute))
	amount := func(order any) int64 { return int64(order.(map[string]any)["amount"].(float64)) }
	orders.
		MergeSessionsWith(func(_, total1, total2 any) (any, error) {
			return total1.(int64) + total2.(int64), nil
		}).
		Aggregate(
			func() (any, error) { return int64(0), nil },
			func(_, order, total any) (any, error) { return total.(int64) + amount(order), nil },
			streams.Named("spend-per-visit"),
			streams.Materialized(streams.StoreOptions{Name: "spend-per-visit", ValueSerde: streams.Int64})).
		ToStream().
		To("spend-per-visit", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(topo.Describe())

	// Without MergeSessionsWith the topology does not build.
	b = streams.NewBuilder()
	b.Stream([]string{"orders"}).GroupByKey().
		WindowedBy(streams.Sessions(30*time.Minute, time.Minute)).
		Aggregate(
			func() (any, error) { return int64(0), nil },
			func(_, order, total any) (any, error) { return total.(int64) + amount(order), nil })
	_, err = b.Build()
	fmt.Println(err)
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
	//       --> spend-per-visit
	//     Processor: spend-per-visit (stores: [spend-per-visit])
	//       --> KTABLE-TOSTREAM-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Processor: KTABLE-TOSTREAM-0000000002 (stores: [])
	//       --> KSTREAM-SINK-0000000003
	//       <-- spend-per-visit
	//     Sink: KSTREAM-SINK-0000000003 (topic: spend-per-visit)
	//       <-- KTABLE-TOSTREAM-0000000002
	//
	// building topology: Aggregate over session windows: no Merger; call MergeSessionsWith
}

// WindowedJSON writes windowed keys as JSON objects that consumers other
// than Kafka Streams can read; the key is written as its serde writes it.
func ExampleWindowedJSON() {
	for _, tt := range []struct {
		inner streams.Serde
		key   any
	}{
		{streams.String, "a"},
		{streams.Int64, int64(7)},
		{streams.JSON, map[string]any{"id": 1}},
	} {
		b, err := streams.WindowedJSON(tt.inner).Serialize("counts", streams.Windowed{Key: tt.key, Start: 0, End: 10})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(b))
	}
	w, err := streams.WindowedJSON(streams.Int64).Deserialize("counts", []byte(`{"key":7,"start":0,"end":10}`))
	fmt.Println(w, err)
	// Output:
	// {"key":"a","start":0,"end":10}
	// {"key":7,"start":0,"end":10}
	// {"key":{"id":1},"start":0,"end":10}
	// 7@[0,10] <nil>
}

// failoverPrinter prints every task's failover.
type failoverPrinter struct{ moved chan streams.FailoverEvent }

func (p failoverPrinter) OnTaskFailedOver(ev streams.FailoverEvent) { p.moved <- ev }

// A Supervisor runs instances of one topology in this process; crashing
// one moves its tasks to the instances holding their standbys, and each
// move is measured.
func ExampleSupervisor() {
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
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 4, 1, nil, "visits", "visit-counts"); err != nil {
		log.Fatal(err)
	}
	for i := range 400 {
		cl.Produce(ctx, &kgo.Record{Topic: "visits", Key: fmt.Appendf(nil, "page-%d", i%8), Value: []byte("visit")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	b := streams.NewBuilder()
	b.Stream([]string{"visits"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "visits-per-page"})).
		To("visit-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	stateDir, err := os.MkdirTemp("", "supervisor-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)
	moved := make(chan streams.FailoverEvent, 4)
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{
		Config: streams.Config{
			ApplicationID:   "visits",
			Brokers:         brk.Addrs(),
			StateDir:        stateDir,
			CommitInterval:  100 * time.Millisecond,
			SessionTimeout:  2 * time.Second,
			StandbyReplicas: 1,
			Hooks:           []streams.Hook{failoverPrinter{moved}},
			Logger:          testLogger(),
		},
		Instances: 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- sup.Run(runCtx) }()

	// Wait until both instances run two tasks each and every count is in.
	for {
		total, ready := int64(0), true
		for _, in := range sup.Instances() {
			ready = ready && len(in.Stats.Tasks) == 2 && len(in.Stats.Standbys) == 2
		}
		for p := range 8 {
			if v, ok, _ := sup.Get("visits-per-page", fmt.Sprintf("page-%d", p)); ok {
				total += v.(int64)
			}
		}
		if ready && total == 400 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := sup.Crash("instance-1"); err != nil {
		log.Fatal(err)
	}
	// A moved task's failover ends with the first record it processes on
	// its new instance.
	for i := range 8 {
		cl.Produce(ctx, &kgo.Record{Topic: "visits", Key: fmt.Appendf(nil, "page-%d", i), Value: []byte("visit")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		ev := <-moved
		fmt.Printf("task moved %s -> %s from its %s\n", ev.From, ev.To, ev.FromReplica)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// task moved instance-1 -> instance-2 from its standby
	// task moved instance-1 -> instance-2 from its standby
}
