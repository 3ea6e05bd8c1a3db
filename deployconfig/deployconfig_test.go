package deployconfig_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/deployconfig"
	"github.com/braidstream/braid/runtime/broker"
)

func newClient(t *testing.T) *deployconfig.Client {
	t.Helper()
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := deployconfig.NewClient(deployconfig.Config{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func deployment(id string, revision int) deployconfig.Deployment {
	return deployconfig.Deployment{ID: id, Revision: revision, Design: []byte(`{"name": "x"}`), ApplicationID: "braid-" + id,
		Guarantee: "at-least-once", CommitIntervalMs: 1000}
}

// TestFollowReadsFromTheStart: a follower started after records were
// written gets them in order, then CaughtUp, then what is written
// after, tombstones included.
func TestFollowReadsFromTheStart(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range []deployconfig.Deployment{deployment("a", 1), deployment("b", 1), deployment("a", 2)} {
		if err := c.Put(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutStatus(ctx, deployconfig.Status{Deployment: "a", Process: "p1", Revision: 2, State: deployconfig.Running}); err != nil {
		t.Fatal(err)
	}
	updates := make(chan deployconfig.Update, 100)
	followCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Follow(followCtx, func(u deployconfig.Update) { updates <- u }) }()
	defer func() { stop(); <-done }()
	next := func() deployconfig.Update {
		t.Helper()
		select {
		case u := <-updates:
			return u
		case <-ctx.Done():
			t.Fatal("no update within 30 s")
			return deployconfig.Update{}
		}
	}
	var got []string
	for u := next(); u.Kind != deployconfig.CaughtUp; u = next() {
		switch u.Kind {
		case deployconfig.Deployed:
			got = append(got, u.ID+"@"+string(rune('0'+u.Deployment.Revision)))
		case deployconfig.StatusPut:
			got = append(got, "status "+u.Status.Process+" "+string(u.Status.State))
		}
	}
	if want := "a@1 b@1 a@2 status p1 running"; strings.Join(got, " ") != want {
		t.Errorf("before CaughtUp: %q, want %q", strings.Join(got, " "), want)
	}
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if u := next(); u.Kind != deployconfig.Undeployed || u.ID != "a" {
		t.Errorf("after Delete: %+v, want a's tombstone", u)
	}
}

// TestPutRefusesABadRecord names every problem at once.
func TestPutRefusesABadRecord(t *testing.T) {
	c := newClient(t)
	err := c.Put(context.Background(), deployconfig.Deployment{ID: "a/b", Design: []byte("{"), Guarantee: "maybe"})
	var re *deployconfig.RecordError
	if !errors.As(err, &re) || len(re.Problems) != 6 {
		t.Fatalf("Put of a bad record: %v, want a RecordError of 6 problems", err)
	}
}

// TestTurns: a process moves when every live process before it runs
// the new revision; a silent one holds no turn.
func TestTurns(t *testing.T) {
	now := time.Now()
	p := deployconfig.NewProcesses("d")
	put := func(proc string, rev int, state deployconfig.StatusState, at time.Time) {
		p.Apply(deployconfig.Update{Kind: deployconfig.StatusPut, ID: "d", Timestamp: at,
			Status: deployconfig.Status{Deployment: "d", Process: proc, Revision: rev, State: state}}, now)
	}
	put("p1", 1, deployconfig.Running, now)
	put("p2", 1, deployconfig.Running, now)
	put("p3", 1, deployconfig.Running, now.Add(-2*deployconfig.LiveFor)) // killed long ago
	if ok, _ := p.Turn("p1", 2, now); !ok {
		t.Error("p1, the first, may not move")
	}
	if ok, wait := p.Turn("p2", 2, now); ok || !strings.Contains(wait, "p1") {
		t.Errorf("p2 may move (%v) or waits for %q, want it to wait for p1", ok, wait)
	}
	put("p1", 2, deployconfig.Restarting, now)
	if ok, _ := p.Turn("p2", 2, now); ok {
		t.Error("p2 may move while p1 restarts")
	}
	put("p1", 2, deployconfig.Running, now)
	if ok, wait := p.Turn("p2", 2, now); !ok {
		t.Errorf("p2 waits for %s after p1 runs revision 2", wait)
	}
	put("p2", 2, deployconfig.Running, now)
	if ok, wait := p.Turn("p4", 2, now); !ok {
		t.Errorf("p4 waits for %s: p3 is silent", wait)
	}
	p.Apply(deployconfig.Update{Kind: deployconfig.StatusDeleted, ID: "d", Status: deployconfig.Status{Deployment: "d", Process: "p1"}}, now)
	if live := p.Live(now); len(live) != 1 || live[0].Process != "p2" {
		t.Errorf("live after p1 left: %+v, want p2 alone", live)
	}
}
