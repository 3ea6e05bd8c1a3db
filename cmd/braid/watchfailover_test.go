package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/monitor"
)

func TestPrintTimeline(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 0, 1, 210e6, time.Local).UnixMilli()
	tl := monitor.FailoverTimeline{ID: "3", Cause: "crash", Instance: "instance-1", At: at, End: at + 400, Done: true,
		SessionTimeoutMs: 3000, Unmoved: []string{"1_0", "1_1"},
		Tasks: []monitor.TaskLane{{
			Task: "0_0", From: "instance-1", To: "instance-2", Replica: "standby", StandbyLag: 5, Restored: 5, RestoreRate: 250,
			DetectionMs: 250, RecoveryMs: 150, DowntimeMs: 410, Phases: []monitor.Phase{
				{Kind: "processing", Start: at - 1000, End: at}, {Kind: "detecting", Start: at, End: at + 100},
				{Kind: "rebalancing", Start: at + 100, End: at + 250}, {Kind: "promoting", Start: at + 250, End: at + 400},
				{Kind: "processing", Start: at + 400, End: at + 400}},
		}, {
			Task: "0_1", From: "instance-1", To: "instance-3", StandbyLag: -1, DetectionMs: -1, RecoveryMs: -1, DowntimeMs: -1,
			Phases: []monitor.Phase{{Kind: "processing", Start: at - 1000, End: at}, {Kind: "detecting", Start: at, End: at + 100},
				{Kind: "restoring", Start: at + 100, End: at + 300}},
		}},
	}
	var out strings.Builder
	printTimeline(&out, tl)
	want := "08:00:01.210 failover 3: crash of instance-1, 2 tasks moved in 400 ms (session timeout 3000 ms); kept running: 1_0 1_1\n" +
		"   0_0   instance-1 -> instance-2 (its standby, 5 records behind): detecting 100 ms > rebalancing 150 ms > promoting 150 ms > processing" +
		" (detection 250 ms, recovery 150 ms, downtime 410 ms, restored 5 records at 250/s)\n" +
		"   0_1   instance-1 -> instance-3: detecting 100 ms > restoring 200 ms (not measured: overtaken by another failover)\n"
	if got := out.String(); got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
}

// notifyBuffer is a syncBuffer that signals each write.
type notifyBuffer struct {
	syncBuffer
	wrote chan struct{}
}

func (b *notifyBuffer) Write(p []byte) (int, error) {
	n, err := b.syncBuffer.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// TestWatchPrintsFailover crashes an instance of the demo under `braid
// watch`: it prints the failover's timeline, a line per moved task with
// the numbers GET /api/deployments/:id/failovers gives for it.
func TestWatchPrintsFailover(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	server := strings.TrimSuffix(s.url, "/")
	ctx, cancel := context.WithCancel(context.Background())
	out := &notifyBuffer{wrote: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := runWatch(ctx, []string{"orders-demo", "--server", server, "--every", "0"}, out); err != nil {
			t.Errorf("watch: %v", err)
		}
	}()
	defer wg.Wait()
	defer cancel()
	waitOutput(t, out, "watching orders-demo")
	// Crash once the group has settled: a crash told before the dying
	// instance's last assignment adds that task to the failover after
	// watch may have printed it.
	waitOutput(t, out, "standby-started")
	waitSettled(t, s, "orders-demo")
	res, err := http.Post(server+"/api/deployments/orders-demo/instances/instance-1/crash", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("crash: %s", res.Status)
	}
	waitOutput(t, out, ": crash of instance-1, ")
	var tls []monitor.FailoverTimeline
	if st := s.get(t, "/api/deployments/orders-demo/failovers", &tls); st != 200 || len(tls) != 1 {
		t.Fatalf("GET failovers: %d %+v", st, tls)
	}
	got := out.String()
	head := fmt.Sprintf("failover %s: crash of instance-1, %d tasks moved in %d ms", tls[0].ID, len(tls[0].Tasks), tls[0].End-tls[0].At)
	if !strings.Contains(got, head) || len(tls[0].Tasks) == 0 {
		t.Errorf("watch printed no line %q:\n%s", head, got)
	}
	for _, l := range tls[0].Tasks {
		line := fmt.Sprintf("   %-5s instance-1 -> %s", l.Task, l.To)
		nums := fmt.Sprintf("(detection %d ms, recovery %d ms, downtime %d ms", l.DetectionMs, l.RecoveryMs, l.DowntimeMs)
		i := strings.Index(got, line)
		if i < 0 || !strings.Contains(got[i:i+strings.Index(got[i:], "\n")], nums) {
			t.Errorf("watch printed no line %q... %q:\n%s", line, nums, got)
		}
	}
}

// waitOutput waits for out to contain want, for a minute at most.
func waitOutput(t *testing.T, out *notifyBuffer, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for !strings.Contains(out.String(), want) {
		select {
		case <-out.wrote:
		case <-timeout:
			t.Fatalf("no %q in a minute:\n%s", want, out.String())
		}
	}
}

// waitSettled waits, a minute at most, for a recorded snapshot of the
// deployment (one a second) to show its group settled (settled).
func waitSettled(t *testing.T, s *serving, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r monitor.Replay
		path := fmt.Sprintf("/api/deployments/%s/snapshot?at=%d", id, time.Now().UnixMilli())
		if s.get(t, path, &r) == http.StatusOK && settled(r.Deployment) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not settle in a minute; last snapshot: %+v", id, r.Deployment.Instances)
		}
		time.Sleep(200 * time.Millisecond) // the history records a snapshot a second
	}
}

// settled reports whether every instance of d runs, every task is
// active on one instance, a stateful task's standby stands by on
// another, and every sub-topology has as many tasks as the others
// (partitions 0 to n-1: the demo's repartition topic has its source's
// partitions). A task the cooperative protocol is moving is active
// nowhere meanwhile.
func settled(d monitor.Deployment) bool {
	active, standby := map[string]int{}, map[string]bool{}
	for _, in := range d.Instances {
		if in.State != "running" {
			return false
		}
		for _, task := range in.Tasks {
			switch task.Role {
			case "active":
				active[task.ID]++
			case "standby":
				standby[task.ID] = true
			}
		}
	}
	perSub := map[string]int{}
	for id, n := range active {
		if n != 1 {
			return false
		}
		sub, _, _ := strings.Cut(id, "_")
		perSub[sub]++
	}
	for id := range standby {
		if active[id] == 0 {
			return false
		}
	}
	width := -1
	for sub, n := range perSub {
		for p := range n {
			if active[fmt.Sprintf("%s_%d", sub, p)] == 0 {
				return false
			}
		}
		if width >= 0 && n != width {
			return false
		}
		width = n
	}
	return len(active) > 0
}
