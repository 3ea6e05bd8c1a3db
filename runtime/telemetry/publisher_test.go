package telemetry

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// fixedSource is a Source of one running instance.
type fixedSource struct{}

func (fixedSource) Instances() []streams.InstanceInfo {
	return []streams.InstanceInfo{{ID: "i1", State: streams.InstanceRunning, Stats: streams.Stats{InstanceID: "i1", State: streams.Running}}}
}

func (fixedSource) OpenWindows(string, string) ([]streams.OpenWindow, error) { return nil, nil }

// TestPublisherWithoutABroker: with no broker to take its reports, a
// Publisher's hooks still return at once, its queue stays bounded, and
// Run ends when asked, its last report given up on, not waited for.
func TestPublisherWithoutABroker(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Brokers: []string{"127.0.0.1:1"}, Deployment: Deployment{ApplicationID: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Attach(fixedSource{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	h := p.Hook().(streams.WindowClosedHook)
	for range 10 * maxQueuedEvents {
		h.OnWindowClosed(streams.WindowClosedEvent{InstanceID: "i1"})
	}
	p.queue.mu.Lock()
	queued := len(p.queue.events)
	p.queue.mu.Unlock()
	if queued > maxQueuedEvents {
		t.Errorf("%d events queued, over the bound of %d", queued, maxQueuedEvents)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not end within 30 s of its context with the broker away")
	}
}

func TestPublisherConfigValidate(t *testing.T) {
	err := PublisherConfig{Interval: time.Millisecond, Deployment: Deployment{Design: []byte("{nodes")}}.Validate()
	for _, want := range []string{"Brokers", "ApplicationID", "Interval", "Design"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %s", err, want)
		}
	}
}
