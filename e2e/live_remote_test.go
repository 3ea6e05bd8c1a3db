package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// startBraid runs `braid args...` on host until the test ends, and waits
// for the line of its output that says it started.
func startBraid(t *testing.T, host *netHost, started string, args ...string) {
	t.Helper()
	bin, err := buildBraid()
	if err != nil {
		t.Fatal(err)
	}
	startSaying(t, host.command(bin, args...), started)
}

// startSaying starts cmd, which runs until the test ends, and waits for
// the line of its output that contains started.
func startSaying(t *testing.T, cmd *exec.Cmd, started string) {
	t.Helper()
	name := strings.Join(cmd.Args, " ")
	logs := &strings.Builder{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), started) {
				ok = true
				said <- true
			}
		}
		if !ok {
			said <- false
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, logs.String())
		}
	})
	select {
	case ok := <-said:
		if !ok {
			t.Fatalf("%s exited before saying %q", name, started)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s did not say %q within a minute", name, started)
	}
}

// orchestrated is a `braid run` process the test restarts whenever it
// exits, with the same arguments on the same host, as Kubernetes restarts
// a pod's container.
type orchestrated struct {
	host *netHost
	// logs holds the output of every process started, one after another.
	logs *strings.Builder
	mu   sync.Mutex
	cur  *exec.Cmd
	// starts counts the processes started, the first included.
	starts int
}

// orchestrate starts `braid args...` on host and starts it again each
// time it exits, until the test ends.
func orchestrate(t *testing.T, host *netHost, args ...string) *orchestrated {
	t.Helper()
	o := &orchestrated{host: host, logs: &strings.Builder{}}
	if err := o.start(args); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			cmd := o.current()
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			select {
			case <-stop:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return
			case <-exited:
			}
			if err := o.start(args); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		if t.Failed() {
			t.Logf("braid %s output (%d starts):\n%s", strings.Join(args, " "), o.started(), o.logs.String())
		}
	})
	return o
}

// start starts the process, without waiting for it to say anything: its
// restarts happen on the orchestrator's goroutine.
func (o *orchestrated) start(args []string) error {
	bin, err := buildBraid()
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.logs, "--- start %d\n", o.starts+1)
	cmd := o.host.command(bin, args...)
	// The previous process has been waited for: its output is all in.
	cmd.Stdout, cmd.Stderr = o.logs, o.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting braid %s: %w", strings.Join(args, " "), err)
	}
	o.cur = cmd
	o.starts++
	return nil
}

func (o *orchestrated) current() *exec.Cmd {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur
}

// kill kills the current process with SIGKILL, as a machine that dies
// ends it.
func (o *orchestrated) kill() {
	_ = o.current().Process.Signal(syscall.SIGKILL)
}

func (o *orchestrated) started() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.starts
}

// failoverRow is a row of the live page's failover table.
type failoverRow struct {
	Task, Move, Cause, DetectedBy string
	// Detection and Downtime are the ms the page shows; nil: none.
	Detection, Downtime *float64
}

// readFailovers reads the failover table.
const readFailovers = `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map(r => {
	const num = s => /^-?\d+/.test(s) ? parseInt(s, 10) : null
	const det = r.querySelector('[data-testid^="detection-"]')
	return {Task: r.dataset.task, Move: r.cells[1].textContent, Cause: r.cells[2].textContent,
		DetectedBy: det.dataset.detectedBy || '', Detection: num(det.textContent), Downtime: num(r.dataset.downtime)}
})`

