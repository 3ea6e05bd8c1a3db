package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/deployconfig"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// deployTo writes revision rev of the demo's deployment "orders-demo" to
// the config topic, as braid serve does for an orchestrated deploy.
func deployTo(t *testing.T, addr string, demo demoTopics, rev int, commitMs int64) {
	t.Helper()
	design, err := os.ReadFile("orders-demo.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := deployconfig.NewClient(deployconfig.Config{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Put(ctx, deployconfig.Deployment{ID: "orders-demo", Revision: rev, Design: design, ApplicationID: demo.appID,
		Guarantee: "at-least-once", CommitIntervalMs: commitMs}); err != nil {
		t.Fatal(err)
	}
}

func undeployFrom(t *testing.T, addr string) {
	t.Helper()
	c, err := deployconfig.NewClient(deployconfig.Config{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Delete(ctx, "orders-demo"); err != nil {
		t.Fatal(err)
	}
}

// produceCustomerOrders produces n big orders of customer in one 10 s
// window starting at base, and one 20 s later that closes it, so that a
// count of n is emitted.
func produceCustomerOrders(t *testing.T, cl *kgo.Client, topic, customer string, n int, base int64) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n + 1 {
		at := base + int64(i)*1000
		if i == n {
			at = base + 20_000
		}
		v, err := json.Marshal(map[string]any{"customer": customer, "amount": 100 + i, "ts": at})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(customer), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing orders: %v", err)
	}
}

func runsRevision(rev int) func(string) bool {
	return func(line string) bool { return strings.Contains(line, fmt.Sprintf("revision %d runs", rev)) }
}

// TestRunDeploymentWaitsRunsAndStops: braid run --deployment started
// before the deployment exists says it waits, once; runs the record's
// design when it is written; stops its instances at the tombstone and
// stays, waiting; and runs the deployment again when it comes back.
func TestRunDeploymentWaitsRunsAndStops(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 2)
	p := launchProcess(t, "run", "--deployment", "orders-demo", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir(),
		"--telemetry-topic", "")
	waiting := `waiting for deployment "orders-demo" in _braid-deployments`
	p.waitLine(t, func(line string) bool { return strings.Contains(line, waiting) })
	deployTo(t, addr, demo, 1, 200)
	p.waitLine(t, runsRevision(1))
	base := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	produceCustomerOrders(t, cl, demo.source, "c1", 5, base)
	waitForCount(t, addr, demo.sink, 5)

	undeployFrom(t, addr)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, "was undeployed") })
	waitUntil(t, time.Minute, "the group to be empty after the undeploy", func() bool {
		g, err := adm.DescribeGroups(context.Background(), demo.appID)
		return err == nil && len(g[demo.appID].Members) == 0
	})
	if p.cmd.ProcessState != nil {
		t.Fatalf("braid run exited at the undeploy:\n%s", p.out.String())
	}
	deployTo(t, addr, demo, 1, 200)
	p.waitLine(t, runsRevision(1))
	p.terminate(t)
	if n := strings.Count(p.out.String(), waiting); n != 1 {
		t.Errorf("braid run said %d times that it waits for the deployment, want once:\n%s", n, p.out.String())
	}
}

// TestRunDeploymentRollsOneProcessAtATime: two processes run revision 1;
// revision 2 moves both, in turn: the status records in the topic never
// show both restarting at once, and the output goes on after.
func TestRunDeploymentRollsOneProcessAtATime(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 2)
	deployTo(t, addr, demo, 1, 200)
	var procs []*process
	for _, id := range []string{"i1", "i2"} {
		p := launchProcess(t, "run", "--deployment", "orders-demo", "--brokers", addr, "--instance-id", id, "--state-dir", t.TempDir(),
			"--static-membership", "--session-timeout", "10s", "--telemetry-topic", "")
		procs = append(procs, p)
	}
	for _, p := range procs {
		p.waitLine(t, runsRevision(1))
	}
	base := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	produceCustomerOrders(t, cl, demo.source, "c1", 5, base)
	waitForCount(t, addr, demo.sink, 5)
	waitForGroup(t, adm, demo)
	before := assignments(t, adm, demo.appID)

	deployTo(t, addr, demo, 2, 300)
	for _, p := range procs {
		p.waitLine(t, runsRevision(2))
	}
	checkOneRestartAtATime(t, addr)
	// Static members restarted within the session timeout: no task moved.
	waitForGroup(t, adm, demo)
	if after := assignments(t, adm, demo.appID); after != before {
		t.Errorf("the roll moved tasks: before %s, after %s", before, after)
	}
	produceCustomerOrders(t, cl, demo.source, "c2", 3, base+60_000)
	waitForCount(t, addr, demo.sink, 3)
	for _, p := range procs {
		p.terminate(t)
	}
}

