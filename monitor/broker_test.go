package monitor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestBrokerOutageShows checks that an instance's unreachable brokers
// reach its snapshot, and that the runtime's two reachability events
// become one broker-unreachable and one broker-reachable event, each a
// line a person can read.
func TestBrokerOutageShows(t *testing.T) {
	m := New(Options{PublishInterval: 5 * time.Millisecond})
	src := &fakeSource{}
	h := hooksOf(t, m.AddDeployment(DeploymentInfo{ID: "dep"}, src))
	lastAnswer := time.UnixMilli(1_700_000_000_000)
	src.set([]streams.InstanceInfo{{ID: "instance-1", State: streams.InstanceRunning, Since: lastAnswer,
		Stats: streams.Stats{InstanceID: "instance-1", State: streams.Running,
			UnreachableBrokers: []streams.UnreachableBroker{{Broker: "127.0.0.1:9092", Since: lastAnswer, Err: "connection refused"}}}}})
	runMonitor(t, m)
	waitFor(t, 30*time.Second, "the outage in a snapshot", func() bool {
		in := findInstance(findDeployment(m.Snapshot(), "dep"), "instance-1")
		return in != nil && len(in.UnreachableBrokers) == 1
	})
	in := findInstance(findDeployment(m.Snapshot(), "dep"), "instance-1")
	if got, want := in.UnreachableBrokers[0], (UnreachableBroker{Broker: "127.0.0.1:9092", Since: lastAnswer.UnixMilli(), Error: "connection refused"}); got != want {
		t.Errorf("unreachable broker %+v, want %+v", got, want)
	}

	down := streams.BrokerReachabilityEvent{InstanceID: "instance-1", Broker: "127.0.0.1:9092", Since: lastAnswer,
		At: lastAnswer.Add(3 * time.Second), Err: errors.New("dial tcp 127.0.0.1:9092: connection refused")}
	h.OnBrokerReachability(down)
	up := down
	up.Reachable, up.Err, up.At = true, nil, lastAnswer.Add(12*time.Second)
	h.OnBrokerReachability(up)

	var got []Event
	for _, ev := range m.Events(0) {
		if strings.HasPrefix(ev.Kind, "broker-") {
			got = append(got, ev)
		}
	}
	if len(got) != 2 || got[0].Kind != kindBrokerUnreachable || got[1].Kind != kindBrokerReachable {
		t.Fatalf("broker events %+v, want one unreachable then one reachable", got)
	}
	for _, tc := range []struct {
		ev   Event
		want []string
	}{
		{got[0], []string{"instance-1", "127.0.0.1:9092", "connection refused"}},
		{got[1], []string{"instance-1", "127.0.0.1:9092", "again", "12s"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.ev.Message, w) {
				t.Errorf("%s message %q does not say %q", tc.ev.Kind, tc.ev.Message, w)
			}
		}
		if tc.ev.Instance != "instance-1" || brokerOf(tc.ev.Detail) != "127.0.0.1:9092" {
			t.Errorf("%s event %+v: want instance-1 and the broker in its detail", tc.ev.Kind, tc.ev)
		}
	}
	if d, _ := got[1].Detail.(BrokerReachableDetail); d.SilentMs != 12000 {
		t.Errorf("silentMs %v, want 12000", d.SilentMs)
	}
}

// brokerOf is the broker a broker-unreachable or broker-reachable event
// tells of.
func brokerOf(d EventDetail) string {
	switch d := d.(type) {
	case BrokerUnreachableDetail:
		return d.Broker
	case BrokerReachableDetail:
		return d.Broker
	}
	return ""
}
