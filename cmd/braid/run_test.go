package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// demoTopics is what the tests of braid run learn from orders-demo.json.
type demoTopics struct {
	appID        string
	source, sink string
	repartition  string
}

func readDemoTopics(t *testing.T) demoTopics {
	t.Helper()
	d, c, err := loadDesign("orders-demo.json")
	if err != nil {
		t.Fatal(err)
	}
	topo := c.Topology
	if len(topo.SourceTopics()) != 1 || len(topo.SinkTopics()) != 1 {
		t.Fatalf("orders-demo.json has sources %q and sinks %q, want one of each", topo.SourceTopics(), topo.SinkTopics())
	}
	demo := demoTopics{appID: designer.ApplicationID(d), source: topo.SourceTopics()[0], sink: topo.SinkTopics()[0]}
	for _, it := range topo.InternalTopics(demo.appID) {
		if it.Kind == "repartition" {
			demo.repartition = it.Name
		}
	}
	if demo.repartition == "" {
		t.Fatalf("orders-demo.json has no repartition topic: %+v", topo.InternalTopics(demo.appID))
	}
	return demo
}

// startRunBroker gives the test its broker (brokertest: an in-process
// embedded one, or the package's Apache Kafka cluster) and returns its
// bootstrap addresses, as --brokers takes them, and an admin client of it.
func startRunBroker(t *testing.T) (string, *kgo.Client, *kadm.Client) {
	t.Helper()
	b := brokertest.Start(t, broker.Config{})
	cl := newClient(t, append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, b.ClientOptions()...)...)
	return b.Bootstrap(), cl, kadm.NewClient(cl)
}

func createRunTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// produceOrders produces orders shaped as orders-demo.json reads them,
// keyed and grouped by customer: five big ones of c1 in one 10 s window,
// a small one there the filter drops, and a big one 20 s later, which
// moves stream time past the first window's end and grace, so that its
// count of 5 is emitted.
func produceOrders(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	base := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	var recs []*kgo.Record
	order := func(amount int, at int64) {
		v, err := json.Marshal(map[string]any{"customer": "c1", "amount": amount, "ts": at})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("c1"), Value: v})
	}
	for i := range 5 {
		order(100+i, base+int64(i)*1000)
	}
	order(10, base+500)
	order(200, base+20_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing orders: %v", err)
	}
}

// waitForCount consumes the sink until a count of want arrives, for a
// minute at most (a guard against hanging, not a bound on how fast braid
// is).
func waitForCount(t *testing.T, addr, sink string, want int64) {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(addr), kgo.ConsumeTopics(sink))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen []string
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		for _, r := range fetches.Records() {
			if len(r.Value) == 8 && int64(binary.BigEndian.Uint64(r.Value)) == want {
				return
			}
			seen = append(seen, fmt.Sprintf("%s=%x", r.Key, r.Value))
		}
	}
	t.Fatalf("no count of %d on %q within a minute; seen %q", want, sink, seen)
}

// TestRunProcessesTheDesign runs orders-demo.json as `braid run` does in
// production, as a process, and reads its counts from the sink topic,
// which it created.
func TestRunProcessesTheDesign(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 2)
	produceOrders(t, cl, demo.source)
	state := t.TempDir()
	p := startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "i1", "--state-dir", state, "--commit-interval", "200ms")
	want := fmt.Sprintf("running %s: instance i1 on %s (state dir %s)", demo.appID, addr, state)
	if !strings.Contains(p.out.String(), want) {
		t.Errorf("braid run does not say %q:\n%s", want, p.out.String())
	}
	if !strings.Contains(p.out.String(), fmt.Sprintf("created sink topic %q", demo.sink)) {
		t.Errorf("braid run does not say it created the sink topic %q:\n%s", demo.sink, p.out.String())
	}
	waitForCount(t, addr, demo.sink, 5)
	if _, err := os.Stat(filepath.Join(state, "i1")); err != nil {
		t.Errorf("the instance's state is not under --state-dir/i1: %v", err)
	}
	p.terminate(t)
	if !strings.Contains(p.out.String(), "instance state changed") {
		t.Errorf("braid run logged no state change:\n%s", p.out.String())
	}
}

// TestRunWaitsForSourceTopic: started before its source topic exists,
// braid run names it, waits, and runs once it was created.
func TestRunWaitsForSourceTopic(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	p := launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir(), "--commit-interval", "200ms")
	waiting := fmt.Sprintf("waiting for source topic %q to be created", demo.source)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, waiting) })
	createRunTopic(t, adm, demo.source, 2)
	produceOrders(t, cl, demo.source)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, "stop with Ctrl-C") })
	waitForCount(t, addr, demo.sink, 5)
	p.terminate(t)
	if n := strings.Count(p.out.String(), waiting); n != 1 {
		t.Errorf("braid run said %d times that it waits for %q, want once:\n%s", n, demo.source, p.out.String())
	}
}

// TestRunTwoProcessesShareTheGroup: two processes running the same design
// are two members of one group, which assigns them every input
// partition.
func TestRunTwoProcessesShareTheGroup(t *testing.T) {
	demo := readDemoTopics(t)
	addr, _, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 4)
	var procs []*process
	for _, id := range []string{"i1", "i2"} {
		procs = append(procs, startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", id, "--state-dir", t.TempDir()))
	}
	waitForGroup(t, adm, demo)
	for _, p := range procs {
		p.terminate(t)
	}
}

