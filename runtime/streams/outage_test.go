package streams_test

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
)

// restartableBroker is an embedded broker on a data dir and a fixed port,
// which a test stops and starts again where it was, as a broker process
// killed and restarted.
type restartableBroker struct {
	t      *testing.T
	dir    string
	listen string
	b      *broker.Broker
}

func startRestartableBroker(t *testing.T) *restartableBroker {
	rb := &restartableBroker{t: t, dir: t.TempDir(), listen: "127.0.0.1:0"}
	rb.start()
	rb.listen = rb.b.Addr()
	t.Cleanup(func() {
		if rb.b != nil {
			rb.b.Close()
		}
	})
	return rb
}

func (rb *restartableBroker) start() {
	rb.t.Helper()
	b, err := broker.Start(broker.Config{Listen: rb.listen, DataDir: rb.dir})
	if err != nil {
		rb.t.Fatalf("starting the broker: %v", err)
	}
	rb.b = b
}

func (rb *restartableBroker) stop() {
	rb.b.Close()
	rb.b = nil
}

// commitClock records when each instance last committed, and which
// reported an error that did not stop it: a lost session.
type commitClock struct {
	mu      sync.Mutex
	last    map[string]time.Time
	lost    map[string]bool
	commits chan struct{} // signalled on every commit, never blocking
}

func newCommitClock() *commitClock {
	return &commitClock{last: map[string]time.Time{}, lost: map[string]bool{}, commits: make(chan struct{}, 1)}
}

func (c *commitClock) OnError(ev streams.ErrorEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost[ev.InstanceID] = c.lost[ev.InstanceID] || !ev.Fatal
}

// allLost reports whether every instance lost its session.
func (c *commitClock) allLost(instances ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range instances {
		if !c.lost[in] {
			return false
		}
	}
	return true
}

func (c *commitClock) OnCommit(ev streams.CommitEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[ev.InstanceID] = time.Now()
	select {
	case c.commits <- struct{}{}:
	default:
	}
}

// committedSince reports whether every instance committed after t.
func (c *commitClock) committedSince(t time.Time, instances ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range instances {
		if !c.last[in].After(t) {
			return false
		}
	}
	return true
}

// TestBrokerRestartRecovers runs two instances of the exactly-once
// topology (a count and a windowed count) against a broker that stops
// while they process and starts again on the same data dir and port. Both
// notice, give their tasks up, join again by themselves and resume
// committing, without a restart; the outputs, read committed, are exact
// under exactly-once (no count repeated, lowered or missing) and complete
// under at-least-once.
func TestBrokerRestartRecovers(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			rb := startRestartableBroker(t)
			for _, topic := range []string{"events", "event-totals", "event-windows"} {
				createTopic(t, rb.cluster(), topic, eosPartitions)
			}
			tr := newEOSTruth()
			tr.produce(t, rb.cluster(), 1000)
			clock := newCommitClock()
			instances := []string{"eos-1", "eos-2"}
			var apps []*streams.App
			for _, id := range instances {
				cfg := outageConfig(rb.cluster(), g, id, t.TempDir(), clock)
				app, err := streams.New(eosTopology(t), cfg)
				if err != nil {
					t.Fatal(err)
				}
				apps = append(apps, app)
			}
			var stops []func() error
			for _, app := range apps {
				stops = append(stops, runApp(t, app))
			}
			processedAll(t, rb.cluster())
			tr.produce(t, rb.cluster(), 1000)

			rb.stop()
			t.Logf("%s broker stopped", time.Now().Format("15:04:05.000"))
			// The limits only catch a hang; the bounds themselves are
			// the config's.
			// Gone until both gave their session up, past the bound
			// of their commit, and retry joining.
			waitFor(t, 60*time.Second, "both instances to give their session up", func() bool {
				return clock.allLost(instances...)
			})
			rb.start()
			back := time.Now()
			t.Logf("%s broker started again", back.Format("15:04:05.000"))
			// Input keeps coming, so that each instance has work to
			// commit whichever tasks it gets.
			deadline := time.Now().Add(60 * time.Second)
			for !clock.committedSince(back, instances...) {
				if time.Now().After(deadline) {
					t.Fatal("both instances did not commit again within 60 s of the broker's return")
				}
				tr.produce(t, rb.cluster(), 2*eosKeys)
				select {
				case <-clock.commits:
				case <-time.After(time.Second):
				}
			}
			t.Logf("both instances committed again %v after the broker's return", time.Since(back).Round(time.Millisecond))
			for _, app := range apps {
				if s := app.State(); s == streams.Failed || s == streams.NotRunning {
					t.Fatalf("an instance is %v after the broker's return", s)
				}
			}

			tr.closeWindows(t, rb.cluster())
			processedAll(t, rb.cluster())
			for _, stop := range stops {
				if err := stop(); err != nil {
					t.Errorf("Run: %v", err)
				}
			}
			if g == streams.ExactlyOnce {
				checkExactlyOnce(t, rb.cluster(), tr)
			} else {
				checkAtLeastOnce(t, rb.cluster(), tr)
			}
		})
	}
}

func outageConfig(b *brokertest.Cluster, g streams.Guarantee, instance, stateDir string, hooks ...streams.Hook) streams.Config {
	cfg := testConfig(b, "eos")
	cfg.ProcessingGuarantee = g
	cfg.CommitInterval = 200 * time.Millisecond
	cfg.SessionTimeout = 3 * time.Second
	cfg.TransactionTimeout = 4 * time.Second
	cfg.InstanceID = instance
	cfg.StateDir = stateDir
	cfg.Hooks = hooks
	return cfg
}

// checkAtLeastOnce reads both outputs and checks that nothing is missing:
// every key's last total and every window's result are at least their
// truth (records processed twice count twice).
func checkAtLeastOnce(t *testing.T, b *brokertest.Cluster, tr *eosTruth) {
	t.Helper()
	last := map[string]int64{}
	for _, r := range readCommitted(t, b, "event-totals") {
		last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	}
	got := map[string]int64{}
	for _, r := range readCommitted(t, b, "event-windows") {
		id := windowResultID(t, r)
		got[id] = max(got[id], int64(binary.BigEndian.Uint64(r.Value)))
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for k, n := range tr.totals {
		if last[k] < n {
			t.Errorf("%s: final count %d, want at least %d", k, last[k], n)
		}
	}
	for id, n := range tr.windows {
		if got[id] < n {
			t.Errorf("window %s: %d, want at least %d", id, got[id], n)
		}
	}
}

// cluster is the running broker, for the helpers that take a Cluster.
func (rb *restartableBroker) cluster() *brokertest.Cluster { return brokertest.FromBroker(rb.b) }
