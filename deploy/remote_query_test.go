package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestQueryWatchedApplication: an application run elsewhere, here a
// Runner of the orders-windowed design serving its stores on a loopback
// port, is queried through that store server once the monitor knows it;
// with no live instance advertising a server, the query is a RemoteError
// again.
func TestQueryWatchedApplication(t *testing.T) {
	h := start(t)
	design, err := os.ReadFile("../designer/testdata/orders-windowed.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := designer.Decode(design)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compiler.Compile(d, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := ln.Addr().String()
	ln.Close()
	r, err := streams.NewRunner(compiled.Topology, streams.RunnerConfig{InstanceID: "p1", Config: streams.Config{
		ApplicationID: "shop-app", Brokers: h.brokers, StateDir: t.TempDir(), ApplicationServer: server,
		CommitInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		<-done
	}()
	info := monitor.DeploymentInfo{ID: "shop", ApplicationID: "shop-app"}
	h.mon.AddDeployment(info, r.Supervisor())
	defer h.mon.RemoveDeployment("shop")
	if err := h.m.Watch(info, design); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	for i, at := range []int64{base, base + 1000, base + 20_000} {
		v, _ := json.Marshal(map[string]any{"customer": "c1", "amount": 100 + i, "ts": at})
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("c1"), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var res deploy.QueryResult
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last answer: %+v, %v", res, err)
		}
	})
	// The first window, [base, base+10s), is past its retention (size
	// plus grace) at stream time base+20s: the store has the second.
	waitFor(t, time.Minute, "c1's window through the store server", func() bool {
		res, err = h.m.Query("shop", deploy.Query{Store: "big-orders-per-10s", Key: "c1"})
		return err == nil && res.Found && len(res.Windows) == 1
	})
	if w := res.Windows[0]; res.Instance != "p1" || res.Stale || res.Type != "window" || w.Start != base+20_000 || w.Value != float64(1) {
		t.Errorf("c1 = %+v; want p1's window from %d counting 1, not stale", res, base+20_000)
	}
	var req *deploy.RequestError
	if _, err := h.m.Query("shop", deploy.Query{Store: "big-orders-per-10s"}); !errors.As(err, &req) || req.Field != "key" {
		t.Errorf("a window store without a key: %v; want a RequestError on key", err)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the deferred stop
	var remote *deploy.RemoteError
	waitFor(t, 10*time.Second, "a RemoteError once no instance runs", func() bool {
		_, err := h.m.Query("shop", deploy.Query{Store: "big-orders-per-10s", Key: "c1"})
		return errors.As(err, &remote)
	})
}
