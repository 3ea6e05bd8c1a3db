package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/braidstream/braid/datagen"
	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// stateDemoID is the state demo design's id, and stateDemoTopic the topic
// it reads.
const (
	stateDemoID    = "customer-totals"
	stateDemoTopic = "customer-orders"
)

// defaultStateDemoKeys is --state-demo-keys' default: customers enough
// that the live page draws a full restore of their counts rising several
// times (at the 1.4M records/s measured in December 2026 it takes about
// 0.4 s), while the embedded broker's memory stays small.
const defaultStateDemoKeys = 500_000

// loadStateDemo saves the state demo design into a new store.
func loadStateDemo(store *designer.Store) error {
	_, _, err := store.Import(stateDemoDesign)
	return err
}

// deployStateDemo deploys the state demo on one instance with no standby
// (a lost disk then restores every row from the changelog), writes one
// order for each of keys customers, and starts a generator of 20 orders a
// second over them. Its topic has one partition: the restore is one
// task's, one bar that takes the whole restore's time, rather than four
// that each take a quarter of it. Run is running (Ready closed).
func deployStateDemo(ctx context.Context, m *deploy.Manager, brokers []string, opts []kgo.Opt, keys int) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("connecting to seed the state demo: %w", err)
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, stateDemoTopic); err != nil {
		return err
	}
	if _, err := m.Deploy(deploy.Request{Design: stateDemoID, Instances: 1, Standbys: new(0)}); err != nil {
		return err
	}
	if err := seedCustomers(ctx, cl, keys); err != nil {
		return err
	}
	return m.StartGenerator(stateDemoID, deploy.GeneratorSpec{Topic: stateDemoTopic, Rate: 20, Keys: keys, KeyPrefix: "customer", Template: demoOrder()})
}

// createTopic creates topic with one partition and the cluster's
// replication factor, unless it exists.
func createTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	return nil
}

// seedHeaders mark the seeded orders as the generator's records
// (datagen.GeneratorHeader): they are Braid's, and the state demo's
// generator, which refuses a topic another producer feeds, starts on them.
var seedHeaders = []kgo.RecordHeader{{Key: datagen.GeneratorHeader, Value: []byte("state-demo seed")}}

// seedCustomers writes one order for each of customers customer-0 ..
// customer-(n-1) to the state demo's topic, shaped as the generator's.
func seedCustomers(ctx context.Context, cl *kgo.Client, n int) error {
	now := time.Now().UnixMilli()
	var (
		mu     sync.Mutex
		failed error
	)
	for i := range n {
		customer := "customer-" + strconv.Itoa(i)
		value, err := json.Marshal(map[string]any{"id": i, "customer": customer, "amount": 1 + i%500, "ts": now})
		if err != nil {
			return fmt.Errorf("seeding %s: %w", stateDemoTopic, err)
		}
		cl.Produce(ctx, &kgo.Record{Topic: stateDemoTopic, Key: []byte(customer), Value: value, Headers: seedHeaders}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("seeding %s: %w", stateDemoTopic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return fmt.Errorf("seeding %s: %w", stateDemoTopic, failed)
	}
	return nil
}