// TestRunSeveralInstances: --instances 2 runs two members of the group in
// one process, named after --instance-id.
func TestRunSeveralInstances(t *testing.T) {
	demo := readDemoTopics(t)
	addr, _, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 4)
	p := startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "node", "--instances", "2", "--state-dir", t.TempDir())
	if want := "instances node-1, node-2"; !strings.Contains(p.out.String(), want) {
		t.Errorf("braid run --instances 2 does not say %q:\n%s", want, p.out.String())
	}
	waitForGroup(t, adm, demo)
	p.terminate(t)
}

// TestRunExitsWhenAnInstanceFails: a record the design cannot read fails
// the instance, and nothing in the process would restart it, so braid
// run ends with the error for whoever runs it to restart it.
func TestRunExitsWhenAnInstanceFails(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: demo.source, Key: []byte("c1"), Value: []byte("not JSON")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir())
	go func() {
		for range p.lines { // drain, so that the process never blocks writing
		}
	}()
	select {
	case err := <-p.done:
		if err == nil {
			t.Fatalf("braid run exited with status 0 after its instance failed:\n%s", p.out.String())
		}
	case <-time.After(time.Minute): // a guard against hanging
		t.Fatalf("braid run still runs a minute after reading a bad record:\n%s", p.out.String())
	}
	if want := "an instance failed"; !strings.Contains(p.out.String(), want) {
		t.Errorf("braid run does not say %q:\n%s", want, p.out.String())
	}
}

// waitForGroup waits until groupProblem finds none, for a minute at most.
func waitForGroup(t *testing.T, adm *kadm.Client, demo demoTopics) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		last := groupProblem(ctx, adm, demo)
		if last == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s not shared by two members within a minute: %s", demo.appID, last)
		case <-time.After(50 * time.Millisecond): // a poll interval, not a margin
		}
	}
}

// groupProblem says why the demo's group is not yet stable with two
// members that have every partition of the source and repartition
// topics between them, or "" once it is.
func groupProblem(ctx context.Context, adm *kadm.Client, demo demoTopics) string {
	groups, err := adm.DescribeGroups(ctx, demo.appID)
	if err != nil {
		return err.Error()
	}
	g, ok := groups[demo.appID]
	switch {
	case !ok:
		return "no such group"
	case g.Err != nil:
		return g.Err.Error()
	case g.State != "Stable" || len(g.Members) != 2:
		return fmt.Sprintf("group %s with %d members", g.State, len(g.Members))
	}
	topics, err := adm.ListTopics(ctx, demo.source, demo.repartition)
	if err != nil {
		return err.Error()
	}
	assigned := map[string][]int32{}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			return fmt.Sprintf("member %s has no consumer assignment", m.MemberID)
		}
		if len(a.Topics) == 0 {
			return fmt.Sprintf("member %s has nothing assigned", m.MemberID)
		}
		for _, tp := range a.Topics {
			assigned[tp.Topic] = append(assigned[tp.Topic], tp.Partitions...)
		}
	}
	for _, topic := range []string{demo.source, demo.repartition} {
		d, ok := topics[topic]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return fmt.Sprintf("topic %s not there yet", topic)
		}
		for p := range int32(len(d.Partitions)) {
			if !slices.Contains(assigned[topic], p) {
				return fmt.Sprintf("%s/%d assigned to no member (assigned: %v)", topic, p, assigned)
			}
		}
	}
	return ""
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	missing := filepath.Join(dir, "nope.json")
	notJSON := write("broken.json", `{"name": "x", "nodes": [`)
	invalid := write("invalid.json", `{"name": "bad", "version": 1, "nodes": [{"id": "s", "kind": "source-stream", "params": {}}], "edges": []}`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{missing}, []string{missing, "no such file"}},
		{"not JSON", []string{notJSON}, []string{notJSON, "line 1"}},
		{"invalid design", []string{invalid}, []string{invalid, "problem", "node s (source-stream)"}},
		{"no file", nil, []string{"want one design file, got 0"}},
		{"two files", []string{missing, notJSON}, []string{"want one design file, got 2"}},
		{"bad guarantee", []string{"orders-demo.json", "--guarantee", "at-most-once"}, []string{`--guarantee "at-most-once" is not at-least-once or exactly-once`}},
		{"no instances", []string{"orders-demo.json", "--instances", "0"}, []string{"--instances 0"}},
		{"no brokers", []string{"orders-demo.json", "--brokers", ","}, []string{"--brokers is empty"}},
		{"bad app id", []string{"orders-demo.json", "--app-id", "a b"}, []string{"orders-demo.json", "ApplicationID", `"a b"`}},
		{"missing control secret file", []string{"orders-demo.json", "--control-secret-file", missing}, []string{"--control-secret-file", missing}},
		{"empty control secret file", []string{"orders-demo.json", "--control-secret-file", write("empty-secret", "\n")}, []string{"--control-secret-file", "empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"run"}, tc.args...), io.Discard, io.Discard)
			if err == nil {
				t.Fatalf("braid run %q succeeded", tc.args)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("braid run %q: %v; want it to say %s", tc.args, err, w)
				}
			}
		})
	}
}

// TestRunStaticMembership: with --static-membership each instance joins
// under its instance id as group.instance.id, which is what lets a
// StatefulSet's restarted pod take its tasks back without a rebalance.
func TestRunStaticMembership(t *testing.T) {
	demo := readDemoTopics(t)
	addr, _, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 4)
	p := startProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "pod-0", "--state-dir", t.TempDir(), "--static-membership")
	defer p.terminate(t)
	waitUntil(t, time.Minute, "a static member pod-0 in the group", func() bool {
		groups, err := adm.DescribeGroups(context.Background(), demo.appID)
		if err != nil {
			return false
		}
		for _, m := range groups[demo.appID].Members {
			if m.InstanceID != nil && *m.InstanceID == "pod-0" {
				return true
			}
		}
		return false
	})
}
