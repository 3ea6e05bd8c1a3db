package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/deploy"
)

// process is the braid command running as a process of its own (this
// test binary, see TestMain).
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer // stdout and stderr
	url  string
	done chan error
	// lines gets every line of stdout, for waiting on one.
	lines chan string
}

// startProcess runs `braid args...` and waits for the line that says
// how to stop it, reading serve's URL on the way.
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	p := launchProcess(t, args...)
	urlRE := regexp.MustCompile(`the designer is at (\S+)`)
	p.waitLine(t, func(line string) bool {
		if m := urlRE.FindStringSubmatch(line); m != nil {
			p.url = strings.TrimSuffix(m[1], "/")
		}
		return strings.Contains(line, "stop with Ctrl-C")
	})
	return p
}

// launchProcess runs `braid args...` and returns at once.
func launchProcess(t *testing.T, args ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BRAID_TEST_MAIN=1")
	return launchCommand(t, cmd)
}

// launchCommand starts cmd, a braid command or another program, and
// returns at once.
func launchCommand(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1), lines: make(chan string, 1024)}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out.Write(append(sc.Bytes(), '\n'))
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(cmd.Args, " "), p.out.String())
		}
	})
	return p
}

// waitLine reads stdout until a line satisfies ok and returns it; the
// process ending first fails the test, and so does a minute without the
// line (a guard against hanging, not a bound on how fast braid is).
func (p *process) waitLine(t *testing.T, ok func(string) bool) string {
	t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for {
		select {
		case line, open := <-p.lines:
			if !open {
				t.Fatalf("braid ended before printing the line waited for:\n%s", p.out.String())
			}
			if ok(line) {
				return line
			}
		case <-guard.C:
			t.Fatalf("braid printed no such line in a minute:\n%s", p.out.String())
		}
	}
}

// terminate sends SIGTERM and checks braid exits with status 0.
func (p *process) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range p.lines { // drain, so that the process never blocks writing
		}
	}()
	if err := <-p.done; err != nil {
		t.Fatalf("braid after SIGTERM: %v\n%s", err, p.out.String())
	}
}

func (p *process) call(t *testing.T, method, path, body string, v any) int {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if v != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, data)
	}
	return res.StatusCode
}

// settings are what a restart must keep of a deployment.
type settings struct {
	ID, Design, ApplicationID, Guarantee string
	Revision, Instances, Standbys        int
	CommitIntervalMs                     int64
	Generators                           []deploy.GeneratorSpec
}

func settingsOf(infos []deploy.Info) []settings {
	out := []settings{}
	for _, in := range infos {
		s := settings{ID: in.ID, Design: in.Design, ApplicationID: in.ApplicationID, Guarantee: in.Guarantee,
			Revision: in.Revision, Instances: in.Instances, Standbys: in.Standbys, CommitIntervalMs: in.CommitIntervalMs}
		for _, g := range in.Generators {
			s.Generators = append(s.Generators, g.GeneratorSpec)
		}
		out = append(out, s)
	}
	return out
}

// TestServeKeepsDeploymentsAcrossRestarts runs `braid serve` as a
// process, redeploys the demo with settings other than its defaults (an
// older revision, two instances and one added, no standby, exactly-once,
// a 250 ms commit interval, another generator), stops it with SIGTERM
// and starts it again: the deployment is back with the same settings and
// application id, not the demo's defaults. Undeployed, it stays so
// across the next restart.
func TestServeKeepsDeploymentsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", dir, "--state-demo-keys", "0"}
	p := startProcess(t, args...)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, "the demo design runs live at") })

	// A second revision, so that "the latest" and the deployed one differ.
	var design struct {
		Design json.RawMessage `json:"design"`
	}
	if st := p.call(t, "GET", "/api/designs/orders-demo", "", &design); st != 200 {
		t.Fatalf("GET the demo: %d", st)
	}
	if st := p.call(t, "PUT", "/api/designs/orders-demo", `{"design": `+string(design.Design)+`, "message": "again"}`, nil); st != 200 {
		t.Fatalf("saving a second revision: %d", st)
	}
	if st := p.call(t, "POST", "/api/deployments", `{"design": "orders-demo", "revision": 1, "instances": 2, "standbys": 0,
		"guarantee": "exactly-once", "commitIntervalMs": 250}`, nil); st != 201 {
		t.Fatalf("redeploying the demo: %d", st)
	}
	if st := p.call(t, "POST", "/api/deployments/orders-demo/generators", `{"topic": "orders", "rate": 7, "keys": 3, "keyPrefix": "c",
		"template": {"customer": "key", "amount": "random(60, 70)", "ts": "timestamp"}, "jitterMs": 100, "lateFraction": 0.5, "lateByMs": 9000, "seed": 42}`, nil); st != 201 {
		t.Fatalf("replacing the generator: %d", st)
	}
	if st := p.call(t, "POST", "/api/deployments/orders-demo/instances", "{}", nil); st != 201 {
		t.Fatalf("adding an instance: %d", st)
	}
	var before []deploy.Info
	if st := p.call(t, "GET", "/api/deployments", "", &before); st != 200 {
		t.Fatalf("GET /api/deployments: %d", st)
	}
	want := settingsOf(before)
	if len(want) != 1 || want[0].Revision != 1 || want[0].Instances != 3 || want[0].Standbys != 0 || want[0].Guarantee != "exactly-once" ||
		want[0].CommitIntervalMs != 250 || len(want[0].Generators) != 1 || want[0].Generators[0].Rate != 7 {
		t.Fatalf("before the restart: %+v", want)
	}
	p.terminate(t)

	p = startProcess(t, args...)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, "redeployed 1 recorded deployments") })
	var after []deploy.Info
	if st := p.call(t, "GET", "/api/deployments", "", &after); st != 200 {
		t.Fatalf("GET /api/deployments after the restart: %d", st)
	}
	if got := settingsOf(after); !reflect.DeepEqual(got, want) {
		t.Errorf("after the restart:\n%+v\nwant\n%+v", got, want)
	}
	if st := p.call(t, "GET", "/live/orders-demo", "", nil); st != 200 {
		t.Errorf("the live page after the restart: %d", st)
	}
	if st := p.call(t, "DELETE", "/api/deployments/orders-demo", "", nil); st != 204 {
		t.Fatalf("undeploying: %d", st)
	}
	p.terminate(t)
	if strings.Contains(p.out.String(), "the demo design runs live") {
		t.Errorf("the restart deployed the demo with its defaults:\n%s", p.out.String())
	}

	// Undeployed: not redeployed, and no demo either.
	p = startProcess(t, args...)
	p.waitLine(t, func(line string) bool { return strings.Contains(line, "redeployed 0 recorded deployments") })
	var none []deploy.Info
	if st := p.call(t, "GET", "/api/deployments", "", &none); st != 200 || len(none) != 0 {
		t.Errorf("after undeploying and restarting: %d %+v, want no deployment", st, none)
	}
	p.terminate(t)
	if strings.Contains(p.out.String(), "the demo design runs live") {
		t.Errorf("the demo came back after it was undeployed:\n%s", p.out.String())
	}
}
