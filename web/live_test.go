package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/broker"
)

// startLive runs a server with deployments on the embedded broker and the
// orders-windowed design stored.
func startLive(t *testing.T) *testServer {
	t.Helper()
	return startLiveConfig(t, deploy.Config{})
}

// startLiveConfig is startLive with the deployment manager's Config
// taking cfg's MaxInstances and RecordFile.
func startLiveConfig(t *testing.T, cfg deploy.Config) *testServer {
	t.Helper()
	ts, _ := startLiveBroker(t, cfg)
	return ts
}

// startLiveBroker is startLiveConfig that also gives the broker.
func startLiveBroker(t *testing.T, cfg deploy.Config) (*testServer, *broker.Broker) {
	t.Helper()
	return startLiveMonitor(t, cfg, monitor.Options{PublishInterval: 50 * time.Millisecond})
}

// startLiveMonitor is startLiveBroker with the monitor's Options.
func startLiveMonitor(t *testing.T, cfg deploy.Config, opts monitor.Options) (*testServer, *broker.Broker) {
	t.Helper()
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
	if _, _, err := store.Import([]byte(readTestdata(t, "orders-windowed.json"))); err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(opts)
	m, err := deploy.NewManager(deploy.Config{Brokers: b.Addrs(), StateDir: t.TempDir(), Designs: store, Monitor: mon,
		SessionTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler), MaxInstances: cfg.MaxInstances, RecordFile: cfg.RecordFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { mon.Run(ctx); done <- struct{}{} }()
	go func() { m.Run(ctx); done <- struct{}{} }()
	// Registered before the server's cleanup, so it runs after it.
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	return start(t, Config{Store: store, Deployments: m, Monitor: mon}), b
}

// firstDeploy posts a deploy request and returns its answer, which must be
// 201. The manager's Run starts on its goroutine, so the first deploy may
// come before it accepts: it tries again while the answer is 503.
func firstDeploy(t *testing.T, ts *testServer, body string) *response {
	t.Helper()
	var r *response
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = ts.do("POST", "/api/deployments", body)
		if r.status != 503 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.status != 201 {
		t.Fatalf("deploy: %d %s", r.status, r)
	}
	return r
}

func TestDeploymentsAPI(t *testing.T) {
	ts := startLive(t)
	r := firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 2}`)
	var info deploy.Info
	r.decode(t, &info)
	if info.ID != "orders-windowed" || info.Instances != 2 || info.Standbys != 1 || info.Operators["count"] == "" ||
		info.Guarantee != "at-least-once" || info.CommitIntervalMs != 1000 {
		t.Errorf("deploy answered %+v", info)
	}
	runCases(t, ts, []apiCase{
		{name: "list", method: "GET", path: "/api/deployments", status: 200},
		{name: "get", method: "GET", path: "/api/deployments/orders-windowed", status: 200},
		{name: "not deployed", method: "GET", path: "/api/deployments/nope", status: 404,
			check: wantError(`design "nope" is not deployed`, 0, 0, "")},
		{name: "unknown guarantee", method: "POST", path: "/api/deployments", body: `{"design": "orders-windowed", "guarantee": "at-most-once"}`,
			status: 422, check: wantError(`guarantee: "at-most-once" is not at-least-once or exactly-once`, 0, 0, "")},
		{name: "unknown field", method: "POST", path: "/api/deployments", body: `{"design": "orders-windowed", "replicas": 2}`, status: 400},
		{name: "unknown design", method: "POST", path: "/api/deployments", body: `{"design": "nope"}`, status: 404},
		{name: "generator", method: "POST", path: "/api/deployments/orders-windowed/generators",
			body:   `{"topic": "orders", "rate": 100, "keys": 5, "keyPrefix": "customer", "template": {"customer": "key", "amount": "random(1, 500)", "ts": "timestamp"}}`,
			status: 201},
		{name: "bad generator", method: "POST", path: "/api/deployments/orders-windowed/generators",
			body: `{"topic": "orders", "template": {"amount": "random(9, 1)"}}`, status: 422},
		{name: "unknown instance", method: "POST", path: "/api/deployments/orders-windowed/instances/instance-9/crash", status: 404},
		{name: "crash-wipe an unknown instance", method: "POST", path: "/api/deployments/orders-windowed/instances/instance-9/crash-wipe", status: 404},
		{name: "unknown operation", method: "POST", path: "/api/deployments/orders-windowed/instances/instance-1/explode", status: 404},
		{name: "start a running instance", method: "POST", path: "/api/deployments/orders-windowed/instances/instance-1/start", status: 409},
		{name: "query a windowed store without a key", method: "GET", path: "/api/deployments/orders-windowed/query?store=big-orders-per-10s", status: 422},
		{name: "query a windowed store", method: "GET", path: "/api/deployments/orders-windowed/query?store=big-orders-per-10s&key=customer-1",
			status: 200, contains: []string{`"type":"window"`}},
		{name: "query an unknown store", method: "GET", path: "/api/deployments/orders-windowed/query?store=nope&key=x", status: 422},
		{name: "query with a bad limit", method: "GET", path: "/api/deployments/orders-windowed/query?store=x&limit=0", status: 400},
		{name: "query without a store", method: "GET", path: "/api/deployments/orders-windowed/query", status: 400},
	})
	if r := ts.do("GET", "/live/orders-windowed", ""); r.status != 200 || !strings.Contains(r.String(), "/static/live/") {
		t.Errorf("live page: %d %.300s", r.status, r)
	}
	if r := ts.do("GET", "/live/nope", ""); r.status != 404 || !strings.Contains(r.String(), "not deployed") {
		t.Errorf("live page of an undeployed design: %d %.300s", r.status, r)
	}

	// The websocket: a snapshot first, then events, for this deployment.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.base, "http")+"/ws/live?deployment=orders-windowed", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	read := func() monitor.Message {
		t.Helper()
		_, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the websocket: %v", err)
		}
		var msg monitor.Message
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatalf("message is not JSON: %v: %s", err, data)
		}
		return msg
	}
	if first := read(); first.Type != "snapshot" || len(first.Snapshot.Deployments) != 1 || first.Snapshot.Deployments[0].ID != "orders-windowed" {
		t.Fatalf("first message %+v, want a snapshot of orders-windowed", first)
	}
	if r := ts.do("POST", "/api/deployments/orders-windowed/instances", "{}"); r.status != 201 || !strings.Contains(r.String(), "instance-3") {
		t.Errorf("add instance: %d %s", r.status, r)
	}
	for {
		msg := read()
		if msg.Event != nil && msg.Event.Kind == "instance-added" {
			if msg.Event.Deployment != "orders-windowed" || msg.Event.Instance != "instance-3" {
				t.Errorf("event %+v", msg.Event)
			}
			break
		}
	}
	// /metrics holds the deployment's series once a sample has seen its
	// tasks (instance-3 has just caused a rebalance); each try waits for
	// the monitor's next message.
	for {
		fams, text := scrapeMetrics(t, ts)
		if _, ok := fams["go_goroutines"]; !ok {
			t.Fatalf("/metrics has no go_goroutines:\n%s", text)
		}
		if _, ok := fams["process_resident_memory_bytes"]; !ok && runtime.GOOS == "linux" {
			t.Fatalf("/metrics has no process_resident_memory_bytes:\n%s", text)
		}
		if hasSeries(fams["braid_records_processed_total"], "deployment", "orders-windowed") {
			break
		}
		if _, _, err := conn.Read(ctx); err != nil {
			t.Fatalf("reading the websocket: %v; no processed series of orders-windowed in the last /metrics:\n%s", err, text)
		}
	}
	if r := ts.do("DELETE", "/api/deployments/orders-windowed", ""); r.status != 204 {
		t.Errorf("undeploy: %d %s", r.status, r)
	}
	if r := ts.do("DELETE", "/api/deployments/orders-windowed", ""); r.status != 404 {
		t.Errorf("second undeploy: %d %s", r.status, r)
	}
}

// TestCrashWipeAPI: POST .../crash-wipe crashes the instance, wipes its
// state and starts it again: 204, the timeline says instance-crash-wiped,
// and the instance runs; a second crash-wipe of it is as welcome. A
// crash-wipe or crash the instance refuses (it is stopped) is a 409 that
// did nothing: the timeline tells of no crash.
func TestCrashWipeAPI(t *testing.T) {
	ts := startLive(t)
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 1}`)
	// Right after the deploy the Supervisor may not have begun its Run
	// (503), added the instance (404) or launched it (409, though it
	// shows as running): once its App is assigned a task, it has.
	awaitInstanceEvent(t, ts, "task-assigned", "instance-1")
	const wipe = "/api/deployments/orders-windowed/instances/instance-1/crash-wipe"
	for range 2 {
		if r := ts.do("POST", wipe, ""); r.status != 204 {
			t.Fatalf("crash-wipe: %d %s; the deployment: %s", r.status, r, ts.do("GET", "/api/deployments/orders-windowed", ""))
		}
	}
	if n := instanceEvents(ts, "instance-crash-wiped", "instance-1"); n != 2 {
		t.Errorf("%d instance-crash-wiped events for instance-1, want 2", n)
	}
	if r := ts.do("POST", "/api/deployments/orders-windowed/instances/instance-1/start", ""); r.status != 409 {
		t.Errorf("start after a crash-wipe: %d %s, want 409: the crash-wipe started it again", r.status, r)
	}
	if r := ts.do("POST", "/api/deployments/orders-windowed/instances/instance-1/stop", ""); r.status != 204 {
		t.Fatalf("stop: %d %s", r.status, r)
	}
	for _, op := range []string{"crash-wipe", "crash"} {
		if r := ts.do("POST", "/api/deployments/orders-windowed/instances/instance-1/"+op, ""); r.status != 409 || !strings.Contains(r.String(), "it is stopped") {
			t.Errorf("%s of a stopped instance: %d %s, want 409", op, r.status, r)
		}
	}
	if n := instanceEvents(ts, "instance-crash-wiped", "instance-1"); n != 2 {
		t.Errorf("%d instance-crash-wiped events for instance-1 after a refused crash-wipe, want 2", n)
	}
	if n := instanceEvents(ts, "instance-crashed", "instance-1"); n != 0 {
		t.Errorf("%d instance-crashed events for instance-1 after a refused crash, want 0", n)
	}
}

