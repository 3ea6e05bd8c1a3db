package streams_test

import (
	"fmt"
	"log"

	"github.com/braidstream/braid/runtime/streams"
)

// A key-value store keeps each row's timestamp: the largest timestamp of
// the records it comes from, so a late record updates the count without
// moving it back in time. The TestDriver queries as an App does.
func ExampleApp_GetWithTimestamp() {
	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "clicks-per-page"}))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, ts := range []int64{100, 120, 110} {
		if err := d.Pipe("clicks", []byte("page-1"), []byte("click"), ts); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Commit(); err != nil {
		log.Fatal(err)
	}
	row, _, _ := d.GetWithTimestamp("clicks-per-page", "page-1")
	fmt.Printf("page-1: %v clicks, the newest at %d\n", row.Value, row.Timestamp)
	// Output:
	// page-1: 3 clicks, the newest at 120
}