// checkOneRestartAtATime reads the status records of the topic in order
// and fails if two processes were ever restarting at once (from a
// restarting status to the next running one), or if not both restarted.
func checkOneRestartAtATime(t *testing.T, addr string) {
	t.Helper()
	c, err := deployconfig.NewClient(deployconfig.Config{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	restarting := map[string]bool{}
	restarted := map[string]bool{}
	var trail []string
	done := make(chan struct{})
	followCtx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		_ = c.Follow(followCtx, func(u deployconfig.Update) {
			switch u.Kind {
			case deployconfig.CaughtUp:
				stop()
			case deployconfig.StatusPut:
				s := u.Status
				trail = append(trail, fmt.Sprintf("%s %s %d", s.Process, s.State, s.Revision))
				switch s.State {
				case deployconfig.Restarting:
					restarting[s.Process], restarted[s.Process] = true, true
					if len(restarting) > 1 {
						t.Errorf("%v restarting at once", restarting)
					}
				case deployconfig.Running:
					delete(restarting, s.Process)
				}
			}
		})
	}()
	<-done
	if len(restarted) != 2 {
		t.Errorf("processes restarted: %v, want i1 and i2", restarted)
	}
	t.Logf("statuses in the topic's order, heartbeats left out: %q", compact(trail))
}

// compact drops the heartbeats: a status equal to the one before it.
func compact(trail []string) []string {
	var out []string
	last := map[string]string{}
	for _, s := range trail {
		proc, _, _ := strings.Cut(s, " ")
		if last[proc] != s {
			out = append(out, s)
		}
		last[proc] = s
	}
	return out
}

// TestRunDeploymentBadInput: a design file, or a setting the deployment
// owns, given with --deployment is an error naming it.
func TestRunDeploymentBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--deployment", "d", "orders-demo.json"}, "give no design file"},
		{[]string{"--deployment", "d", "--guarantee", "exactly-once"}, "--guarantee: set by the deployment d"},
		{[]string{"--deployment", "d", "--app-id", "x", "--standbys", "1"}, "--standbys: set by the deployment d"},
		{[]string{"--deployment", "a/b"}, `"a/b" contains a /`},
	} {
		err := run(context.Background(), append([]string{"run"}, tc.args...), &syncBuffer{}, &syncBuffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("braid run %q: %v, want an error saying %s", tc.args, err, tc.want)
		}
	}
}

// TestServeOrchestratedDeployment: braid serve deploys the demo to
// processes it does not start (the config topic's record, revision 1,
// then 2 on a redeploy), shows the command that starts one, shows the
// process's telemetry as that deployment and not beside it, shows the
// deployment again after a restart (read back from the topic), and
// undeploys it with a tombstone, which stops the process's instances.
func TestServeOrchestratedDeployment(t *testing.T) {
	demo := readDemoTopics(t)
	addr, _, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 2)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--brokers", addr, "--no-demo", "--data-dir", t.TempDir()}
	serve := startProcess(t, args...)
	deploy := `{"design": "orders-demo", "orchestrated": true, "standbys": 0, "commitIntervalMs": 250}`
	var info struct {
		ID           string `json:"id"`
		Revision     int    `json:"revision"`
		Orchestrated bool   `json:"orchestrated"`
		RunCommand   string `json:"runCommand"`
		Reporting    bool   `json:"reporting"`
		Processes    []struct {
			Process  string `json:"process"`
			Revision int    `json:"revision"`
			State    string `json:"state"`
		} `json:"processes"`
	}
	waitUntil(t, time.Minute, "an orchestrated deploy to be taken", func() bool {
		return serve.call(t, "POST", "/api/deployments", deploy, &info) == 201
	})
	wantCommand := "braid run --deployment orders-demo --brokers " + addr
	if !info.Orchestrated || info.Revision != 1 || info.RunCommand != wantCommand || info.Reporting {
		t.Errorf("deployed: %+v, want orchestrated revision 1, not reporting, started with %q", info, wantCommand)
	}
	if st := serve.call(t, "POST", "/api/deployments", deploy, &info); st != 201 || info.Revision != 2 {
		t.Errorf("redeployed: %d %+v, want revision 2", st, info)
	}
	run := launchProcess(t, "run", "--deployment", "orders-demo", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir())
	run.waitLine(t, runsRevision(2))
	reporting := func(p *process) bool {
		return p.call(t, "GET", "/api/deployments/orders-demo", "", &info) == 200 && info.Reporting &&
			len(info.Processes) == 1 && info.Processes[0].Process == "i1" && info.Processes[0].State == "running"
	}
	waitUntil(t, time.Minute, "the process reporting as the deployment", func() bool { return reporting(serve) })
	waitUntil(t, time.Minute, "the process's metrics under the deployment's id", func() bool {
		found := false
		for _, s := range scrape(t, serve.url) {
			if strings.Contains(s.labels, `deployment="`+demo.appID+`"`) {
				t.Fatalf("the deployment shows twice, also as %s: %s%s", demo.appID, s.name, s.labels)
			}
			found = found || strings.Contains(s.labels, `deployment="orders-demo"`)
		}
		return found
	})
	if st := serve.call(t, "GET", "/live/orders-demo", "", nil); st != 200 {
		t.Errorf("the live page: %d", st)
	}
	serve.terminate(t)

	serve = startProcess(t, args...)
	var list []struct {
		ID           string `json:"id"`
		Revision     int    `json:"revision"`
		Orchestrated bool   `json:"orchestrated"`
	}
	waitUntil(t, time.Minute, "the orchestrated deployment listed after the restart", func() bool {
		return serve.call(t, "GET", "/api/deployments", "", &list) == 200 && len(list) == 1
	})
	if list[0].ID != "orders-demo" || list[0].Revision != 2 || !list[0].Orchestrated {
		t.Errorf("after the restart: %+v, want orders-demo, orchestrated, revision 2", list)
	}
	waitUntil(t, time.Minute, "the process reporting as the deployment after the restart", func() bool { return reporting(serve) })
	if !strings.Contains(serve.out.String(), "runs in processes you start ("+wantCommand+")") {
		t.Errorf("the restarted server does not name the orchestrated deployment and its command:\n%s", serve.out.String())
	}
	if st := serve.call(t, "DELETE", "/api/deployments/orders-demo", "", nil); st != 204 {
		t.Fatalf("undeploying: %d", st)
	}
	run.waitLine(t, func(line string) bool { return strings.Contains(line, "was undeployed") })
	if st := serve.call(t, "GET", "/api/deployments/orders-demo", "", nil); st != 404 {
		t.Errorf("after the undeploy: %d, want 404", st)
	}
	run.terminate(t)
	serve.terminate(t)
}

