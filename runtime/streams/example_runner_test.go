package streams_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// syncBuffer is a bytes.Buffer a Runner writes to while the example reads
// it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A Runner runs a process's instances of an application, as braid run
// and exported programs do: it creates the missing sink topic, waits for
// the source topic, names each instance after InstanceID, and stops them
// gracefully when its context ends.
func ExampleRunner() {
	brk, err := broker.Start(broker.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer brk.Close()
	stateDir, err := os.MkdirTemp("", "runner-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)

	b := streams.NewBuilder()
	b.Stream([]string{"words"}, streams.WithSerdes(streams.String, streams.String)).
		MapValues(func(v any) (any, error) { return strings.ToUpper(v.(string)), nil }).
		To("shouted", streams.WithSerdes(streams.String, streams.String))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	var out syncBuffer
	r, err := streams.NewRunner(topo, streams.RunnerConfig{
		Config: streams.Config{
			ApplicationID:  "shout",
			Brokers:        brk.Addrs(),
			StateDir:       stateDir,
			CommitInterval: 100 * time.Millisecond,
			Logger:         testLogger(),
		},
		InstanceID: "node",
		Instances:  2,
		Out:        &out,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics("shouted"))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	for !strings.Contains(out.String(), "waiting for source topic") {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "words"); err != nil {
		log.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "words", Key: []byte("w"), Value: []byte("hello")}).FirstErr(); err != nil {
		log.Fatal(err)
	}
	var got string
	for got == "" {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { got = string(rec.Value) })
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	fmt.Print(strings.NewReplacer(brk.Addr(), "ADDR", stateDir, "DIR").Replace(out.String()))
	// Output:
	// HELLO
	// created sink topic "shouted" with 4 partitions, replication factor 1
	// waiting for source topic "words" to be created
	// running shout: instances node-1, node-2 on ADDR (state dir DIR); stop with Ctrl-C
}

// A Runner's instances are named exactly InstanceID when there is one,
// so that a process can be named after its host or pod, and numbered
// after it when there are more.
func ExampleRunnerInstanceIDs() {
	fmt.Println(streams.RunnerInstanceIDs("pod-0", 1))
	fmt.Println(streams.RunnerInstanceIDs("node", 3))
	// Output:
	// [pod-0]
	// [node-1 node-2 node-3]
}

// Under exactly-once a transaction stays open for a commit interval, so
// a long interval needs a longer transaction timeout than the default.
func ExampleExactlyOnceTransactionTimeout() {
	for _, interval := range []time.Duration{100 * time.Millisecond, 30 * time.Second} {
		fmt.Println(interval, streams.ExactlyOnceTransactionTimeout(interval))
	}
	// Output:
	// 100ms 0s
	// 30s 1m0s
}

// SplitBrokers reads a --brokers flag.
func ExampleSplitBrokers() {
	fmt.Printf("%q\n", streams.SplitBrokers("kafka-0:9092, kafka-1:9092,"))
	// Output:
	// ["kafka-0:9092" "kafka-1:9092"]
}

// Validate reports every problem of a RunnerConfig at once.
func ExampleRunnerConfig_Validate() {
	err := streams.RunnerConfig{
		Config:     streams.Config{ApplicationID: "shout", InstanceID: "x"},
		InstanceID: "a/b",
	}.Validate()
	fmt.Println(err)
	// Output:
	// config Config.InstanceID: "x" is set: InstanceID names a Runner's instances
	// config InstanceIDs: id "a/b" names no directory of its own (it holds a path separator or is . or ..)
	// config Brokers: at least one bootstrap address is required
}

// The flags braid run and exported programs share: defined once, read
// into a RunnerConfig after parsing, with every wrong value named.
func ExampleDefineRunnerFlags() {
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	flags := streams.DefineRunnerFlags(fs, "shop", "application id")
	if err := fs.Parse([]string{"--brokers", "k1:9092,k2:9092", "--instance-id", "pod-0", "--guarantee", "exactly-once", "--standbys", "1"}); err != nil {
		log.Fatal(err)
	}
	cfg, err := flags.Config()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Config.ApplicationID, cfg.Config.Brokers, cfg.InstanceID, cfg.Instances, cfg.Config.ProcessingGuarantee, cfg.Config.StandbyReplicas)

	bad := flag.NewFlagSet("shop", flag.ContinueOnError)
	flags = streams.DefineRunnerFlags(bad, "shop", "application id")
	if err := bad.Parse([]string{"--brokers", ",", "--instances", "0", "--guarantee", "at-most-once", "--replication-factor", "-1"}); err != nil {
		log.Fatal(err)
	}
	_, err = flags.Config()
	fmt.Println(err)
	// Output:
	// shop [k1:9092 k2:9092] pod-0 1 exactly-once 1
	// --guarantee "at-most-once" is not at-least-once or exactly-once
	// --instances 0: must be at least 1
	// --replication-factor -1: must be 0 (the default from the cluster's size) or more
	// --brokers is empty
}
