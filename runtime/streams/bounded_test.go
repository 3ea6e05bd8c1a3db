package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// holdKeys holds requests of the given kinds.
func holdKeys(keys ...kmsg.Key) func(kmsg.Request) bool {
	return func(r kmsg.Request) bool {
		for _, k := range keys {
			if r.Key() == k.Int16() {
				return true
			}
		}
		return false
	}
}

// holdOutputs holds the produce requests to the topology's outputs and
// changelogs, not the test's own to its input.
func holdOutputs(r kmsg.Request) bool {
	p, ok := r.(*kmsg.ProduceRequest)
	if !ok {
		return false
	}
	for _, t := range p.Topics {
		if t.Topic != "events" {
			return true
		}
	}
	return false
}

// TestBrokerSilenceIsBounded makes the broker hold, without an answer,
// each kind of request a commit waits on, while an instance of the
// exactly-once topology has work to commit: the commit gives up at its
// bound, the instance gives its session up and keeps trying, and once
// the broker answers again it resumes by itself, with outputs exact under
// exactly-once and complete under at-least-once.
func TestBrokerSilenceIsBounded(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	for _, tc := range []struct {
		name string
		g    streams.Guarantee
		hold func(kmsg.Request) bool
	}{
		{"at-least-once/OffsetCommit", streams.AtLeastOnce, holdKeys(kmsg.OffsetCommit)},
		{"at-least-once/Produce", streams.AtLeastOnce, holdOutputs},
		{"at-least-once/Heartbeat", streams.AtLeastOnce, holdKeys(kmsg.Heartbeat)},
		{"exactly-once/EndTxn", streams.ExactlyOnce, holdKeys(kmsg.EndTxn)},
		{"exactly-once/TxnOffsetCommit", streams.ExactlyOnce, holdKeys(kmsg.TxnOffsetCommit)},
		{"exactly-once/Produce", streams.ExactlyOnce, holdOutputs},
		{"exactly-once/Heartbeat", streams.ExactlyOnce, holdKeys(kmsg.Heartbeat)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startEOSBroker(t)
			tr := newEOSTruth()
			tr.produce(t, b, 100)
			clock := newCommitClock()
			cfg := outageConfig(b, tc.g, "eos-1", t.TempDir(), clock)
			cfg.MaxPollRecords = 20 // many polls and commits per second of work
			app, err := streams.New(pacedEOSTopology(t, 2*time.Millisecond), cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, app)
			processedAll(t, b)
			// Two seconds of work or more: the instance still has some
			// to commit when the broker freezes at the held request.
			tr.produce(t, b, 1000)
			waitFor(t, 60*time.Second, "the new input being processed", func() bool { return processed(app) > 200 })
			resume := b.Embedded(t, "silences requests at the broker").Silence(tc.hold)
			t.Cleanup(resume)
			// The limit only catches a hang: the bound is the config's.
			waitFor(t, 60*time.Second, "the instance to give its session up", func() bool {
				return clock.allLost("eos-1")
			})
			resume()
			tr.produce(t, b, 500)
			tr.closeWindows(t, b)
			processedAll(t, b)
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkOutputs(t, b, tc.g, tr)
		})
	}
}

func checkOutputs(t *testing.T, b *brokertest.Cluster, g streams.Guarantee, tr *eosTruth) {
	t.Helper()
	if g == streams.ExactlyOnce {
		checkExactlyOnce(t, b, tr)
	} else {
		checkAtLeastOnce(t, b, tr)
	}
}

// TestCloseWithSilentBrokerReturns closes an instance that has work to
// commit while the broker holds its commit and its leave: Close returns
// once their bounds passed, and Run returns nil, the commit it could not
// make logged (nothing is lost: the next owner resumes from the last
// commit).
func TestCloseWithSilentBrokerReturns(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	for _, tc := range []struct {
		g    streams.Guarantee
		hold func(kmsg.Request) bool
	}{
		{streams.AtLeastOnce, holdKeys(kmsg.OffsetCommit, kmsg.LeaveGroup)},
		{streams.ExactlyOnce, holdKeys(kmsg.EndTxn, kmsg.LeaveGroup)},
	} {
		t.Run(tc.g.String(), func(t *testing.T) {
			b := startEOSBroker(t)
			tr := newEOSTruth()
			tr.produce(t, b, 500)
			app, err := streams.New(eosTopology(t), outageConfig(b, tc.g, "eos-1", t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { errc <- app.Run(context.Background()) }()
			processedAll(t, b)
			tr.produce(t, b, 500)
			resume := b.Embedded(t, "silences requests at the broker").Silence(tc.hold)
			t.Cleanup(resume)
			waitFor(t, 60*time.Second, "the new input processed", func() bool { return processed(app) >= 1000 })
			go app.Close()
			// The limit only catches a hang: the bounds are the config's.
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run: %v, want nil: a commit on shutdown the broker does not take is no failure", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Run did not return within 60 s of Close while the broker held its commit")
			}
		})
	}
}

// TestSameInstanceIDFails runs two exactly-once instances with the same
// InstanceID, as two processes started with the same id would: each
// fences the other's producer whenever it starts a session, and one of
// them fails with a *FencedError instead of fencing back for ever.
func TestSameInstanceIDFails(t *testing.T) {
	b := startEOSBroker(t)
	tr := newEOSTruth()
	errc := make(chan error, 2)
	for range 2 {
		app, err := streams.New(eosTopology(t), outageConfig(b, streams.ExactlyOnce, "eos-1", t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		go func() { errc <- app.Run(context.Background()) }()
		t.Cleanup(func() { app.Close() })
	}
	// Input keeps coming, so that both commit and meet the fence.
	deadline := time.Now().Add(60 * time.Second)
	for {
		tr.produce(t, b, 2*eosKeys)
		select {
		case err := <-errc:
			var fenced *streams.FencedError
			if !errors.As(err, &fenced) {
				t.Fatalf("Run: %v, want a *FencedError", err)
			}
			t.Logf("Run: %v", err)
			if fenced.InstanceID != "eos-1" || fenced.ApplicationID == "" {
				t.Errorf("fenced instance %q of application %q, want eos-1 and the application", fenced.InstanceID, fenced.ApplicationID)
			}
			for _, want := range []string{`instance "eos-1"`, fmt.Sprintf("application %q", fenced.ApplicationID), "give each process its own InstanceID"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("neither instance failed within 60 s")
		}
	}
}
