package streams_test

import (
	"fmt"

	"github.com/braidstream/braid/runtime/streams"
)

// The names the Builder generated, as Kafka Streams would: a caller that
// maps its own description of a topology to the operators learns them
// from the values its calls return.
func ExampleStream_Name() {
	b := streams.NewBuilder()
	orders := b.Stream([]string{"orders"})
	big := orders.Filter(func(_, v any) (bool, error) { return v != nil, nil })
	named := big.MapValues(func(v any) (any, error) { return v, nil }, streams.Named("amounts"))
	customers := b.Table("customers")
	fmt.Println(orders.Name())
	fmt.Println(big.Name())
	fmt.Println(named.Name())
	fmt.Println(customers.Name(), customers.StoreName())
	// Output:
	// KSTREAM-SOURCE-0000000000
	// KSTREAM-FILTER-0000000001
	// amounts
	// KTABLE-SOURCE-0000000005 customers-STATE-STORE-0000000003
}

// Added tells every operator and store a call made: here the repartition
// an aggregation after a key change needs, and the aggregation's store.
func ExampleBuilder_Added() {
	b := streams.NewBuilder()
	grouped := b.Stream([]string{"orders"}).
		SelectKey(func(_, v any) (any, error) { return v, nil }).
		GroupByKey()
	mark := b.Mark()
	counts := grouped.Count()
	added := b.Added(mark)
	fmt.Println(added.Operators)
	fmt.Println(added.Stores)
	fmt.Println(counts.Name(), grouped.Name())
	// Output:
	// [KSTREAM-FILTER-0000000005 KSTREAM-SINK-0000000004 KSTREAM-SOURCE-0000000006 KSTREAM-AGGREGATE-0000000003]
	// [KSTREAM-AGGREGATE-STATE-STORE-0000000002]
	// KSTREAM-AGGREGATE-0000000003 KSTREAM-KEY-SELECT-0000000001
}
