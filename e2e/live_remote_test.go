package e2e

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// TestLiveRemoteApplication watches an application the server does not
// run: two `braid run` processes of the demo design. Their live page is
// drawn from the design they report, shows both instances with their
// tasks and no button to drive them, and after one process is killed
// with SIGKILL shows the failover of its tasks with the detection the
// server measured from the reports (the session timeout: nobody saw the
// process die).
func TestLiveRemoteApplication(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	design := filepath.Join(filepath.Dir(filepath.Dir(self)), "cmd", "braid", "orders-demo.json")
	broker := startBrokerProc(t)
	url := startServeWith(t, "--brokers", broker.addr, "--no-demo")
	startBraid(t, "produced", "gen", "--topic", "orders", "--brokers", broker.addr)
	runs := map[string]*runProc{}
	for _, id := range []string{"i1", "i2"} {
		runs[id] = startBraid(t, "running ", "run", design, "--brokers", broker.addr, "--instance-id", id,
			"--state-dir", filepath.Join(t.TempDir(), id), "--session-timeout", "5s")
	}
	const id = "braid-orders-demo" // the application id, which names it
	b := newBrowser(t)
	b.stepWithin(90*time.Second, "open the live page of the application the run processes report",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		until(`document.body.dataset.remote === "true"`),
		chromedp.WaitVisible(tid("live-node-source")),
		until(`['i1', 'i2'].every(i => document.querySelector('[data-testid="instance-'+i+'"] [data-role="active"]'))`))
	var buttons int
	b.step("see no button that would drive the instances",
		eval(`Array.from(document.querySelectorAll('.lv-crash, .lv-stop, .lv-start, [data-testid="add-instance"]')).filter(e => e.offsetParent !== null).length`, &buttons))
	if buttons != 0 {
		t.Errorf("%d visible buttons to crash, stop, start or add instances of an application the server does not run", buttons)
	}

	if err := runs["i1"].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Task, Downtime, DetectedBy string
	}
	b.stepWithin(90*time.Second, "see i1's tasks fail over, detected by the session timeout",
		until(`document.querySelector('[data-testid="instance-i1"]').dataset.state === "crashed"`),
		until(`Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).some(r => /^\d+$/.test(r.dataset.downtime))`),
		eval(`Array.from(document.querySelectorAll('[data-testid^="failover-"][data-task]')).map((r, i) => ({Task: r.dataset.task, Downtime: r.dataset.downtime, DetectedBy: (document.querySelector('[data-testid="detection-'+i+'"]') || {dataset: {}}).dataset.detectedBy || ''}))`, &rows))
	t.Logf("failovers after the SIGKILL of i1: %+v", rows)
	for _, r := range rows {
		if r.DetectedBy != "session-timeout" {
			t.Errorf("failover of %s detected by %q, want session-timeout: nobody saw the process die", r.Task, r.DetectedBy)
		}
	}
	if len(rows) == 0 {
		t.Error("no failover row after killing i1")
	}
	saveSuccessShot(t, b, "live-remote-failover")
}