// assignments describes which static member holds which partitions.
func assignments(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	groups, err := adm.DescribeGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range groups[group].Members {
		a, _ := m.Assigned.AsConsumer()
		var parts []string
		for _, tp := range a.Topics {
			ps := slices.Clone(tp.Partitions)
			slices.Sort(ps)
			parts = append(parts, fmt.Sprintf("%s%v", tp.Topic, ps))
		}
		slices.Sort(parts)
		id := "?"
		if m.InstanceID != nil {
			id = *m.InstanceID
		}
		out = append(out, id+":"+strings.Join(parts, ","))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestRunDeploymentFailureHoldsItsTurn: an instance that fails ends the
// process with an error, for the orchestrator to restart it, and leaves
// a failed status, so that the processes after it do not move to the
// revision that failed.
func TestRunDeploymentFailureHoldsItsTurn(t *testing.T) {
	demo := readDemoTopics(t)
	addr, cl, adm := startRunBroker(t)
	createRunTopic(t, adm, demo.source, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: demo.source, Key: []byte("c1"), Value: []byte("not JSON")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deployTo(t, addr, demo, 1, 200)
	p := launchProcess(t, "run", "--deployment", "orders-demo", "--brokers", addr, "--instance-id", "i1", "--state-dir", t.TempDir(),
		"--telemetry-topic", "")
	go func() {
		for range p.lines { // drain, so that the process never blocks writing
		}
	}()
	select {
	case err := <-p.done:
		if err == nil {
			t.Fatalf("braid run --deployment exited with status 0 after its instance failed:\n%s", p.out.String())
		}
	case <-ctx.Done():
		t.Fatalf("braid run --deployment still runs 30 s after reading a bad record:\n%s", p.out.String())
	}
	c, err := deployconfig.NewClient(deployconfig.Config{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	procs := deployconfig.NewProcesses("orders-demo")
	followCtx, stop := context.WithCancel(ctx)
	defer stop()
	_ = c.Follow(followCtx, func(u deployconfig.Update) {
		if u.Kind == deployconfig.CaughtUp {
			stop()
		}
		procs.Apply(u, time.Now())
	})
	live := procs.Live(time.Now())
	if len(live) != 1 || live[0].State != deployconfig.Failed || live[0].Revision != 1 {
		t.Errorf("statuses after the failure: %+v, want i1 failed at revision 1", live)
	}
	if ok, _ := procs.Turn("i2", 1, time.Now()); ok {
		t.Error("a process after the failed one may take revision 1")
	}
}
