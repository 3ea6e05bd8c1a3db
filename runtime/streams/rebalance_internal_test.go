package streams

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/internal/assign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTaskWithheldFromItsOwnerComesBackFromItsWarmupOnOpenStores is a cooperative
// rebalance that withholds a task from the member that runs it (another
// member still says it owns the task too, as after a broker's outage):
// the member revokes it, and the plan lists it as pending here, neither
// standby nor warm-up, so placeReplicas keeps a warm-up of it on the
// suspended task's stores. The follow-up rebalance gives it back, and
// the task promoted from the warm-up must count on from its state.
//
// leaveSuspended closed the suspended task's stores for not being listed
// as a replica while placeReplicas handed them to the warm-up: the task
// came back on closed stores and its first record failed with "state:
// store closed" (make test on Apache Kafka, TestChaosKafkaBrokerStop
// stop-15s). The warm-up stays queued throughout, as it did there (the
// follow-up came 250 ms later, within replicaStartDelay): the follower is
// not started.
func TestTaskWithheldFromItsOwnerComesBackFromItsWarmupOnOpenStores(t *testing.T) {
	const app, input = "withheld", "withheld-clicks"
	a, cl := newCountApp(t, app, input)
	ctx := context.Background()

	id, task := TaskID{0, 0}, []assign.Task{{Subtopology: 0, Partition: 0}}
	assigned := map[string][]int32{input: {0}}
	// takeUp takes an assignment up as onAssigned does when its stores
	// open before it returns, with the plan the balancer parsed.
	takeUp := func(assigned map[string][]int32, plan assign.Assignment) {
		t.Helper()
		a.client.Store(cl)
		as := &assignment{plan: plan, now: time.Now(), assigned: assigned}
		a.tasksMu.Lock()
		var opening []*taskOpening
		as.arrivals, opening = a.prepareArrivals(assigned)
		a.openTasksStores(opening)
		as.opened(opening)
		a.finishAssigned(ctx, cl, as)
		if err := a.producedError(); err != nil {
			t.Fatalf("taking up %v: %v", plan, err)
		}
	}
	click := func(offset int64) error {
		r := &kgo.Record{Topic: input, Partition: 0, Offset: offset, Key: []byte("user"), Value: []byte("click"), Timestamp: time.Now()}
		return a.processFetches(kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: input, Partitions: []kgo.FetchPartition{{
			Partition: 0, HighWatermark: offset + 1, LastStableOffset: offset + 1, Records: []*kgo.Record{r}}}}}}})
	}
	count := func() any {
		t.Helper()
		a.tasksMu.Lock()
		defer a.tasksMu.Unlock()
		v, _, err := a.tasks[id].stores["counts"].get("user")
		if err != nil {
			t.Fatalf("reading the count: %v", err)
		}
		return v
	}

	takeUp(assigned, assign.Assignment{Active: task})
	if err := click(0); err != nil {
		t.Fatalf("first click: %v", err)
	}
	// The revocation commits the task (its offsets fail to: cl is in no
	// group, which only costs a warning) and suspends it.
	a.onRevoked(ctx, cl, assigned)
	takeUp(map[string][]int32{}, assign.Assignment{Pending: task})
	a.standby.mu.Lock()
	queued := len(a.standby.pending) == 1 && a.standby.pending[0].id == id && a.standby.pending[0].stores != nil
	a.standby.mu.Unlock()
	if !queued {
		t.Fatalf("no warm-up of %s queued on the suspended task's stores", id)
	}

	takeUp(assigned, assign.Assignment{Active: task})
	if r := a.tasks[id].replica; r != "warm-up" {
		t.Fatalf("task %s came back from %q, want from its warm-up", id, r)
	}
	if err := click(1); err != nil {
		t.Fatalf("the first click after the task came back from its warm-up: %v", err)
	}
	if n := count(); n != int64(2) {
		t.Errorf("count %v after two clicks, want 2", n)
	}
}

// TestGivenUpClientTakesNoAssignmentUp is the assignment that a group
// client recoverSession gave up delivers as it leaves the group, after
// its tasks were dropped: onAssigned must take nothing up. A worker took
// such tasks up on Apache Kafka (TestChaosKafkaBrokerStop, stop-15s): their
// restores ran on the closing client and ended unseen, and the next
// session found the tasks there, restoring for good, and processed
// nothing.
func TestGivenUpClientTakesNoAssignmentUp(t *testing.T) {
	const app, input = "given-up", "given-up-clicks"
	a, cl := newCountApp(t, app, input)
	ctx := context.Background()
	a.givenUp.Store(cl)
	a.onAssigned(ctx, cl, map[string][]int32{input: {0}})
	a.awaitArriving()
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	if len(a.tasks) != 0 {
		t.Fatalf("the given-up client's assignment was taken up: %d tasks", len(a.tasks))
	}
}

// newCountApp makes an App, not running, that counts the clicks of topic
// input by user into app+"-counts", on an embedded broker of its own that
// holds the topics, and a client of that broker.
func newCountApp(t *testing.T, app, input string) (*App, *kgo.Client) {
	t.Helper()
	b := brokertest.Start(t, broker.Config{})
	cl, err := kgo.NewClient(append(b.ClientOptions(), kgo.SeedBrokers(b.Addrs()...), kgo.ProducerLinger(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, topic := range []string{input, app + "-counts", changelogTopic(app, "counts")} {
		if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	builder := NewBuilder()
	builder.Stream([]string{input}, WithSerdes(String, String)).GroupByKey().
		Count(Materialized(StoreOptions{Name: "counts"})).To(app+"-counts", WithSerdes(String, Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(topo, Config{ApplicationID: app, Brokers: b.Addrs(), ClientOptions: b.ClientOptions(), StateDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, cl
}
