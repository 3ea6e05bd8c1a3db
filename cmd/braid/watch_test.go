package main

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/monitor"
)

// TestWatch tails the demo deployment of a running serve: snapshots print
// one line per instance, and the stream ends cleanly with the context.
func TestWatch(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var out syncBuffer
	if err := runWatch(ctx, []string{"orders-demo", "--server", strings.TrimSuffix(s.url, "/"), "--every", "500ms"}, &out); err != nil {
		t.Fatalf("watch: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"watching orders-demo", "-- orders-demo revision 1, 3 instances, 1 standby replicas", "instance-1", "instance-3", "running"} {
		if !strings.Contains(got, want) {
			t.Errorf("watch output lacks %q:\n%s", want, got)
		}
	}
}

// TestWatchNoSuchDeployment: watch gives up on a deployment the server
// does not have after --wait, naming those it has.
func TestWatchNoSuchDeployment(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard, not the bound tested
	defer cancel()
	var out syncBuffer
	start := time.Now()
	err := runWatch(ctx, []string{"no-such-deployment", "--server", strings.TrimSuffix(s.url, "/"), "--wait", "1s"}, &out)
	want := "watch: no-such-deployment is not deployed on " + strings.TrimSuffix(s.url, "/") + " (waited 1s); deployments there: orders-demo"
	if err == nil || err.Error() != want {
		t.Fatalf("watch: %v, want %q\n%s", err, want, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("watch returned only when the test's guard ended, after %v", time.Since(start))
	}
}

func TestWatchBadInvocations(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "name one deployment"},
		{[]string{"a", "b"}, "name one deployment"},
		{[]string{"a", "--server", "ftp://x"}, `--server "ftp://x" is not an http(s) address`},
		{[]string{"a", "--server", "http://127.0.0.1:1"}, "connecting to ws://127.0.0.1:1/ws/live"},
	} {
		var out syncBuffer
		err := runWatch(context.Background(), tt.args, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("watch %q = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
	var out syncBuffer
	if err := runWatch(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: braid watch") {
		t.Errorf("watch --help = %v:\n%s", err, out.String())
	}
}

// TestWatchShowsUnreachableBroker checks the line watch prints under an
// instance that cannot reach a broker.
func TestWatchShowsUnreachableBroker(t *testing.T) {
	snap := &monitor.Snapshot{Time: 1_700_000_012_000, Deployments: []monitor.Deployment{{
		DeploymentInfo: monitor.DeploymentInfo{ID: "dep", Revision: 2, Standbys: 1},
		Instances: []monitor.Instance{{ID: "instance-1", State: "running", Tasks: []monitor.Task{},
			UnreachableBrokers: []monitor.UnreachableBroker{{Broker: "127.0.0.1:9092", Since: 1_700_000_000_000, Error: "connection refused"}}}},
	}}}
	var out strings.Builder
	printSnapshot(&out, snap, "dep")
	want := "   instance-1   running     \n" +
		"                broker 127.0.0.1:9092 unreachable, no answer for 12s: connection refused\n"
	if got := out.String(); !strings.HasSuffix(got, want) {
		t.Errorf("watch printed\n%q\nwant it to end with\n%q", got, want)
	}
}
