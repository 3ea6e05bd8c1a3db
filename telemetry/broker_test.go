package telemetry

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
)

// process is one process of the application under test: a Supervisor
// with its Publisher, as `braid run` has them.
type testProcess struct {
	sup  *streams.Supervisor
	stop func()
}

func startProcess(t *testing.T, b *broker.Broker, topo *streams.Topology, name string) *testProcess {
	t.Helper()
	pub, err := rtelemetry.NewPublisher(rtelemetry.PublisherConfig{Brokers: b.Addrs(), Process: name, Topology: topo,
		Deployment: rtelemetry.Deployment{ApplicationID: "counts-app", Instances: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{InstancePrefix: name, Config: streams.Config{
		ApplicationID: "counts-app", Brokers: b.Addrs(), StateDir: filepath.Join(t.TempDir(), name),
		CommitInterval: 50 * time.Millisecond, SessionTimeout: 30 * time.Second, Hooks: []streams.Hook{pub.Hook()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	pub.Attach(sup)
	ctx, cancel := context.WithCancel(context.Background())
	supDone, pubDone := make(chan error, 1), make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	pubCtx, pubCancel := context.WithCancel(context.Background())
	go func() { pubDone <- pub.Run(pubCtx) }()
	p := &testProcess{sup: sup}
	p.stop = func() {
		cancel()
		if err := <-supDone; err != nil {
			t.Errorf("supervisor %s: %v", name, err)
		}
		pubCancel()
		<-pubDone
	}
	t.Cleanup(p.stop)
	return p
}

// TestReaderShowsAnotherProcesssApplication: two processes of one
// application, each with its Publisher, appear on a Reader's monitor as
// one deployment with both instances and every task; an instance crashed
// under its process's Supervisor is shown crashed, and the failover of
// its tasks to the other process is measured.
func TestReaderShowsAnotherProcesssApplication(t *testing.T) {
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("clicks"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := kadm.NewClient(cl).CreateTopics(context.Background(), 4, 1, nil, "clicks", "click-counts"); err != nil {
		t.Fatal(err)
	}
	bld := streams.NewBuilder()
	bld.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().Count(streams.Materialized(streams.StoreOptions{Name: "clicks-per-page"})).
		ToStream().To("click-counts")
	topo, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}

	m := monitor.New(monitor.Options{PublishInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	monDone, readDone := make(chan error, 1), make(chan error, 1)
	go func() { monDone <- m.Run(ctx) }()
	r, err := NewReader(ReaderConfig{Brokers: b.Addrs(), Monitor: m})
	if err != nil {
		t.Fatal(err)
	}
	go func() { readDone <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-monDone
		<-readDone
	})

	a := startProcess(t, b, topo, "a")
	startProcess(t, b, topo, "b")
	produceClicks := func() {
		for i := range 40 {
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(fmt.Sprintf("page-%d", i)), Value: []byte("x")}, nil)
		}
	}
	deployment := func() *monitor.Deployment {
		for _, d := range m.Snapshot().Deployments {
			if d.ID == "counts-app" {
				return &d
			}
		}
		return nil
	}
	waitFor(t, time.Minute, "both instances with tasks, every task processing", func() bool {
		produceClicks()
		d := deployment()
		if d == nil || len(d.Instances) != 2 {
			return false
		}
		tasks := 0
		for _, in := range d.Instances {
			mine := 0
			for _, task := range in.Tasks {
				if task.Role == "active" && task.Processed > 0 {
					mine++
				}
			}
			if mine == 0 {
				return false // a-1 must have tasks to fail over
			}
			tasks += mine
		}
		return tasks == 4
	})

	if err := a.sup.Crash("a-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the crash and the failover of a-1's tasks to b-1", func() bool {
		produceClicks()
		d := deployment()
		if d == nil {
			return false
		}
		crashed := false
		for _, in := range d.Instances {
			crashed = crashed || in.ID == "a-1" && in.State == "crashed"
		}
		moved := 0
		for _, f := range d.Failovers {
			if f.From == "a-1" && f.To == "b-1" && f.DetectedBy == streams.DetectedBySupervisor && f.Cause == "crash" {
				moved++
			}
		}
		return crashed && moved > 0
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
