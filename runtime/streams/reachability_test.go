package streams_test

import (
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerEvents keeps the BrokerHook's events.
type brokerEvents struct {
	mu     sync.Mutex
	events []streams.BrokerReachabilityEvent
}

func (b *brokerEvents) OnBrokerReachability(ev streams.BrokerReachabilityEvent) {
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
}

func (b *brokerEvents) snapshot() []streams.BrokerReachabilityEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]streams.BrokerReachabilityEvent(nil), b.events...)
}

// TestBrokerUnreachableIsReported stops the broker under a running App
// and starts it again on the same address and data: the App says once
// that the broker is unreachable, with the time of its last answer, lists
// it in Stats while it is, and says once that it answers again.
func TestBrokerUnreachableIsReported(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	dir := t.TempDir()
	b, err := broker.Start(broker.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := brokertest.FromBroker(b)
	addr := b.Addr()
	createTopic(t, c, "clicks", 2)
	createTopic(t, c, "click-counts", 2)
	events := &brokerEvents{}
	rec := &recorder{}
	cfg := testConfig(c, "reach")
	cfg.StateDir = t.TempDir()
	cfg.Hooks = []streams.Hook{events, rec}
	app, err := streams.New(countTopology(t, false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runApp(t, app)
	defer stop()
	produce(t, c, &kgo.Record{Topic: "clicks", Key: []byte("ada"), Value: []byte("x")})
	waitFor(t, 60*time.Second, "a commit", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.commits) > 0
	})
	if evs := events.snapshot(); len(evs) != 0 {
		t.Fatalf("broker events while it answered: %+v", evs)
	}

	// Closed once Close returns: it may answer requests in flight
	// while it closes.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	waitFor(t, 60*time.Second, "the broker reported unreachable", func() bool { return len(events.snapshot()) > 0 })
	down := events.snapshot()[0]
	if down.Reachable || down.Broker != addr || down.Err == nil || down.InstanceID != app.Stats().InstanceID {
		t.Fatalf("first event %+v, want %s unreachable with an error", down, addr)
	}
	if down.Since.After(closed) {
		t.Errorf("unreachable since %v, after the broker closed at %v: Since must be its last answer", down.Since, closed)
	}
	if un := app.Stats().UnreachableBrokers; len(un) != 1 || un[0].Broker != addr || !un[0].Since.Equal(down.Since) {
		t.Errorf("Stats().UnreachableBrokers = %+v, want %s since %v", un, addr, down.Since)
	}

	b, err = broker.Start(broker.Config{Listen: addr, DataDir: dir})
	if err != nil {
		t.Fatalf("restarting the broker on %s: %v", addr, err)
	}
	defer b.Close()
	waitFor(t, 60*time.Second, "the broker reported reachable", func() bool { return len(events.snapshot()) > 1 })
	evs := events.snapshot()
	if up := evs[1]; !up.Reachable || up.Broker != addr || !up.Since.Equal(down.Since) || up.Err != nil {
		t.Errorf("second event %+v, want %s reachable again, silent since %v", up, addr, down.Since)
	}
	if un := app.Stats().UnreachableBrokers; len(un) != 0 {
		t.Errorf("Stats().UnreachableBrokers = %+v after the broker answered", un)
	}
}
