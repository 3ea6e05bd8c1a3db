package broker_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Start an in-memory broker on a free loopback port and use it with any
// Kafka client.
func ExampleStart() {
	b, err := broker.Start(broker.Config{Partitions: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	// Topics are created on first use when the client asks for it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "greetings", Value: []byte("hello")}).FirstErr(); err != nil {
		log.Fatal(err)
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "greetings")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(b.Addr(), "127.0.0.1:"), len(topics["greetings"].Partitions))
	// Output: true 3
}
