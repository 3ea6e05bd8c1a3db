package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
)

// TestServeShowsRunProcesses is the check, as a person would run
// it: `braid broker`, `braid serve --brokers B --no-demo`, `braid gen` and
// two `braid run` processes, all processes. The server's /metrics counts
// both instances' records, and after one run process is killed with
// SIGKILL its failovers are counted, measured from the reports through
// Kafka, since nothing in that process could say it died.
func TestServeShowsRunProcesses(t *testing.T) {
	demo := readDemoTopics(t)
	addr := startSharedBroker(t)
	serve := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--brokers", addr, "--no-demo",
		"--data-dir", t.TempDir())
	gen := launchProcess(t, "gen", "--topic", demo.source, "--brokers", addr)
	defer gen.terminate(t)
	runs := map[string]*process{}
	for _, id := range []string{"i1", "i2"} {
		runs[id] = launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", id,
			"--state-dir", filepath.Join(t.TempDir(), id), "--session-timeout", "5s")
	}

	metric := func(name, instance string) float64 {
		sum := 0.0
		for _, s := range scrape(t, serve.url) {
			if s.name == name && strings.Contains(s.labels, `deployment="`+demo.appID+`"`) &&
				(instance == "" || strings.Contains(s.labels, `instance="`+instance+`"`)) {
				sum += s.value
			}
		}
		return sum
	}
	waitUntil(t, 2*time.Minute, "braid_records_processed_total of i1 and i2 on the server", func() bool {
		return metric("braid_records_processed_total", "i1") > 0 && metric("braid_records_processed_total", "i2") > 0
	})
	before := metric("braid_failovers_total", "")

	if err := runs["i1"].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitUntil(t, 2*time.Minute, "braid_failovers_total to grow after i1 was killed", func() bool {
		return metric("braid_failovers_total", "i1") > before
	})
	t.Logf("braid_failovers_total grew %v after the SIGKILL (session timeout 5s)", time.Since(killed).Round(time.Millisecond))
	runs["i2"].terminate(t)
}

// startSharedBroker gives a test of processes its broker and returns the
// bootstrap addresses: a `braid broker` process, as a person would start
// one, or the package's Apache Kafka cluster (brokertest), which the test
// leaves cleared of topics and groups.
func startSharedBroker(t *testing.T) string {
	t.Helper()
	if brokertest.OnKafka() {
		return brokertest.Start(t, broker.Config{}).Bootstrap()
	}
	_, addr := startBrokerProcess(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	return addr
}

// TestServeFindsApplicationsStartedBefore: an application started by hand
// (braid run twice, no server) appears on a server started later, with
// both instances and their tasks: the server reads the reports of the
// last minute.
func TestServeFindsApplicationsStartedBefore(t *testing.T) {
	demo := readDemoTopics(t)
	addr := startSharedBroker(t)
	gen := launchProcess(t, "gen", "--topic", demo.source, "--brokers", addr)
	defer gen.terminate(t)
	for _, id := range []string{"i1", "i2"} {
		p := launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", id, "--state-dir", filepath.Join(t.TempDir(), id))
		p.waitLine(t, func(line string) bool { return strings.HasPrefix(line, "running ") })
		defer p.terminate(t)
	}
	serve := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--brokers", addr, "--no-demo",
		"--data-dir", t.TempDir())
	tasks := func(instance string) map[string]bool {
		out := map[string]bool{}
		for _, s := range scrape(t, serve.url) {
			if s.name == "braid_records_processed_total" && strings.Contains(s.labels, `deployment="`+demo.appID+`"`) &&
				strings.Contains(s.labels, `instance="`+instance+`"`) {
				_, task, _ := strings.Cut(s.labels, `task="`)
				out[strings.TrimSuffix(task, `"}`)] = true
			}
		}
		return out
	}
	waitUntil(t, 2*time.Minute, "both instances of the hand-started application, with every task, on the server", func() bool {
		i1, i2 := tasks("i1"), tasks("i2")
		return len(i1) > 0 && len(i2) > 0 && len(i1)+len(i2) == 8
	})
}

// sample is one line of the Prometheus text format.
type sample struct {
	name, labels string
	value        float64
}

// scrape reads the server's /metrics.
func scrape(t *testing.T, base string) []sample {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s/metrics: %v", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("scraping %s/metrics: %s: %s", base, resp.Status, body)
	}
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(head, "{")
		out = append(out, sample{name: name, labels: labels, value: v})
	}
	return out
}

// waitUntil polls cond until it holds, for timeout at most: a guard
// against hanging, not a bound on how fast anything is.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
