package streams_test

import (
	"fmt"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// The internal topics and stores an App creates for a topology, before it
// runs: what `braid compile` prints.
func ExampleTopology_InternalTopics() {
	b := streams.NewBuilder()
	orders := b.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
		SelectKey(func(_, v any) (any, error) { return v.(map[string]any)["customer"], nil })
	orders.GroupByKey().Count(streams.Materialized(streams.StoreOptions{Name: "per-customer"}))
	orders.GroupByKey(streams.Named("by-customer-10s")).
		WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-10s", CachingDisabled: true}))
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	for _, it := range topo.InternalTopics("shop") {
		fmt.Printf("%s %s partitions=%d of %v cleanup=%s retention=%v store=%q\n",
			it.Kind, it.Name, it.Partitions, it.PartitionsOf, it.CleanupPolicy, it.Retention, it.Store)
	}
	for _, s := range topo.Stores() {
		fmt.Printf("store %s: %s of %s in sub-topology %d, logged=%v cached=%v retention=%v grace=%v emit-on-close=%v\n",
			s.Name, s.Type, s.Processor, s.Subtopology, s.Logged, s.Cached, s.Retention, s.Grace, s.EmitOnClose)
	}
	// Output:
	// repartition shop-per-customer-repartition partitions=0 of [orders] cleanup=delete retention=0s store=""
	// repartition shop-by-customer-10s-repartition partitions=0 of [orders] cleanup=delete retention=0s store=""
	// changelog shop-per-customer-changelog partitions=0 of [shop-per-customer-repartition] cleanup=compact retention=0s store="per-customer"
	// changelog shop-per-10s-changelog partitions=0 of [shop-by-customer-10s-repartition] cleanup=compact,delete retention=24h0m15s store="per-10s"
	// store per-customer: key-value of KSTREAM-AGGREGATE-0000000002 in sub-topology 1, logged=true cached=true retention=0s grace=0s emit-on-close=false
	// store per-10s: window of KSTREAM-AGGREGATE-0000000006 in sub-topology 2, logged=true cached=false retention=15s grace=5s emit-on-close=true
}
