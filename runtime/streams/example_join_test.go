package streams_test

import (
	"fmt"
	"log"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// printOutput prints what a TestDriver's topology wrote to topic.
func printOutput(d *streams.TestDriver, topic string) {
	for _, r := range d.ReadOutput(topic) {
		fmt.Printf("%s %s @%d\n", r.Key, r.Value, r.Timestamp)
	}
}

// A left join of two streams pairs each order with the payments of its
// customer made within a minute of it; an order that got none by the time
// its window closed is sent alone.
func ExampleStream_LeftJoin() {
	b := streams.NewBuilder()
	orders := b.Stream([]string{"orders"})
	payments := b.Stream([]string{"payments"})
	orders.LeftJoin(payments, func(_, order, payment any) (any, error) {
		if payment == nil {
			return order.(string) + " unpaid", nil
		}
		return order.(string) + " paid " + payment.(string), nil
	}, streams.JoinTimeDifference(time.Minute, 10*time.Second)).To("settled")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	const sec = 1000
	d.Pipe("orders", []byte("ann"), []byte("order-1"), 0)
	d.Pipe("orders", []byte("bob"), []byte("order-2"), 5*sec)
	d.Pipe("payments", []byte("ann"), []byte("$10"), 30*sec)
	// Stream time passes 5s+1m+10s: bob's order is due, unpaid.
	d.Pipe("payments", []byte("cid"), []byte("$99"), 76*sec)
	printOutput(d, "settled")
	// Output:
	// ann order-1 paid $10 @30000
	// bob order-2 unpaid @5000
}

// A stream joined with a table looks each record's key up in the table as
// it is when the record is processed.
func ExampleStream_JoinTable() {
	b := streams.NewBuilder()
	customers := b.Table("customers", streams.Materialized(streams.StoreOptions{CachingDisabled: true}))
	b.Stream([]string{"orders"}).
		LeftJoinTable(customers, func(_, order, name any) (any, error) {
			return fmt.Sprintf("%v for %v", order, name), nil
		}).
		To("orders-with-names")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Pipe("orders", []byte("c1"), []byte("order-1"), 1)
	d.Pipe("customers", []byte("c1"), []byte("Ann"), 2)
	d.Pipe("orders", []byte("c1"), []byte("order-2"), 3)
	printOutput(d, "orders-with-names")
	// Output:
	// c1 order-1 for <nil> @1
	// c1 order-2 for Ann @3
}

// A table filtered with Materialized keeps the rows that pass in a store
// of its own, so that a stream can join it: here orders meet only the
// customers that are active.
func ExampleTable_Filter() {
	b := streams.NewBuilder()
	uncached := streams.StoreOptions{CachingDisabled: true}
	active := b.Table("customers", streams.Materialized(uncached)).
		Filter(func(_, status any) (bool, error) { return status == "active", nil },
			streams.Materialized(streams.StoreOptions{Name: "active-customers", CachingDisabled: true}))
	b.Stream([]string{"orders"}).
		JoinTable(active, func(customer, order, _ any) (any, error) {
			return fmt.Sprintf("%v from active %v", order, customer), nil
		}).
		To("active-orders")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Pipe("customers", []byte("ann"), []byte("active"), 1)
	d.Pipe("customers", []byte("bob"), []byte("closed"), 2)
	d.Pipe("orders", []byte("ann"), []byte("order-1"), 3)
	d.Pipe("orders", []byte("bob"), []byte("order-2"), 4)
	d.Pipe("customers", []byte("ann"), []byte("closed"), 5)
	d.Pipe("orders", []byte("ann"), []byte("order-3"), 6)
	printOutput(d, "active-orders")
	// Output:
	// ann order-1 from active ann @3
}

// Two tables joined are a table that changes with either: a deleted row
// deletes the joined row (a nil value).
func ExampleTable_Join() {
	b := streams.NewBuilder()
	uncached := streams.Materialized(streams.StoreOptions{CachingDisabled: true})
	names := b.Table("names", uncached)
	cities := b.Table("cities", uncached)
	names.Join(cities, func(_, name, city any) (any, error) {
		return fmt.Sprintf("%v in %v", name, city), nil
	}).ToStream().To("people")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Pipe("names", []byte("p1"), []byte("Ann"), 1)
	d.Pipe("cities", []byte("p1"), []byte("Oslo"), 2)
	d.Pipe("cities", []byte("p1"), []byte("Rome"), 3)
	d.Pipe("names", []byte("p1"), nil, 4)
	printOutput(d, "people")
	// Output:
	// p1 Ann in Oslo @2
	// p1 Ann in Rome @3
	// p1  @4
}
