package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/control"
)

// TestServeCrashWipesARunProcess: `braid serve` and a `braid run` process
// sharing a control secret; POST .../instances/i1/crash-wipe on the
// server makes the process delete its instance's state dir and exit with
// status 4, saying so, for whoever started it to start it again with no
// state.
func TestServeCrashWipesARunProcess(t *testing.T) {
	t.Setenv(control.SecretEnv, "s3cret")
	demo := readDemoTopics(t)
	addr := startSharedBroker(t)
	serve := startProcess(t, "serve", "--listen", "127.0.0.1:0", "--brokers", addr, "--no-demo", "--data-dir", t.TempDir())
	gen := launchProcess(t, "gen", "--topic", demo.source, "--brokers", addr)
	defer gen.terminate(t)
	stateDir := t.TempDir()
	run := launchProcess(t, "run", "orders-demo.json", "--brokers", addr, "--instance-id", "i1", "--state-dir", stateDir)
	go func() {
		for range run.lines { // drain, so that the process never blocks writing
		}
	}()
	instanceDir := filepath.Join(stateDir, "i1")
	waitUntil(t, 2*time.Minute, "i1 processing, its state dir written", func() bool {
		processed := 0.0
		for _, s := range scrape(t, serve.url) {
			if s.name == "braid_records_processed_total" && strings.Contains(s.labels, `instance="i1"`) {
				processed += s.value
			}
		}
		_, err := os.Stat(instanceDir)
		return processed > 0 && err == nil
	})
	// The process's Listener reads from the topic's end from when it
	// started: send until it exits.
	guard := time.After(time.Minute)
	var exit error
	for sent := false; !sent; {
		if st := serve.call(t, "POST", "/api/deployments/"+demo.appID+"/instances/i1/crash-wipe", "", nil); st != 204 {
			t.Fatalf("crash-wipe: %d", st)
		}
		select {
		case exit = <-run.done:
			sent = true
		case <-time.After(500 * time.Millisecond): // a resend interval, not a margin
		case <-guard:
			t.Fatalf("the run process still runs a minute into crash-wipe commands:\n%s", run.out.String())
		}
	}
	var ee *exec.ExitError
	if !errors.As(exit, &ee) || ee.ExitCode() != 4 {
		t.Errorf("the run process ended with %v, want exit status 4:\n%s", exit, run.out.String())
	}
	if !strings.Contains(run.out.String(), "instance i1 crashed and its state dir") {
		t.Errorf("the run process does not say why it exits:\n%s", run.out.String())
	}
	if _, err := os.Stat(instanceDir); !os.IsNotExist(err) {
		t.Errorf("i1's state dir %s after the crash-wipe: %v, want it gone", instanceDir, err)
	}
}
