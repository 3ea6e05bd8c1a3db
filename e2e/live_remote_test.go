package e2e

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// runProc is a `braid` process the test plays the orchestrator for.
type runProc struct {
	cmd  *exec.Cmd
	logs *strings.Builder
}

// startBraid runs `braid args...` until the test ends, and waits for the
// line of its output that says it started.
func startBraid(t *testing.T, started string, args ...string) *runProc {
	t.Helper()
	bin, err := buildBraid()
	if err != nil {
		t.Fatal(err)
	}
	p := &runProc{cmd: exec.Command(bin, args...), logs: &strings.Builder{}}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
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
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("braid %s output:\n%s", args[0], p.logs.String())
		}
	})
	select {
	case ok := <-said:
		if !ok {
			t.Fatalf("braid %s exited before saying %q:\n%s", strings.Join(args, " "), started, p.logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("braid %s did not say %q within a minute:\n%s", strings.Join(args, " "), started, p.logs.String())
	}
	return p
}

// orchestrated is a `braid run` process the test restarts whenever it
// exits, as Kubernetes restarts a pod's container.
type orchestrated struct {
	mu  sync.Mutex
	cur *runProc
	// starts counts the processes started, the first included.
	starts int
}

func orchestrate(t *testing.T, args ...string) *orchestrated {
	t.Helper()
	o := &orchestrated{}
	o.start(t, args)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			o.mu.Lock()
			p := o.cur
			o.mu.Unlock()
			exited := make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(exited) }()
			select {
			case <-stop:
				return
			case <-exited:
			}
			select {
			case <-stop:
				return
			default:
				o.start(t, args)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		o.kill()
		<-done
	})
	return o
}

// start starts the process, without waiting for it to say anything: its
// restarts happen on the orchestrator's goroutine.
func (o *orchestrated) start(t *testing.T, args []string) {
	bin, err := buildBraid()
	if err != nil {
		t.Error(err)
		return
	}
	p := &runProc{cmd: exec.Command(bin, args...), logs: &strings.Builder{}}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	o.mu.Lock()
	o.cur = p
	o.starts++
	o.mu.Unlock()
}

// kill kills the current process with SIGKILL.
func (o *orchestrated) kill() {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.cur.cmd.Process.Signal(syscall.SIGKILL)
}

func (o *orchestrated) started() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.starts
}

// TestLiveRemoteApplication watches and drives an application the server
// does not run: two `braid run` processes of the demo design, which the
// test restarts when they exit. Their live page is drawn from the design
// they report and shows both instances with their tasks and no button to
// add one. The page crashes i1 (a signed command through the control
// topic: the process exits), and the test kills i2's process with
// SIGKILL; each time the page shows the failover of the dead instance's
// tasks, with the detection the server measured from the reports (the
// session timeout: nobody saw the processes die).
func TestLiveRemoteApplication(t *testing.T) {
	t.Setenv("BRAID_CONTROL_SECRET", "e2e-control-secret")
	_, self, _, _ := runtime.Caller(0)
	design := filepath.Join(filepath.Dir(filepath.Dir(self)), "cmd", "braid", "orders-demo.json")
	broker := startBrokerProc(t)
	url := startServeWith(t, "--brokers", broker.addr, "--no-demo")
	startBraid(t, "produced", "gen", "--topic", "orders", "--brokers", broker.addr)
	runs := map[string]*orchestrated{}
	for _, id := range []string{"i1", "i2"} {
		runs[id] = orchestrate(t, "run", design, "--brokers", broker.addr, "--instance-id", id,
			"--state-dir", filepath.Join(t.TempDir(), id), "--session-timeout", "5s")
	}
	const id = "braid-orders-demo" // the application id, which names it
	b := newBrowser(t)
	hasActive := func(instance string) string {
		return `!!document.querySelector('[data-testid="instance-` + instance + `"][data-state="running"] [data-role="active"]')`
	}
	b.stepWithin(90*time.Second, "open the live page of the application the run processes report",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		until(`document.body.dataset.remote === "true" && document.body.dataset.commands === "true"`),
		chromedp.WaitVisible(tid("live-node-source")),
		until(hasActive("i1")+" && "+hasActive("i2")))
	var addButtons int
	b.step("see no button to add an instance: the orchestrator places processes",
		eval(`Array.from(document.querySelectorAll('[data-testid="add-instance"]')).filter(e => e.offsetParent !== null).length`, &addButtons))
	if addButtons != 0 {
		t.Errorf("%d visible buttons to add an instance to an application the server does not run", addButtons)
	}

	failedOver := func(from string) string {
		return `Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).some((r, i) => /^\d+$/.test(r.dataset.downtime) && r.textContent.includes('` + from + ` →'))`
	}
	b.stepWithin(90*time.Second, "crash i1 from the page and see its tasks fail over",
		chromedp.Click(tid("crash-i1")),
		// The process exits and is restarted at once, under the same
		// instance id: its old member's tasks move when its session
		// times out, to i2 or to the new i1.
		waitJS(failedOver("i1"), 80*time.Second))
	if n := runs["i1"].started(); n < 2 {
		t.Errorf("i1's process was started %d times, want a restart after the crash command ended it", n)
	}
	b.stepWithin(120*time.Second, "see i1 back, restarted by the orchestrator, with tasks", waitJS(hasActive("i1"), 110*time.Second))
	runs["i2"].kill()
	b.stepWithin(90*time.Second, "see i2's tasks fail over after its process was killed", waitJS(failedOver("i2"), 80*time.Second))

	var rows []struct{ Task, Text, DetectedBy string }
	b.step("read the failover table",
		eval(`Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map((r, i) => ({Task: r.dataset.task, Text: r.textContent, DetectedBy: (document.querySelector('[data-testid="detection-'+i+'"]') || {dataset: {}}).dataset.detectedBy || ''}))`, &rows))
	t.Logf("failovers: %+v", rows)
	for _, r := range rows {
		if r.DetectedBy != "session-timeout" {
			t.Errorf("failover of %s (%s) detected by %q, want session-timeout: nobody saw the processes die", r.Task, r.Text, r.DetectedBy)
		}
	}
	saveSuccessShot(t, b, "live-remote-failover")
}
