package control

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// TestListenerCarriesOutOnlyVerifiedCommands: a Listener carries out a
// signed command for an instance of its process, and refuses, saying why,
// one signed with another secret, an old one, a replayed one and an
// unknown verb; it ignores those for another application or another
// process's instance.
func TestListenerCarriesOutOnlyVerifiedCommands(t *testing.T) {
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	secret := []byte("s3cret")
	// One channel for both, so that the test reads them in order.
	type outcome struct {
		handled  *Command
		rejected *RejectedError
	}
	outcomes := make(chan outcome, 16)
	l, err := NewListener(ListenerConfig{Brokers: b.Addrs(), Secret: secret, App: "shop",
		Instances: func() []string { return []string{"i1"} },
		Handle:    func(c Command) error { outcomes <- outcome{handled: &c}; return nil },
		Rejected:  func(e *RejectedError) { outcomes <- outcome{rejected: e} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s, err := NewSender(SenderConfig{Brokers: b.Addrs(), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	// The Listener starts at the topic's end: send until it hears one.
	deadline := time.Now().Add(time.Minute)
	for heard := false; !heard; {
		if err := s.Send(context.Background(), "shop", "i1", Stop); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-outcomes:
			heard = o.handled != nil && o.handled.Verb == Stop && o.handled.Instance == "i1"
		case <-time.After(500 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the listener heard no command within a minute")
			}
		}
	}
	for len(outcomes) > 0 {
		<-outcomes
	}

	raw, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(DefaultTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	produce := func(sc signed) {
		v, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.ProduceSync(context.Background(), &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	cmd := func(app, instance, verb string, issued int64, nonce string) Command {
		return Command{App: app, Instance: instance, Verb: verb, Issued: issued, Nonce: nonce}
	}
	mustSign := func(key []byte, c Command) signed {
		sc, err := sign(key, c)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	replayed := mustSign(secret, cmd("shop", "i1", Crash, now, "n-replay"))
	for _, tc := range []struct {
		name   string
		sent   signed
		reason string // "" for carried out
		silent bool   // neither carried out nor reported
	}{
		{"verified", mustSign(secret, cmd("shop", "i1", Crash, now, "n1")), "", false},
		{"another secret", mustSign([]byte("guess"), cmd("shop", "i1", Crash, now, "n2")), "signature", false},
		{"tampered", func() signed {
			sc := mustSign(secret, cmd("shop", "i1", Stop, now, "n3"))
			sc.Command.Verb = Crash
			return sc
		}(), "signature", false},
		{"old", mustSign(secret, cmd("shop", "i1", Crash, now-time.Minute.Milliseconds(), "n4")), "issued at", false},
		{"unknown verb", mustSign(secret, cmd("shop", "i1", "reboot", now, "n5")), "unknown verb", false},
		{"first of a replay", replayed, "", false},
		{"replay", replayed, "replay", false},
		{"another application", mustSign(secret, cmd("bank", "i1", Crash, now, "n6")), "", true},
		{"another process's instance", mustSign(secret, cmd("shop", "i9", Crash, now, "n7")), "", true},
	} {
		produce(tc.sent)
		// A verified command sent after each case marks where its
		// effects end.
		marker := mustSign(secret, cmd("shop", "i1", Start, time.Now().UnixMilli(), "marker-"+tc.name))
		produce(marker)
		var got []string
		for wait := true; wait; {
			select {
			case o := <-outcomes:
				switch {
				case o.rejected != nil:
					got = append(got, "rejected: "+o.rejected.Reason)
				case o.handled.Nonce == marker.Command.Nonce:
					wait = false
				default:
					got = append(got, "handled "+o.handled.Verb)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s: the marker was not carried out within a minute", tc.name)
			}
		}
		switch {
		case tc.silent && len(got) != 0:
			t.Errorf("%s: %q, want nothing", tc.name, got)
		case !tc.silent && tc.reason == "" && (len(got) != 1 || got[0] != "handled "+tc.sent.Command.Verb):
			t.Errorf("%s: %q, want it carried out", tc.name, got)
		case tc.reason != "" && (len(got) != 1 || !strings.Contains(got[0], tc.reason)):
			t.Errorf("%s: %q, want it rejected for %q", tc.name, got, tc.reason)
		}
	}
}