// instanceEvents counts the monitor's logged events of kind about
// instance.
func instanceEvents(ts *testServer, kind, instance string) int {
	n := 0
	for _, ev := range ts.srv.cfg.Monitor.Events(0) {
		if ev.Kind == kind && ev.Instance == instance {
			n++
		}
	}
	return n
}

// awaitInstanceEvent waits until the monitor has logged an event of kind
// about instance.
func awaitInstanceEvent(t *testing.T, ts *testServer, kind, instance string) {
	t.Helper()
	// Subscribed before the log is read: an event logged after the read
	// wakes Next.
	sub := ts.srv.cfg.Monitor.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for instanceEvents(ts, kind, instance) == 0 {
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("waiting for a %s event of %s: %v", kind, instance, err)
		}
	}
}

// TestDeployStandbysAndInstanceCap: "standbys": 0 deploys no standby
// (an absent field is the default), and the instance cap the API reports
// is the one it enforces, at deploy and when adding instances.
func TestDeployStandbysAndInstanceCap(t *testing.T) {
	ts := startLiveConfig(t, deploy.Config{MaxInstances: 2})
	var info deploy.Info
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 2, "standbys": 0}`).decode(t, &info)
	if info.Instances != 2 || info.Standbys != 0 {
		t.Errorf(`deploy with "standbys": 0 answered %d instances, %d standbys; want 2 and 0`, info.Instances, info.Standbys)
	}
	if r := ts.do("GET", "/api/deployments/orders-windowed", ""); r.status != 200 || !strings.Contains(r.String(), `"standbys":0`) {
		t.Errorf("GET the deployment: %d %s", r.status, r)
	}
	runCases(t, ts, []apiCase{
		{name: "limits", method: "GET", path: "/api/deployment-limits", status: 200,
			contains: []string{`"maxInstances":2`, `"minCommitIntervalMs":10`, `"maxCommitIntervalMs":60000`}},
		{name: "too many instances", method: "POST", path: "/api/deployments", body: `{"design": "orders-windowed", "instances": 3}`,
			status: 422, check: wantError("instances: 3 is not from 1 to 2 (the most instances a deployment may run)", 0, 0, "")},
		{name: "one instance too many", method: "POST", path: "/api/deployments/orders-windowed/instances", status: 422,
			check: wantError(`instances: deployment "orders-windowed" runs 2 instances, the most a deployment may run (2)`, 0, 0, "")},
		{name: "noStandbys is gone", method: "POST", path: "/api/deployments", body: `{"design": "orders-windowed", "noStandbys": true}`, status: 400},
	})
	// The default when standbys is absent: one.
	var again deploy.Info
	r := ts.do("POST", "/api/deployments", `{"design": "orders-windowed", "instances": 2}`)
	r.decode(t, &again)
	if r.status != 201 || again.Standbys != 1 {
		t.Errorf("redeploy without standbys: %d, %d standbys; want 201 and 1", r.status, again.Standbys)
	}
}

// TestDeployExactlyOnceAPI: a deploy request for exactly-once deploys the
// design exactly-once, committing at the runtime's default for it unless
// the request says otherwise, and its live page shows.
func TestDeployExactlyOnceAPI(t *testing.T) {
	ts := startLive(t)
	r := firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 1, "guarantee": "exactly-once"}`)
	var info deploy.Info
	r.decode(t, &info)
	if info.Guarantee != "exactly-once" || info.CommitIntervalMs != deploy.ExactlyOnceCommitIntervalMs {
		t.Errorf("deploy answered %+v", info)
	}
	runCases(t, ts, []apiCase{
		{name: "get", method: "GET", path: "/api/deployments/orders-windowed", status: 200,
			contains: []string{`"guarantee":"exactly-once"`, `"commitIntervalMs":100`}},
		{name: "redeploy with a commit interval", method: "POST", path: "/api/deployments",
			body: `{"design": "orders-windowed", "instances": 1, "guarantee": "exactly-once", "commitIntervalMs": 250}`, status: 201,
			contains: []string{`"guarantee":"exactly-once"`, `"commitIntervalMs":250`}},
	})
	if r := ts.do("GET", "/live/orders-windowed", ""); r.status != 200 || !strings.Contains(r.String(), "/static/live/") {
		t.Errorf("live page: %d %.300s", r.status, r)
	}
}

