package web

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/process"
	"github.com/braidstream/braid/runtime/streams"
	rtelemetry "github.com/braidstream/braid/runtime/telemetry"
	"github.com/braidstream/braid/telemetry"
)

// TestDeploymentsAPIListsWatchedApplications: two processes of a design
// run elsewhere (process.Process, as `braid run` runs them), reporting
// through the telemetry topic to a Reader wired to the deployments as
// `braid serve` wires it; GET /api/deployments lists their application
// once, marked watched, with both processes, their instances and the
// state they add up to; once one process stops, it is listed as no
// longer running and the application's state follows.
func TestDeploymentsAPIListsWatchedApplications(t *testing.T) {
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store, err := designer.OpenStore(filepath.Join(t.TempDir(), "designs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	mon := monitor.New(monitor.Options{PublishInterval: 50 * time.Millisecond})
	m, err := deploy.NewManager(deploy.Config{Brokers: b.Addrs(), StateDir: t.TempDir(), Designs: store, Monitor: mon,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := telemetry.NewReader(telemetry.ReaderConfig{Brokers: b.Addrs(), Monitor: mon, Logger: slog.New(slog.DiscardHandler),
		Local: m.RunsApplication, DeploymentID: m.DeploymentOf, OnRemoved: m.Unwatch, OnProcesses: m.WatchProcesses,
		OnDesign: func(info monitor.DeploymentInfo, design []byte) {
			if err := m.Watch(info, design); err != nil {
				t.Errorf("watching %s: %v", info.ID, err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { mon.Run(ctx); done <- struct{}{} }()
	go func() { m.Run(ctx); done <- struct{}{} }()
	go func() { reader.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	ts := start(t, Config{Store: store, Deployments: m, Monitor: mon})

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := kadm.NewClient(cl).CreateTopics(context.Background(), 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	file := []byte(readTestdata(t, "orders-windowed.json"))
	d, err := designer.Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compiler.Compile(d, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	app := designer.ApplicationID(d)
	stopA := runProcess(t, compiled.Topology, b.Addrs(), app, "proc-a", d, file)
	runProcess(t, compiled.Topology, b.Addrs(), app, "proc-b", d, file)

	// watched is the application's entry of GET /api/deployments, nil
	// while there is none.
	watched := func() *deploy.Info {
		var list []deploy.Info
		ts.do("GET", "/api/deployments", "").decode(t, &list)
		var found *deploy.Info
		for i, in := range list {
			if in.ApplicationID == app {
				if found != nil {
					t.Fatalf("%s is listed twice: %+v", app, list)
				}
				found = &list[i]
			}
		}
		return found
	}
	state := func(in *deploy.Info) map[string]string {
		out := map[string]string{}
		for _, p := range in.Processes {
			for _, i := range p.Instances {
				out[p.Process+"/"+i.ID] = p.State + ":" + i.State
			}
		}
		return out
	}
	waitUntil(t, time.Minute, "both processes listed reporting, their instances running", func() bool {
		in := watched()
		if in == nil {
			return false
		}
		s := state(in)
		return in.State == deploy.WatchedRunning && len(s) == 2 && s["proc-a/proc-a"] == "reporting:running" && s["proc-b/proc-b"] == "reporting:running"
	})
	in := watched()
	if in.ID != app || !in.Watched || !in.Remote || in.Orchestrated || in.DesignName != d.Name || len(in.DesignDoc) == 0 {
		t.Errorf("watched application listed as %+v: want id %s, watched, remote, not orchestrated, with its design", in, app)
	}
	r := ts.do("GET", "/api/deployments/"+app, "")
	var got deploy.Info
	r.decode(t, &got)
	if !got.Watched || len(got.Processes) != 2 {
		t.Errorf("GET /api/deployments/%s: %+v, want it watched with its 2 processes", app, got)
	}

	stopA()
	// A process that stops says so in a last report, marked final; when
	// that report is not read, the process goes silent and shows gone
	// after 3 s, its running instance crashed. Either way it no longer
	// runs, and the application's state follows: still running on
	// proc-b's instance after a graceful stop, degraded with a process
	// gone.
	var last map[string]string
	var lastState string
	defer func() {
		if t.Failed() {
			t.Logf("processes and instances last listed: %v, application %q", last, lastState)
		}
	}()
	waitUntil(t, time.Minute, "proc-a listed stopped or gone, proc-b still reporting", func() bool {
		in := watched()
		s := state(in)
		last, lastState = s, in.State
		switch s["proc-a/proc-a"] {
		case "stopped:stopped":
			return s["proc-b/proc-b"] == "reporting:running" && in.State == deploy.WatchedRunning
		case "gone:crashed":
			return s["proc-b/proc-b"] == "reporting:running" && in.State == deploy.WatchedDegraded
		}
		return false
	})
}

// runProcess runs a process of the design as `braid run --instance-id
// name` does, until the test ends or the returned stop is called.
func runProcess(t *testing.T, topo *streams.Topology, brokers []string, app, name string, d *designer.Design, file []byte) (stop func()) {
	t.Helper()
	p, err := process.New(topo, process.Config{
		Runner: streams.RunnerConfig{InstanceID: name, Config: streams.Config{ApplicationID: app, Brokers: brokers,
			StateDir: filepath.Join(t.TempDir(), name), CommitInterval: 100 * time.Millisecond, SessionTimeout: 3 * time.Second,
			Logger: slog.New(slog.DiscardHandler)}},
		TelemetryTopic: rtelemetry.DefaultTopic,
		Design:         process.Design{ID: d.ID, Name: d.Name, File: file},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("process %s: %v", name, err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitUntil polls cond until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
