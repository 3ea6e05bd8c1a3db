package storeserver_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/storeserver"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A store server off loopback needs a token: anyone who reaches it could
// read the stores.
func ExampleConfig_Validate() {
	fmt.Println(storeserver.Config{Addr: "0.0.0.0:7070"}.Validate())
	fmt.Println(storeserver.Config{Addr: "127.0.0.1:7070"}.Validate())
	fmt.Println(storeserver.Config{Addr: "10.0.0.5:7070", Token: "s3cret"}.Validate())
	// Output:
	// store server config Token: empty, but Addr "0.0.0.0:7070" is not a loopback address: anyone who reaches it could read the stores; give a token
	// <nil>
	// <nil>
}

// A Runner whose instances advertise an ApplicationServer serves their
// stores there; a Client asks any process of the group for any key.
func ExampleClient_Lookup() {
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
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "clicks"); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Key: []byte("user-7"), Value: []byte("click")})
	}
	stateDir, err := os.MkdirTemp("", "storeserver-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)
	b := streams.NewBuilder()
	b.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "per-user"}))
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port to advertise
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := streams.NewRunner(topo, streams.RunnerConfig{
		Config: streams.Config{ApplicationID: "clicks", Brokers: brk.Addrs(), StateDir: stateDir,
			ApplicationServer: addr, CommitInterval: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		InstanceID: "node-1",
		QueryToken: "s3cret",
	})
	if err != nil {
		log.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()

	client := &storeserver.Client{Token: "s3cret"}
	var ans storeserver.Answer
	for ans.Value != float64(2) {
		time.Sleep(10 * time.Millisecond)
		ans, _ = client.Lookup(ctx, addr, "per-user", "user-7")
	}
	fmt.Printf("%s: %v clicks, from %s, stale %v\n", ans.Key, ans.Value, ans.Instance, ans.Stale)
	_, err = (&storeserver.Client{}).Lookup(ctx, addr, "per-user", "user-7")
	fmt.Println(strings.ReplaceAll(err.Error(), addr, "ADDR"))
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// user-7: 2 clicks, from node-1, stale false
	// token: store server ADDR answered 401: missing or wrong bearer token
}
