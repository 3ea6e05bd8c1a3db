package monitor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain starts Apache Kafka for the package when BRAID_TEST_KAFKA asks
// (see brokertest).
func TestMain(m *testing.M) { brokertest.Main(m) }

// startBroker gives one test its broker: a new embedded one, or the shared
// Apache Kafka cluster (see brokertest).
func startBroker(t testing.TB) *brokertest.Cluster {
	t.Helper()
	return brokertest.Start(t, broker.Config{})
}

func newClient(t testing.TB, b *brokertest.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, b *brokertest.Cluster, topic string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(newClient(t, b)).CreateTopic(context.Background(), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

func produce(t testing.TB, b *brokertest.Cluster, recs ...*kgo.Record) {
	t.Helper()
	cl := newClient(t, b, kgo.ProducerLinger(0))
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForState is waitFor that says, on a timeout, what state says.
func waitForState(t testing.TB, timeout time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state:\n%s", timeout, what, state())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe summarises a deployment's snapshot for a failure message.
func describe(d *Deployment) string {
	if d == nil {
		return "no deployment"
	}
	var sb strings.Builder
	for _, in := range d.Instances {
		fmt.Fprintf(&sb, "%s %s:", in.ID, in.State)
		for _, t := range in.Tasks {
			fmt.Fprintf(&sb, " [%s %s %s st=%d processed=%d lag=%d late=%d windows=%d", t.ID, t.Role, t.State, t.StreamTime, t.Processed, t.Lag, t.LateDrops, len(t.Windows))
			if t.StandbyLag != nil {
				fmt.Fprintf(&sb, " standbyLag=%d", t.StandbyLag.Records)
			}
			sb.WriteString("]")
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "failovers %+v\n", d.Failovers)
	return sb.String()
}

// t0 is a window start (tumbling 10 s windows align to the epoch) three
// hours before the tests start: recent, since Apache Kafka deletes the
// records of a windowed store's changelog past its retention by their
// timestamp and refuses those more than an hour ahead.
var t0 = func() int64 {
	ms := time.Now().Add(-3 * time.Hour).UnixMilli()
	return ms - ms%60_000
}()

const readingKeys = 6

// windowTopology counts readings per key in tumbling 10 s windows with
// 5 s grace, emitting on close, as the runtime's window tests do.
func windowTopology(t testing.TB) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"readings"}, streams.WithSerdes(streams.String, streams.String)).
		GroupByKey().
		WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).
		Emit(streams.EmitOnWindowClose).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-window"})).
		ToStream().
		To("window-counts", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// produceReadings writes one reading per key at each offset (ms after t0).
func produceReadings(t testing.TB, b *brokertest.Cluster, offsets ...int64) {
	t.Helper()
	var recs []*kgo.Record
	for _, off := range offsets {
		for k := range readingKeys {
			recs = append(recs, &kgo.Record{Topic: "readings", Key: []byte(fmt.Sprintf("sensor-%d", k)),
				Value: []byte("r"), Timestamp: time.UnixMilli(t0 + off)})
		}
	}
	produce(t, b, recs...)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// lateSource is a Source whose Supervisor is set after the hook was made:
// the hook goes into the Supervisor's config, so AddDeployment comes
// first.
type lateSource struct {
	sup atomic.Pointer[streams.Supervisor]
}

func (l *lateSource) Instances() []streams.InstanceInfo {
	if s := l.sup.Load(); s != nil {
		return s.Instances()
	}
	return nil
}

func (l *lateSource) OpenWindows(instance, store string) ([]streams.OpenWindow, error) {
	if s := l.sup.Load(); s != nil {
		return s.OpenWindows(instance, store)
	}
	return nil, streams.ErrSupervisorNotRunning
}

// fakeSource is a Source the test fills by hand.
type fakeSource struct {
	mu        sync.Mutex
	instances []streams.InstanceInfo
	windows   map[string][]streams.OpenWindow // by instance + "/" + store
}

func (f *fakeSource) Instances() []streams.InstanceInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]streams.InstanceInfo(nil), f.instances...)
}

func (f *fakeSource) OpenWindows(instance, store string) ([]streams.OpenWindow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]streams.OpenWindow(nil), f.windows[instance+"/"+store]...), nil
}

func (f *fakeSource) set(instances []streams.InstanceInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instances = instances
}

// runMonitor runs m until the test ends.
func runMonitor(t testing.TB, m *Monitor) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("monitor Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// collector reads a subscriber in the background and keeps every message.
type collector struct {
	mu   sync.Mutex
	msgs []Message
}

func collect(t testing.TB, sub *Subscriber) *collector {
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sub.Next(ctx)
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, msg)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; sub.Close() })
	return c
}

func (c *collector) events(kind string) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Event
	for _, m := range c.msgs {
		if m.Type == "event" && m.Event.Kind == kind {
			out = append(out, *m.Event)
		}
	}
	return out
}

func (c *collector) messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

func eventsOf(events []Event, kind string) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func findDeployment(s Snapshot, id string) *Deployment {
	for i := range s.Deployments {
		if s.Deployments[i].ID == id {
			return &s.Deployments[i]
		}
	}
	return nil
}

func findInstance(d *Deployment, id string) *Instance {
	for i := range d.Instances {
		if d.Instances[i].ID == id {
			return &d.Instances[i]
		}
	}
	return nil
}

// readingsCommitted says whether group has committed offsets at the end
// of every partition of "readings".
func readingsCommitted(adm *kadm.Client, group string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "readings")
	if err != nil || ends.Error() != nil {
		return false
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil || committed.Error() != nil {
		return false
	}
	all := true
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed.Lookup("readings", e.Partition)
		all = all && ok && c.At >= e.Offset
	})
	return all
}
