package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// brokerProc is `braid broker` run as its own process on a fixed address
// and data dir, so that the test can kill it and start it again where it
// was.
type brokerProc struct {
	t         *testing.T
	host      *netHost
	addr, dir string
	args      []string
	cmd       *exec.Cmd
	logs      *strings.Builder
}

func startBrokerProc(t *testing.T) *brokerProc {
	t.Helper()
	return startBrokerOn(t, loopback)
}

// startBrokerOn runs the broker on a free port of host, with args added
// to its flags.
func startBrokerOn(t *testing.T, host *netHost, args ...string) *brokerProc {
	t.Helper()
	b := &brokerProc{t: t, host: host, addr: host.addr(t), dir: t.TempDir(), args: args, logs: &strings.Builder{}}
	b.start()
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			t.Logf("braid broker output:\n%s", b.logs.String())
		}
	})
	return b
}

// start runs the broker and returns once it says it listens.
func (b *brokerProc) start() {
	b.t.Helper()
	bin, err := buildBraid()
	if err != nil {
		b.t.Fatal(err)
	}
	cmd := b.host.command(bin, append([]string{"broker", "--listen", b.addr, "--data-dir", b.dir}, b.args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	cmd.Stderr = b.logs
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.cmd = cmd
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "listening on") {
				said = true
				listening <- true
			}
		}
		if !said {
			listening <- false
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-listening:
		if !ok {
			b.t.Fatalf("braid broker exited before listening on %s:\n%s", b.addr, b.logs.String())
		}
	case <-time.After(30 * time.Second):
		b.t.Fatalf("braid broker did not listen on %s within 30 s:\n%s", b.addr, b.logs.String())
	}
}

// kill kills the broker with SIGKILL, as a crashed machine's process dies.
func (b *brokerProc) kill() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	_ = b.cmd.Wait()
	b.cmd = nil
}

// TestLiveBrokerOutage runs the demo deployment of `braid serve` against
// `braid broker` in its own process, kills the broker and starts it again:
// the live page says under every instance that the broker is unreachable
// and logs it, then says it answers again, and the tasks process again by
// themselves.
func TestLiveBrokerOutage(t *testing.T) {
	brk := startBrokerProc(t)
	url := startServeWith(t, "--broker-listen", "", "--brokers", brk.addr)
	const id = "orders-demo"
	waitDeployment(t, url, id)
	b := newBrowser(t)
	instances := []string{"instance-1", "instance-2", "instance-3"}
	allDown := func(down bool) string {
		var conds []string
		for _, in := range instances {
			conds = append(conds, fmt.Sprintf(`(() => { const r = document.querySelector('[data-testid="instance-%s"]'); return r && r.dataset.brokerDown === %q; })()`, in, fmt.Sprint(down)))
		}
		return strings.Join(conds, " && ")
	}
	b.stepWithin(3*time.Minute, "open the live view of a settled deployment",
		chromedp.Navigate(url+"/live/"+id),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live-ready="true"]`)),
		waitJS(settledJS([]string{"0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2", "1_3"}), 3*time.Minute),
		until(allDown(false)))

	// The stream time of a task before the outage: it must move on after.
	var before int64
	b.step("read the stream time of task 1_0",
		eval(`Math.max(...Array.from(document.querySelectorAll('[data-role="active"][data-task="1_0"]')).map(c => Number(c.dataset.streamTime)))`, &before))
	brk.kill()
	var line string
	b.stepWithin(2*time.Minute, "see every instance say the broker is unreachable",
		until(allDown(true)),
		chromedp.WaitVisible(tid("broker-instance-1")),
		eval(`document.querySelector('[data-testid="broker-instance-1"]').textContent`, &line),
		until(`!!document.querySelector('[data-testid="events-list"] [data-kind="broker-unreachable"]')`))
	if !strings.Contains(line, brk.addr) || !strings.Contains(line, "unreachable") {
		t.Errorf("the instance's broker line reads %q, want it to name %s as unreachable", line, brk.addr)
	}
	saveSuccessShot(t, b, "broker-unreachable")

	brk.start()
	b.stepWithin(2*time.Minute, "see the broker answer again and the tasks process",
		until(allDown(false)),
		chromedp.WaitNotVisible(tid("broker-instance-1")),
		until(`!!document.querySelector('[data-testid="events-list"] [data-kind="broker-reachable"]')`),
		waitJS(settledJS([]string{"0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2", "1_3"}), 2*time.Minute),
		until(fmt.Sprintf(`Array.from(document.querySelectorAll('[data-role="active"][data-task="1_0"]')).some(c => Number(c.dataset.streamTime) > %d)`, before)))
}
