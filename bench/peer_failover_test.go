package bench

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
)

// TestPeerFailoverWorkerSupervisedCrash runs the Braid worker of bench
// peer's supervised failover on the embedded broker: two instances of the
// count under a Supervisor with one standby each report their tasks, every
// partition active once and standby once; SIGUSR1 crashes instance-1
// ("crashed"), and instance-2 then reports every task active.
func TestPeerFailoverWorkerSupervisedCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const partitions = 4
	b, err := broker.Start(broker.Config{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	adm, err := newAdmin(b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for _, topic := range []string{"in", "out"} {
		if err := EnsureTopic(ctx, adm, topic, partitions); err != nil {
			t.Fatal(err)
		}
	}
	a := peerWorkerArgs{workload: PeerCount, bootstrap: b.Addr(), appID: "app", stateDir: t.TempDir(), input: "in",
		output: "out", guarantee: "at_least_once", commitIntervalMs: 100, threads: 1, sessionTimeoutMs: 10_000,
		standbys: 1, instances: 2, reportTasks: true}
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	events, runErr := peerWorkerEvents(runCtx, a)
	defer func() {
		stop()
		for range events {
		}
		if err := <-runErr; err != nil {
			t.Errorf("RunPeerWorker: %v", err)
		}
	}()
	owners := func(e peerEvent) map[peerTaskOwner]peerTasks {
		m := map[peerTaskOwner]peerTasks{}
		for id, ts := range e.Tasks {
			m[peerTaskOwner{0, id}] = ts
		}
		return m
	}
	why := "no tasks reported"
	for e := range events {
		if e.Event == "error" {
			t.Fatalf("the worker failed: %s", e.Message)
		}
		if e.Event == "tasks" {
			if why = peerTasksBalanced(owners(e), partitions); why == "" {
				break
			}
		}
	}
	if why != "" {
		t.Fatalf("the worker ended before its tasks were balanced: %s", why)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	crashed := false
	all := []int32{0, 1, 2, 3}
	for e := range events {
		switch e.Event {
		case "error":
			t.Fatalf("the worker failed: %s", e.Message)
		case "crashed":
			if e.Message != peerFailoverVictim {
				t.Errorf("crashed %q, want %s", e.Message, peerFailoverVictim)
			}
			crashed = true
		case "tasks":
			if got := e.Tasks["instance-2"].Active; crashed && len(e.Tasks) == 1 && slices.Equal(got, all) {
				return
			}
		}
	}
	t.Fatal("the worker ended before instance-2 reported every task active after the crash")
}

// TestPeerTasksBalanced: the failover waits for every partition active on
// one instance and standby on another, and both instances active.
func TestPeerTasksBalanced(t *testing.T) {
	owner := func(w int) peerTaskOwner { return peerTaskOwner{w, "app"} }
	for _, tc := range []struct {
		tasks map[peerTaskOwner]peerTasks
		ok    bool
	}{
		{map[peerTaskOwner]peerTasks{owner(0): {Active: []int32{0, 1}, Standby: []int32{2, 3}}, owner(1): {Active: []int32{2, 3}, Standby: []int32{0, 1}}}, true},
		{map[peerTaskOwner]peerTasks{owner(0): {Active: []int32{0, 1, 2, 3}}}, false},
		{map[peerTaskOwner]peerTasks{owner(0): {Active: []int32{0, 1, 2, 3}}, owner(1): {Standby: []int32{0, 1, 2, 3}}}, false},
		{map[peerTaskOwner]peerTasks{owner(0): {Active: []int32{0, 1}, Standby: []int32{2}}, owner(1): {Active: []int32{2, 3}, Standby: []int32{0, 1}}}, false},
		{map[peerTaskOwner]peerTasks{owner(0): {Active: []int32{0, 1}, Standby: []int32{1, 2, 3}}, owner(1): {Active: []int32{2, 3}, Standby: []int32{0}}}, false},
	} {
		if why := peerTasksBalanced(tc.tasks, 4); (why == "") != tc.ok {
			t.Errorf("peerTasksBalanced(%v) = %q, want balanced %v", tc.tasks, why, tc.ok)
		}
	}
}

// TestPeerFailoverResult: the failover's lines have each kind's median
// round and Kafka Streams' unseen downtime over each of Braid's.
func TestPeerFailoverResult(t *testing.T) {
	ms := func(ns ...int) (d []time.Duration) {
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	r := newPeerFailoverResult(10*time.Second, ms(11000, 10500, 12000), ms(13200, 12600, 14000), ms(900, 400, 500))
	if got, want := r.RESULT(), "RESULT peer-failover ratio=1.200 braid_ms=11000 kstreams_ms=13200 session_timeout_ms=10000"; got != want {
		t.Errorf("RESULT() = %q, want %q", got, want)
	}
	if got, want := r.SupervisedRESULT(), "RESULT peer-failover-supervised ratio=26.400 braid_ms=500 kstreams_ms=13200 session_timeout_ms=10000"; got != want {
		t.Errorf("SupervisedRESULT() = %q, want %q", got, want)
	}
}