// TestLiveRoutesNeedDeployments: a server without deployments has no
// live routes.
func TestLiveRoutesNeedDeployments(t *testing.T) {
	ts := start(t, Config{})
	for _, path := range []string{"/api/deployments", "/metrics", "/live/x"} {
		if r := ts.do("GET", path, ""); r.status != 404 {
			t.Errorf("GET %s: %d, want 404", path, r.status)
		}
	}
}

// TestStalledWebsocketClient: a live client that stops reading holds
// back neither the deployment nor the other clients, and the server does
// not buffer for it without bound: the monitor coalesces what its handler
// does not take, and the handler, stuck writing, drops it when the write
// times out. A healthy client meanwhile receives snapshots published
// while the stalled client's handler was stuck, in which the deployment
// processed more. (The stalled client's backlog is not read: the server
// side may hold megabytes of it unsent when it closes, which the kernel
// may discard without a reset.)
func TestStalledWebsocketClient(t *testing.T) {
	ts := startLive(t)
	firstDeploy(t, ts, `{"design": "orders-windowed", "instances": 2}`)
	if r := ts.do("POST", "/api/deployments/orders-windowed/generators",
		`{"topic": "orders", "rate": 1000, "keys": 50, "keyPrefix": "customer", "template": {"customer": "key", "amount": "random(1, 500)", "ts": "timestamp"}, "jitterMs": 500, "lateFraction": 0.05, "lateByMs": 20000}`); r.status != 201 {
		t.Fatalf("generator: %d %s", r.status, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/ws/live?deployment=orders-windowed"

	// The healthy client reads everything, in order.
	healthy, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer healthy.CloseNow()
	healthy.SetReadLimit(64 << 20)
	var (
		mu        sync.Mutex
		snapshots []monitor.Snapshot // what the healthy client read
		healthErr error
	)
	go func() {
		for {
			_, data, err := healthy.Read(ctx)
			var msg monitor.Message
			if err == nil {
				err = json.Unmarshal(data, &msg)
			}
			mu.Lock()
			if err != nil {
				healthErr = err
				mu.Unlock()
				return
			}
			if msg.Snapshot != nil {
				snapshots = append(snapshots, *msg.Snapshot)
			}
			mu.Unlock()
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("processing", func() bool { return processedIn(ts.srv.cfg.Monitor.Snapshot()) > 1000 })
	waitFor("the healthy client", func() bool { return ts.srv.bridge.Active() == 1 })

	// The stalled client never reads, with a small receive buffer so that
	// its handler's writes block soon.
	stalled, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				err = c.(*net.TCPConn).SetReadBuffer(4 << 10)
			}
			return c, err
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	waitFor("the stalled client", func() bool { return ts.srv.bridge.Active() == 2 })
	// Only a handler stuck in a write for its whole timeout ends while
	// its client is connected and silent.
	waitFor("the server to drop the stalled client", func() bool { return ts.srv.bridge.Active() == 1 })
	dropped := time.Now()
	runtime.GC()
	runtime.ReadMemStats(&after)
	mu.Lock()
	got, herr := slices.Clone(snapshots), healthErr
	mu.Unlock()
	if herr != nil {
		t.Fatalf("the healthy client: %v", herr)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB while the client stalled", grew>>20)
	}

	// The stalled handler's last write began at least liveWriteTimeout
	// before it dropped the client, which was before dropped; it took
	// nothing from the monitor since. The healthy client's snapshots
	// stamped after dropped - liveWriteTimeout were published while that
	// handler was stuck.
	stuckSince := dropped.Add(-liveWriteTimeout).UnixMilli()
	var fresh []monitor.Snapshot
	for _, snap := range got {
		if snap.Time > stuckSince {
			fresh = append(fresh, snap)
		}
	}
	t.Logf("the healthy client read %d snapshots before the stalled one was dropped, %d of them while its handler was stuck", len(got), len(fresh))
	const wantFresh = 10
	if len(fresh) < wantFresh {
		t.Fatalf("the healthy client read %d snapshots while the stalled client's handler was stuck, want %d or more", len(fresh), wantFresh)
	}
	if first, last := processedIn(fresh[0]), processedIn(fresh[len(fresh)-1]); last <= first {
		t.Errorf("processed %d records in the first fresh snapshot and %d in the last: the deployment stood still while the client stalled", first, last)
	}
}

// scrapeMetrics gets /metrics and parses it with Prometheus' own text
// parser.
func scrapeMetrics(t *testing.T, ts *testServer) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	r := ts.do("GET", "/metrics", "")
	if r.status != 200 || r.header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("/metrics: %d %q %.300s", r.status, r.header.Get("Content-Type"), r)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(r.String()))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, r)
	}
	return fams, r.String()
}

// hasSeries reports whether mf has a series labelled name=value.
func hasSeries(mf *dto.MetricFamily, name, value string) bool {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				return true
			}
		}
	}
	return false
}

// processedIn sums the records the active tasks of a snapshot processed.
func processedIn(snap monitor.Snapshot) int64 {
	var n int64
	for _, d := range snap.Deployments {
		for _, in := range d.Instances {
			for _, task := range in.Tasks {
				if task.Role == "active" {
					n += task.Processed
				}
			}
		}
	}
	return n
}