// TestLiveRemoteApplication deploys the demo from the designer to
// processes the test starts, and watches and drives them, with every
// process on a host of its own: `braid broker`, `braid serve` and two
// nodes, each a network namespace (or all on loopback where namespaces
// cannot be made: the test says so). The editor's Deploy dialog writes
// the deployment to the config topic, and its live page shows the
// command that starts a process until one reports. On each node the
// test plays the orchestrator: it runs that command, as `braid run
// --deployment`, and restarts it whenever it exits. The live page then
// shows both processes running and their instances with tasks, and no
// button to add one. The page crashes i1 (a signed command through the
// control topic: the process exits), and the test kills i2's process
// with SIGKILL; each time the page shows the failover of the dead
// instance's tasks, with the detection (the session timeout: nobody saw
// the processes die) and the downtime the server measured from the
// reports. Between the two, the page's store browser finds a customer
// whose windows i2 holds (through the processes' store servers, which
// each advertises in the group); right after i2's process is killed the
// same lookup is answered by the surviving i1, from its standby until
// the group moves the task. Then the server is stopped and started again on its data dir:
// the open page reconnects, the designs list links the deployment, read
// back from the config topic, and its live page shows both processes and
// their instances running.
func TestLiveRemoteApplication(t *testing.T) {
	const token = "e2e-auth-token"
	t.Setenv("BRAID_CONTROL_SECRET", "e2e-control-secret")
	// The runs' store servers, off loopback, need a token; the server
	// sends the same one.
	t.Setenv("BRAID_QUERY_TOKEN", "e2e-query-token")
	lab := newNetLab(t, "broker", "server", "node1", "node2")
	// Off loopback the broker is open to the lab's private subnet alone.
	broker := startBrokerOn(t, lab.host("broker"), "--insecure-broker")
	srv := startServeOn(t, lab.host("server"), token, "--brokers", broker.addr, "--no-demo")
	startBraid(t, lab.root, "produced", "gen", "--topic", "orders", "--brokers", broker.addr)
	b := newBrowser(t)
	id := deployToProcesses(t, b, srv, broker.addr)
	const app = "braid-orders-demo" // the design's application id

	// The orchestrator runs on each node one process of the deployment,
	// under the same instance id and state each time it starts. The
	// session timeout is the process's own: the deployment has none.
	nodes := map[string]string{"i1": "node1", "i2": "node2"}
	runArgs := func(instance string) []string {
		return []string{"run", "--deployment", id, "--brokers", broker.addr, "--instance-id", instance,
			"--state-dir", filepath.Join(t.TempDir(), instance), "--session-timeout", "5s",
			"--advertise", lab.host(nodes[instance]).addr(t)}
	}
	runs := map[string]*orchestrated{}
	for instance, node := range nodes {
		runs[instance] = orchestrate(t, lab.host(node), runArgs(instance)...)
	}
	b.stepWithin(60*time.Second, "see both processes report and their instances run with tasks",
		waitJS(remoteRunning, 50*time.Second))
	var addButtons int
	b.step("see no button to add an instance: the orchestrator places processes",
		eval(`Array.from(document.querySelectorAll('[data-testid="add-instance"]')).filter(e => e.offsetParent !== null).length`, &addButtons))
	if addButtons != 0 {
		t.Errorf("%d visible buttons to add an instance to a deployment run by processes the server does not start", addButtons)
	}

	failedOver := func(from string) string {
		return `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).some(r => /^\d+$/.test(r.dataset.downtime) && r.textContent.includes('` + from + ` →'))`
	}
	b.stepWithin(60*time.Second, "crash i1 from the page and see its tasks fail over",
		chromedp.Click(tid("crash-i1")),
		// The process exits and is restarted at once, under the same
		// instance id: its old member's tasks move when its session
		// times out, to i2 or to the new i1.
		waitJS(failedOver("i1"), 50*time.Second))
	if n := runs["i1"].started(); n < 2 {
		t.Errorf("i1's process was started %d times, want a restart after the crash command ended it", n)
	}
	b.stepWithin(60*time.Second, "see i1 back, restarted by the orchestrator, with tasks", waitJS(hasActive("i1"), 50*time.Second))
	var key string
	b.stepWithin(60*time.Second, "find with the store browser a customer whose windows i2 holds",
		waitJS(`document.body.dataset.queryable === "true"`, 50*time.Second),
		waitJS(lookUntil(`r.dataset.found === "true" && r.dataset.instance === "i2" && r.dataset.stale !== "true"`, true), 50*time.Second),
		eval(`document.querySelector('[data-testid="store-key"]').value`, &key))
	runs["i2"].kill()
	// At once, before the group has noticed: i2's server is gone (or
	// restarted without its tasks), so i1 answers from its standby.
	var answer string
	b.stepWithin(60*time.Second, "see "+key+" answered by the surviving i1 after i2's process was killed",
		waitJS(lookUntil(`r.dataset.found === "true" && r.dataset.instance === "i1"`, false), 50*time.Second),
		eval(`document.querySelector('[data-testid="store-result"]').dataset.stale + ': ' + ((document.querySelector('[data-testid="store-stale"]') || {}).textContent || 'from the active')`, &answer))
	t.Logf("after i2's process was killed, i1 answered %s (stale: marker): %s", key, answer)
	b.stepWithin(60*time.Second, "see i2's tasks fail over after its process was killed", waitJS(failedOver("i2"), 50*time.Second))

	var rows []failoverRow
	b.step("read the failover table", eval(readFailovers, &rows))
	checkFailovers(t, rows, "i1", "i2")
	saveSuccessShot(t, b, "live-remote-failover")

	srv.stop()
	b.step("see the open page lose the server", until(`document.querySelector('[data-testid="connection"]').dataset.state !== "open"`))
	srv.start()
	b.stepWithin(60*time.Second, "see the open page reconnect to the restarted server",
		waitJS(`document.querySelector('[data-testid="connection"]').dataset.state === "open"`, 50*time.Second))
	// The deployment comes back from the config topic, before the
	// telemetry is read: its processes' reports show under its id.
	var href string
	b.stepWithin(60*time.Second, "see the designs list link the deployment read back from the config topic",
		chromedp.Navigate(srv.url+"/"),
		chromedp.WaitVisible(tid("deployed-"+id)),
		eval(`document.querySelector('[data-testid="deployed-`+id+`"]').getAttribute('href')`, &href))
	if href != "/live/"+id {
		t.Errorf("the designs list links the deployment to %q, want /live/%s", href, id)
	}
	b.stepWithin(60*time.Second, "open its live page and see both processes and their instances running",
		chromedp.Click(tid("deployed-"+id)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(remoteRunning, 50*time.Second))
	if resp, err := srv.get("/api/deployments/" + app); err != nil {
		t.Errorf("GET /api/deployments/%s: %v", app, err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /api/deployments/%s: %s, want 404: the processes' telemetry shows as deployment %s, not beside it", app, resp.Status, id)
		}
	}
	saveSuccessShot(t, b, "live-remote-after-server-restart")
}

// deployToProcesses deploys the demo design from its editor to processes
// the test starts, and returns the deployment's id once its live page,
// with no process reporting yet, shows the command that starts one.
func deployToProcesses(t *testing.T, b *browser, srv *serveProc, brokers string) string {
	t.Helper()
	// ?token= sets the cookie the pages' requests and websocket carry.
	b.step("open the demo's editor and its deploy dialog",
		chromedp.Navigate(srv.url+"/designs/orders-demo?token="+srv.token),
		chromedp.WaitVisible(chromedp.CSS(`body[data-editor-ready="true"]`)),
		chromedp.Click(tid("deploy")),
		chromedp.WaitVisible(tid("deploy-dialog")))
	var id, command string
	var reporting bool
	b.stepWithin(45*time.Second, "deploy to processes you start and see the command that starts one",
		chromedp.SetValue(tid("deploy-where"), "processes"),
		until(`document.querySelector('[data-testid="deploy-where"]').dispatchEvent(new Event('change', {bubbles: true}))`),
		chromedp.Click(tid("deploy-submit")),
		chromedp.WaitVisible(chromedp.CSS(`body.live-page[data-live-ready="true"][data-orchestrated="true"]`)),
		chromedp.WaitVisible(tid("run-command")),
		eval(`document.body.dataset.deploymentId`, &id),
		eval(`document.querySelector('[data-testid="run-command-text"]').textContent`, &command),
		eval(`document.body.dataset.reporting === "true"`, &reporting))
	if reporting {
		t.Errorf("deployment %s reports before any process was started", id)
	}
	if want := "braid run --deployment " + id + " --brokers " + brokers; id == "" || command != want {
		t.Fatalf("the live page of deployment %q shows the command %q, want %q", id, command, want)
	}
	return id
}

// lookUntil is a condition on the live page that looks a key up with
// the store browser each time it does not hold yet; cond is on r, the
// result of the last lookup. With nextKey, each lookup asks the next of
// the generator's customers (key-0 ... key-9), else the key in the box.
func lookUntil(cond string, nextKey bool) string {
	return `(() => {
		const r = document.querySelector('[data-testid="store-result"]')
		if (r && ` + cond + `) return true
		const k = document.querySelector('[data-testid="store-key"]')
		if (` + fmt.Sprint(nextKey) + `) {
			window.e2eKey = ((window.e2eKey ?? -1) + 1) % 10
			k.value = 'key-' + window.e2eKey
		}
		document.querySelector('[data-testid="store-lookup"]').click()
		return false
	})()`
}

// hasActive is a condition on the live page: instance runs with tasks.
func hasActive(instance string) string {
	return `!!document.querySelector('[data-testid="instance-` + instance + `"][data-state="running"] [data-role="active"]')`
}

// remoteRunning is a condition on the live page of an orchestrated
// deployment: its processes report, i1 and i2 run its revision 1 (the
// summary lists each process's last status) and their instances run
// with tasks, so the command that starts a process is gone.
var remoteRunning = `document.body.dataset.remote === "true" && document.body.dataset.commands === "true" &&
	document.body.dataset.orchestrated === "true" && document.body.dataset.reporting === "true" &&
	document.querySelector('[data-testid="run-command"]').hidden &&
	['i1', 'i2'].every(p => document.querySelector('[data-testid="deployment-summary"]').textContent.includes(p + ' running r1')) &&
	!!document.querySelector('[data-testid="live-node-source"]') && ` + hasActive("i1") + " && " + hasActive("i2")

// checkFailovers checks that the failovers out of each instance are in
// the table, each with a detection and a downtime (a negative one was a
// move among live instances taken for a failover), and that the group
// noticed each by its session timeout: nobody saw the processes die.
func checkFailovers(t *testing.T, rows []failoverRow, from ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rows {
		det, down := "none", "none"
		if r.Detection != nil {
			det = fmt.Sprintf("%.0f ms", *r.Detection)
		}
		if r.Downtime != nil {
			down = fmt.Sprintf("%.0f ms", *r.Downtime)
		}
		t.Logf("failover of %s %s (%s): detection %s by %s, downtime %s", r.Task, r.Move, r.Cause, det, r.DetectedBy, down)
		for _, f := range from {
			if strings.HasPrefix(r.Move, f+" →") {
				seen[f] = true
			}
		}
		if r.Detection == nil || r.Downtime == nil || *r.Detection < 0 || *r.Downtime < 0 {
			t.Errorf("failover of %s (%s) shows detection %s and downtime %s, want both measured, neither negative", r.Task, r.Move, det, down)
		}
		if r.DetectedBy != "session-timeout" {
			t.Errorf("failover of %s (%s) detected by %q, want session-timeout: nobody saw the processes die", r.Task, r.Move, r.DetectedBy)
		}
	}
	for _, f := range from {
		if !seen[f] {
			t.Errorf("no failover out of %s in the table", f)
		}
	}
}
