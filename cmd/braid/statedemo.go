package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/braidstream/braid/datagen"
	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stateDemoDesign is the state demo, loaded into a new design store beside
// the demo when --state-demo-keys is not 0: customer-orders -> group by
// key -> count (store orders-per-customer) -> to-stream -> sink. Its store
// holds one row per customer, --state-demo-keys of them, so that an
// instance that loses its disk ("crash + wipe disk" on the live page)
// restores enough of the changelog to watch.
//
//go:embed customer-totals.json
var stateDemoDesign []byte

// stateDemoID is the state demo design's id.
const stateDemoID = "customer-totals"

// defaultStateDemoKeys is --state-demo-keys' default: customers enough
// that a full restore of their counts takes seconds, not a blink.
const defaultStateDemoKeys = 500_000

// loadStateDemo saves the state demo design into a new store.
func loadStateDemo(store *designer.Store) error {
	_, _, err := store.Import(stateDemoDesign)
	return err
}

// deployStateDemo deploys the state demo on one instance with no standby
// (a lost disk then restores every row from the changelog), writes one
// order for each of keys customers, and starts a generator of 20 orders a
// second over them. Run is running (Ready closed).
func deployStateDemo(ctx context.Context, m *deploy.Manager, brokers []string, opts []kgo.Opt, keys int) error {
	if _, err := m.Deploy(deploy.Request{Design: stateDemoID, Instances: 1, Standbys: new(0)}); err != nil {
		return err
	}
	if err := seedCustomers(ctx, brokers, opts, keys); err != nil {
		return err
	}
	return m.StartGenerator(stateDemoID, deploy.GeneratorSpec{Topic: "customer-orders", Rate: 20, Keys: keys, KeyPrefix: "customer", Template: demoOrder()})
}

// seedHeaders mark the seeded orders as the generator's records
// (datagen.GeneratorHeader): they are Braid's, and the state demo's
// generator, which refuses a topic another producer feeds, starts on them.
var seedHeaders = []kgo.RecordHeader{{Key: datagen.GeneratorHeader, Value: []byte("state-demo seed")}}

// seedCustomers writes one order for each of customers customer-0 ..
// customer-(n-1) to customer-orders, shaped as the generator's.
func seedCustomers(ctx context.Context, brokers []string, opts []kgo.Opt, n int) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("seeding customer-orders: %w", err)
	}
	defer cl.Close()
	now := time.Now().UnixMilli()
	var (
		mu     sync.Mutex
		failed error
	)
	for i := range n {
		customer := "customer-" + strconv.Itoa(i)
		value, err := json.Marshal(map[string]any{"id": i, "customer": customer, "amount": 1 + i%500, "ts": now})
		if err != nil {
			return fmt.Errorf("seeding customer-orders: %w", err)
		}
		cl.Produce(ctx, &kgo.Record{Topic: "customer-orders", Key: []byte(customer), Value: value, Headers: seedHeaders}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("seeding customer-orders: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return fmt.Errorf("seeding customer-orders: %w", failed)
	}
	return nil
}
