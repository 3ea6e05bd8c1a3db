package deploy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/monitor"
	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain starts Apache Kafka for the package when BRAID_TEST_KAFKA asks
// (see brokertest).
func TestMain(m *testing.M) { brokertest.Main(m) }

// harness is a running Manager on the test's broker (brokertest: the
// embedded one, or the package's Apache Kafka cluster), with the
// orders-windowed design stored.
type harness struct {
	brokers []string
	m       *deploy.Manager
	mon     *monitor.Monitor
	store   *designer.Store
	design  string
}

func start(t *testing.T) *harness {
	t.Helper()
	return startWith(t, func(*deploy.Config) {})
}

// startWith is start with the Manager's Config changed by set.
func startWith(t *testing.T, set func(*deploy.Config)) *harness {
	t.Helper()
	b := brokertest.Start(t, broker.Config{})
	store, err := designer.OpenStore(filepath.Join(t.TempDir(), "designs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	data, err := os.ReadFile("../designer/testdata/orders-windowed.json")
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := store.Import(data)
	if err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(monitor.Options{PublishInterval: 50 * time.Millisecond})
	cfg := deploy.Config{Brokers: b.Addrs(), StateDir: t.TempDir(), Designs: store, Monitor: mon,
		SessionTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	set(&cfg)
	m, err := deploy.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { mon.Run(ctx); done <- struct{}{} }()
	go func() { m.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	h := &harness{brokers: b.Addrs(), m: m, mon: mon, store: store, design: d.ID}
	waitFor(t, 5*time.Second, "the manager running", func() bool {
		_, err := m.Get("none")
		return !errors.Is(err, deploy.ErrNotRunning)
	})
	return h
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

// deployment returns the monitor's view of deployment id.
func (h *harness) deployment(id string) (monitor.Deployment, bool) {
	for _, d := range h.mon.Snapshot().Deployments {
		if d.ID == id {
			return d, true
		}
	}
	return monitor.Deployment{}, false
}

func (h *harness) processed(id string) int64 {
	d, _ := h.deployment(id)
	var n int64
	for _, in := range d.Instances {
		for _, t := range in.Tasks {
			if t.Role == "active" {
				n += t.Processed
			}
		}
	}
	return n
}

var orderTemplate = map[string]string{"id": "sequence", "customer": "key", "amount": "random(1, 500)", "ts": "timestamp"}

func TestDeployRunsTheDesignWithItsGenerator(t *testing.T) {
	h := start(t)
	info, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	if info.ApplicationID != "braid-"+h.design || info.Instances != 2 || info.Standbys != 1 || info.Revision != 1 ||
		info.Guarantee != "at-least-once" || len(info.SourceTopics) != 1 || len(info.Stores) != 1 || info.Stores[0].Type != "window" {
		t.Errorf("Deploy = %+v", info)
	}
	topic := info.SourceTopics[0]
	if err := h.m.StartGenerator(h.design, deploy.GeneratorSpec{Topic: topic, Rate: 200, Keys: 5, KeyPrefix: "customer", Template: orderTemplate}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deployment processing generated orders", func() bool { return h.processed(h.design) > 50 })
	var windows deploy.QueryResult
	waitFor(t, 30*time.Second, "customer-1's windows committed", func() bool {
		windows, err = h.m.Query(h.design, deploy.Query{Store: "big-orders-per-10s", Key: "customer-1"})
		return err == nil && windows.Found
	})
	if windows.Type != "window" || windows.Instance == "" || windows.Windows[0].End-windows.Windows[0].Start != 10_000 {
		t.Errorf("windows of customer-1: %+v", windows)
	}
	got, err := h.m.Get(h.design)
	if err != nil || len(got.Generators) != 1 || got.Generators[0].Produced == 0 {
		t.Errorf("Get = %+v, %v; want one generator that produced", got, err)
	}

	// A crash moves the tasks; a second crash of the same instance is
	// refused with the instance's state.
	d, _ := h.deployment(h.design)
	victim := d.Instances[0].ID
	if err := h.m.Crash(h.design, victim); err != nil {
		t.Fatal(err)
	}
	var ise *streams.InstanceStateError
	if err := h.m.Crash(h.design, victim); !errors.As(err, &ise) {
		t.Errorf("second Crash = %v, want an InstanceStateError", err)
	}
	if err := h.m.Start(h.design, victim); err != nil {
		t.Fatal(err)
	}
	added, err := h.m.Add(h.design)
	if err != nil || added != "instance-3" {
		t.Errorf("Add = %q, %v", added, err)
	}
	if got, err := h.m.Get(h.design); err != nil || got.Instances != 3 {
		t.Errorf("after Add: Info.Instances %d, %v; want 3", got.Instances, err)
	}

	// Redeploying keeps the generator and reuses the application id.
	again, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 1, Standbys: new(0)})
	if err != nil {
		t.Fatal(err)
	}
	if again.ApplicationID != info.ApplicationID || again.Standbys != 0 || len(again.Generators) != 1 {
		t.Errorf("redeploy = %+v", again)
	}
	waitFor(t, 30*time.Second, "the redeployed design processing on one instance", func() bool {
		d, ok := h.deployment(h.design)
		return ok && len(d.Instances) == 1 && h.processed(h.design) > 0
	})

	if err := h.m.StopGenerator(h.design, topic); err != nil {
		t.Fatal(err)
	}
	var ng *deploy.NoGeneratorError
	if err := h.m.StopGenerator(h.design, topic); !errors.As(err, &ng) {
		t.Errorf("second StopGenerator = %v, want a NoGeneratorError", err)
	}
	if err := h.m.Undeploy(h.design); err != nil {
		t.Fatal(err)
	}
	var nd *deploy.NotDeployedError
	if _, err := h.m.Get(h.design); !errors.As(err, &nd) {
		t.Errorf("Get after Undeploy = %v, want a NotDeployedError", err)
	}
	if _, ok := h.deployment(h.design); ok {
		t.Error("the monitor still shows the undeployed design")
	}
}

func TestDeployRefusesBadRequests(t *testing.T) {
	h := start(t)
	for _, tt := range []struct {
		req  deploy.Request
		want string
	}{
		{deploy.Request{}, "design: is required"},
		{deploy.Request{Design: h.design, Instances: 40}, "instances: 40 is not from 1 to 16 (the most instances a deployment may run)"},
		{deploy.Request{Design: h.design, Instances: 2, Standbys: new(2)}, "standbys: 2 is not from 0 to 1"},
		{deploy.Request{Design: h.design, Guarantee: "maybe"}, `guarantee: "maybe" is not`},
		{deploy.Request{Design: h.design, CommitIntervalMs: 5}, "commitIntervalMs: 5 is not from 10 to 60000"},
		{deploy.Request{Design: "nope"}, `"nope"`},
		{deploy.Request{Design: h.design, Revision: 9}, "revision 9"},
		{deploy.Request{Design: h.design, Snapshots: true, SnapshotURL: "http://blobs/x"}, `snapshotUrl: "http://blobs/x": scheme "http" is not file or s3`},
		{deploy.Request{Design: h.design, Snapshots: true, SnapshotURL: "file://relative"}, "snapshotUrl: \"file://relative\": a file URL needs an absolute path"},
		{deploy.Request{Design: h.design, SnapshotURL: "file:///x"}, "snapshotUrl: is set but snapshots are off"},
		{deploy.Request{Design: h.design, Snapshots: true}, "snapshotUrl: is required: this server has no directory for snapshots"},
		{deploy.Request{Design: h.design, Snapshots: true, Orchestrated: true}, "snapshotUrl: is required for processes you start"},
	} {
		if _, err := h.m.Deploy(tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Deploy(%+v) = %v, want an error containing %q", tt.req, err, tt.want)
		}
	}
	var nd *deploy.NotDeployedError
	if err := h.m.Crash("nope", "instance-1"); !errors.As(err, &nd) {
		t.Errorf("Crash of an undeployed design = %v", err)
	}
	if _, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 1}); err != nil {
		t.Fatal(err)
	}
	var re *deploy.RequestError
	if err := h.m.StartGenerator(h.design, deploy.GeneratorSpec{Topic: "elsewhere"}); !errors.As(err, &re) || re.Field != "topic" {
		t.Errorf("generator on a foreign topic = %v", err)
	}
	if err := h.m.StartGenerator(h.design, deploy.GeneratorSpec{Topic: "orders", Template: map[string]string{"x": "random(5, 1)"}}); !errors.As(err, &re) {
		t.Errorf("generator with a bad template = %v", err)
	}
	if _, err := h.m.Query(h.design, deploy.Query{Store: "nope", Key: "k"}); !errors.As(err, &re) {
		t.Errorf("query of an unknown store = %v", err)
	}
	if _, err := h.m.Query(h.design, deploy.Query{Store: "big-orders-per-10s"}); !errors.As(err, &re) || re.Field != "key" {
		t.Errorf("query of a windowed store without a key = %v", err)
	}
}

// TestDeploySnapshots: a deployment with snapshots on keeps them at the
// URL asked for, or by default in the application's directory under
// Config.SnapshotDir, which Limits names for the dialog; one without has
// none.
func TestDeploySnapshots(t *testing.T) {
	dir := t.TempDir()
	h := startWith(t, func(c *deploy.Config) { c.SnapshotDir = dir })
	if got := h.m.Limits().SnapshotDir; got != dir {
		t.Errorf("Limits().SnapshotDir = %q, want %q", got, dir)
	}
	for _, c := range []struct {
		req  deploy.Request
		want string
	}{
		{deploy.Request{Design: h.design, Instances: 1}, ""},
		{deploy.Request{Design: h.design, Instances: 1, Snapshots: true}, "file://" + filepath.ToSlash(filepath.Join(dir, "braid-"+h.design))},
		{deploy.Request{Design: h.design, Instances: 1, Snapshots: true, SnapshotURL: "s3://bucket?endpoint=http://127.0.0.1:9000"},
			"s3://bucket?endpoint=http://127.0.0.1:9000"},
	} {
		info, err := h.m.Deploy(c.req)
		if err != nil {
			t.Fatalf("Deploy(%+v): %v", c.req, err)
		}
		got, err := h.m.Get(h.design)
		if err != nil || info.SnapshotURL != c.want || got.SnapshotURL != c.want {
			t.Errorf("Deploy(%+v): snapshots at %q, then %q (%v); want %q", c.req, info.SnapshotURL, got.SnapshotURL, err, c.want)
		}
	}
}

// TestDeployExactlyOnce deploys the orders-windowed design exactly-once
// and reads its sink read-committed: each closed window's count once.
func TestDeployExactlyOnce(t *testing.T) {
	h := start(t)
	info, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 2, Guarantee: "exactly-once"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Guarantee != "exactly-once" || info.CommitIntervalMs != deploy.ExactlyOnceCommitIntervalMs || info.Standbys != 1 {
		t.Errorf("Deploy = %+v", info)
	}
	if got, err := h.m.Get(h.design); err != nil || got.Guarantee != "exactly-once" {
		t.Errorf("Get = %+v, %v", got, err)
	}

	// Three big orders of customer-1 and two of customer-2 in one 10 s
	// window, a small one that the filter drops, then an order of each
	// 30 s later: past the window's end and its 5 s grace, so that the
	// window closes and its count is emitted.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.DefaultProduceTopic(info.SourceTopics[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	window := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	for i, o := range []struct {
		customer string
		amount   int
		at       int64 // ms after the window's start
	}{
		{"customer-1", 100, 1_000}, {"customer-2", 60, 1_500}, {"customer-1", 70, 2_000}, {"customer-1", 10, 2_500},
		{"customer-2", 90, 3_000}, {"customer-1", 200, 9_999}, {"customer-1", 100, 30_000}, {"customer-2", 100, 30_000},
	} {
		v := fmt.Sprintf(`{"id": %d, "customer": %q, "amount": %d, "ts": %d}`, i, o.customer, o.amount, window+o.at)
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(o.customer), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The sink read-committed: the two windows' counts, once each.
	rc, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(info.SinkTopics[0]),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	counts := map[string][]int64{}
	for len(counts["customer-1"]) == 0 || len(counts["customer-2"]) == 0 {
		fs := rc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s read-committed: %v; got %v", info.SinkTopics[0], err, counts)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Errorf("record %q = %q, want an 8-byte count", r.Key, r.Value)
				return
			}
			for _, c := range []string{"customer-1", "customer-2"} {
				if bytes.Contains(r.Key, []byte(c)) {
					counts[c] = append(counts[c], int64(binary.BigEndian.Uint64(r.Value)))
				}
			}
		})
	}
	// A moment more, for a duplicate to show.
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	rc.PollFetches(short).EachRecord(func(r *kgo.Record) { t.Errorf("more output: %q = %x", r.Key, r.Value) })
	if !slices.Equal(counts["customer-1"], []int64{3}) || !slices.Equal(counts["customer-2"], []int64{2}) {
		t.Errorf("counts of the closed windows = %v, want customer-1 [3], customer-2 [2]", counts)
	}
	// Written in transactions: their commit markers take offsets too.
	ends, err := kadm.NewClient(rc).ListEndOffsets(ctx, info.SinkTopics[0])
	if err != nil {
		t.Fatal(err)
	}
	var offsets int64
	ends.Each(func(o kadm.ListedOffset) { offsets += o.Offset })
	if offsets <= 2 {
		t.Errorf("the sink's end offsets add up to %d: no transaction markers beside its 2 records", offsets)
	}

	// The longest commit interval deploys exactly-once too: above the
	// runtime's default transaction timeout, which it then raises.
	if again, err := h.m.Deploy(deploy.Request{Design: h.design, Instances: 1, Guarantee: "exactly-once", CommitIntervalMs: 60_000}); err != nil || again.CommitIntervalMs != 60_000 {
		t.Errorf("redeploy committing every minute = %+v, %v", again, err)
	}
}
