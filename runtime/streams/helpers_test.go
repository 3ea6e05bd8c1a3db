package streams_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
	adm := kadm.NewClient(newClient(t, b))
	resp, err := adm.CreateTopic(context.Background(), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

// produce writes records synchronously.
func produce(t testing.TB, b *brokertest.Cluster, recs ...*kgo.Record) {
	t.Helper()
	cl := newClient(t, b, kgo.ProducerLinger(0))
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// consumeN reads n records from topic, failing after timeout.
func consumeN(t testing.TB, b *brokertest.Cluster, topic string, n int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	return consumeUntil(t, b, topic, fmt.Sprintf("%d records", n), timeout, func(out []*kgo.Record) bool { return len(out) >= n })
}

// consumeUntil reads topic from the start until done holds for everything
// read so far, failing the test with what was awaited after timeout.
func consumeUntil(t testing.TB, b *brokertest.Cluster, topic, what string, timeout time.Duration, done func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for !done(out) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %d records read, not yet %s, before the timeout", topic, len(out), what)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consuming %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// runApp runs app in the background and returns a function that stops it
// and returns Run's error.
func runApp(t testing.TB, app *streams.App) (stop func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- app.Run(context.Background()) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			app.Close()
			err = <-errc
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
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

func testLogger() *slog.Logger {
	if os.Getenv("BRAID_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// failureLog is a logger for one test whose records (INFO and above) are
// printed only if the test fails: the timeline of a failure seen once in
// CI, without the noise of every passing run.
func failureLog(t testing.TB) *slog.Logger {
	w := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test's log:\n%s", w.String())
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func testConfig(b *brokertest.Cluster, app string) streams.Config {
	return streams.Config{
		ApplicationID:  app,
		Brokers:        b.Addrs(),
		CommitInterval: 100 * time.Millisecond,
		SessionTimeout: 6 * time.Second,
		Logger:         testLogger(),
	}
}

// recorder is a hook that keeps every event, for assertions.
type recorder struct {
	mu       sync.Mutex
	assigned []streams.TaskEvent
	revoked  []streams.TaskEvent
	commits  []streams.CommitEvent
	states   []streams.StateChange
	errs     []streams.ErrorEvent
	skipped  []streams.SkippedRecord
}

func (r *recorder) OnTaskAssigned(e streams.TaskEvent) {
	r.mu.Lock()
	r.assigned = append(r.assigned, e)
	r.mu.Unlock()
}
func (r *recorder) OnTaskRevoked(e streams.TaskEvent) {
	r.mu.Lock()
	r.revoked = append(r.revoked, e)
	r.mu.Unlock()
}
func (r *recorder) OnCommit(e streams.CommitEvent) {
	r.mu.Lock()
	r.commits = append(r.commits, e)
	r.mu.Unlock()
}
func (r *recorder) OnStateChange(e streams.StateChange) {
	r.mu.Lock()
	r.states = append(r.states, e)
	r.mu.Unlock()
}
func (r *recorder) OnError(e streams.ErrorEvent) {
	r.mu.Lock()
	r.errs = append(r.errs, e)
	r.mu.Unlock()
}
func (r *recorder) OnRecordSkipped(e streams.SkippedRecord) {
	r.mu.Lock()
	r.skipped = append(r.skipped, e)
	r.mu.Unlock()
}

func (r *recorder) stateNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.states {
		out = append(out, s.To.String())
	}
	return out
}

var errBoom = errors.New("boom")

func key(i int) []byte { return []byte(fmt.Sprintf("key-%03d", i)) }

// admin returns an admin client on b.
func admin(t testing.TB, b *brokertest.Cluster) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, b))
}

// committedOffsets returns the offsets group has committed, per partition
// of topic; a partition without a commit is absent, and so is a group that
// does not exist yet.
func committedOffsets(t testing.TB, b *brokertest.Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := admin(t, b).FetchOffsets(context.Background(), group)
	// A coordinator not yet loaded (Kafka, after a failover or the group's
	// first commit) is a "not yet" for the callers, which poll.
	if errors.Is(err, kerr.GroupIDNotFound) || kerr.IsRetriable(err) {
		return map[int32]int64{}
	}
	if err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", group, err)
	}
	out := make(map[int32]int64)
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("offset of group %s for %s/%d: %v", group, o.Topic, o.Partition, o.Err)
			return
		}
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(t testing.TB, b *brokertest.Cluster, topic string) map[int32]int64 {
	t.Helper()
	listed, err := admin(t, b).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatalf("listing the end offsets of %s: %v", topic, err)
	}
	out := make(map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// allCommitted reports whether group has committed every partition of
// topic up to its end. Under at-least-once an App flushes a record's
// outputs before it commits the record, and under exactly-once they are in
// the committed transaction: once the input is committed to its end, every
// output it makes is in its topic.
func allCommitted(t testing.TB, b *brokertest.Cluster, group, topic string) bool {
	t.Helper()
	got := committedOffsets(t, b, group, topic)
	for p, end := range endOffsets(t, b, topic) {
		if got[p] < end {
			return false
		}
	}
	return true
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// runToError runs app and waits for Run to return on its own, as it does
// when it fails; it fails the test if Run is still running after timeout.
func runToError(t testing.TB, app *streams.App, timeout time.Duration) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- app.Run(context.Background()) }()
	t.Cleanup(func() { app.Close() })
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		app.Close()
		<-errc
		t.Fatalf("Run did not return by itself within %v", timeout)
		return nil
	}
}

// taskIDs returns the IDs of the tasks in st, in Stats order.
func taskIDs(st streams.Stats) []string {
	var out []string
	for _, task := range st.Tasks {
		out = append(out, task.ID.String())
	}
	return out
}

// assignedTasks returns the tasks the recorder saw assigned.
func (r *recorder) assignedTasks() []streams.TaskEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]streams.TaskEvent(nil), r.assigned...)
}

func (r *recorder) revokedTasks() []streams.TaskEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]streams.TaskEvent(nil), r.revoked...)
}

func (r *recorder) errors() []streams.ErrorEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]streams.ErrorEvent(nil), r.errs...)
}

func (r *recorder) skippedRecords() []streams.SkippedRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]streams.SkippedRecord(nil), r.skipped...)
}

// skipShort skips a test that takes tens of seconds by design under -short
// (make test-quick); make test runs it.
func skipShort(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (" + why + "): skipped with -short")
	}
}

// runSupervisor creates a Supervisor of n instances of topo with cfg and
// runs it until the test ends, failing the test if Run returns an error.
func runSupervisor(t *testing.T, topo *streams.Topology, cfg streams.Config, n int) *streams.Supervisor {
	t.Helper()
	sup, err := streams.NewSupervisor(topo, streams.SupervisorConfig{Config: cfg, Instances: n})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})
	return sup
}

// produceUsers writes one click of each of users from to to, keyed
// user-%06d, to topic clicks.
func produceUsers(t *testing.T, b *brokertest.Cluster, from, to int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: fmt.Appendf(nil, "user-%06d", i), Value: []byte("click")})
	}
	produce(t, b, recs...)
}
