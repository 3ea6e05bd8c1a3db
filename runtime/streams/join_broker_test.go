package streams_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJoinedTopicsMustBeCopartitioned checks that an App whose join reads
// topics with different partition counts stops at start with a
// *CopartitionError naming both topics and counts.
func TestJoinedTopicsMustBeCopartitioned(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "left", 3)
	createTopic(t, b, "right", 2)
	sb := streams.NewBuilder()
	sb.Stream([]string{"left"}).Join(sb.Stream([]string{"right"}), concat, streams.JoinTimeDifference(time.Second, 0)).To("out")
	topo, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	app, err := streams.New(topo, testConfig(b, "copartition"))
	if err != nil {
		t.Fatal(err)
	}
	err = runToError(t, app, 10*time.Second)
	var ce *streams.CopartitionError
	if !errors.As(err, &ce) {
		t.Fatalf("Run: %v (%T), want a *CopartitionError", err, err)
	}
	want := streams.CopartitionError{Topic: "left", Partitions: 3, OtherTopic: "right", OtherPartitions: 2}
	if *ce != want {
		t.Errorf("CopartitionError = %+v, want %+v", *ce, want)
	}
}

// TestRepartitionBeforeJoin re-keys orders by customer and joins them
// with payments keyed by customer: the orders go through a repartition
// topic, which takes the payments' partition count (3), not the orders'
// (2), so that each customer's orders and payments meet in one task.
func TestRepartitionBeforeJoin(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "orders", 2)
	createTopic(t, b, "payments", 3)
	createTopic(t, b, "paid", 1)
	sb := streams.NewBuilder()
	byCustomer := sb.Stream([]string{"orders"}).SelectKey(valueAsKey)
	byCustomer.Join(sb.Stream([]string{"payments"}), concat, streams.JoinTimeDifference(time.Hour, time.Hour)).To("paid")
	topo, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, "pay")
	cfg.DefaultKeySerde, cfg.DefaultValueSerde = streams.String, streams.String
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app)
	var recs []*kgo.Record
	var want []string
	now := time.Now()
	for i := range 12 {
		customer := fmt.Sprintf("c%d", i)
		recs = append(recs,
			&kgo.Record{Topic: "orders", Key: []byte(fmt.Sprintf("order-%d", i)), Value: []byte(customer), Timestamp: now},
			&kgo.Record{Topic: "payments", Key: []byte(customer), Value: []byte(fmt.Sprintf("pay-%d", i)), Timestamp: now.Add(time.Minute)})
		want = append(want, fmt.Sprintf("%s=%s+pay-%d", customer, customer, i))
	}
	produce(t, b, recs...)
	var got []string
	for _, r := range consumeN(t, b, "paid", len(want), 30*time.Second) {
		got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("joined %q, want %q", got, want)
	}
	details, err := admin(t, b).ListTopics(context.Background(), topo.RepartitionTopics("pay")...)
	if err != nil {
		t.Fatal(err)
	}
	for topic, d := range details {
		if len(d.Partitions) != 3 {
			t.Errorf("repartition topic %s has %d partitions, want the payments' 3", topic, len(d.Partitions))
		}
	}
	if len(details) != 1 {
		t.Errorf("repartition topics %v, want one", topo.RepartitionTopics("pay"))
	}
}
