package streams_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cutDialer is the network of one App's clients (kgo.Dialer), which a
// test cuts: refusing the App's produce requests alone (the connection
// that carried one is reset, as a broker gone would leave it), or every
// connection.
type cutDialer struct {
	mu          sync.Mutex
	produceCut  bool
	cut         bool
	conns       map[*cutConn]struct{}
	refusedOnce sync.Once
	refused     chan struct{} // closed at the first produce request refused
}

func newCutDialer() *cutDialer {
	return &cutDialer{conns: make(map[*cutConn]struct{}), refused: make(chan struct{})}
}

var errCut = errors.New("test network cut")

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	cut := d.cut
	d.mu.Unlock()
	if cut {
		return nil, errCut
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	cc := &cutConn{Conn: c, d: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		c.Close()
		return nil, errCut
	}
	d.conns[cc] = struct{}{}
	return cc, nil
}

// setProduceCut refuses, or lets through again, every produce request.
func (d *cutDialer) setProduceCut(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.produceCut = on
}

// setCut resets every connection and refuses new ones, or lets them be
// made again.
func (d *cutDialer) setCut(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = on
	if on {
		for c := range d.conns {
			c.Conn.Close()
		}
		clear(d.conns)
	}
}

type cutConn struct {
	net.Conn
	d *cutDialer
}

// Write refuses what the dialer cuts. franz-go writes each request with
// one Write: its size (4 bytes), then its API key.
func (c *cutConn) Write(b []byte) (int, error) {
	c.d.mu.Lock()
	refuse := c.d.cut || (c.d.produceCut && len(b) >= 6 && int16(binary.BigEndian.Uint16(b[4:6])) == kmsg.Produce.Int16())
	produce := !c.d.cut && refuse
	if refuse {
		delete(c.d.conns, c)
	}
	c.d.mu.Unlock()
	if refuse {
		c.Conn.Close()
		if produce {
			c.d.refusedOnce.Do(func() { close(c.d.refused) })
		}
		return 0, errCut
	}
	return c.Conn.Write(b)
}

// TestLostSessionLeavesNoLateWrites: an at-least-once instance whose
// commit waits on produce requests the broker does not take, and which
// then loses its group session, must not write those records once the
// broker takes them again: another instance owns the task by then, and
// has written newer counts to the changelog and the output. Records of
// the lost session arriving after them put old counts last (make chaos's
// kill-restart-5s: counts going from 49 back to 16, and restores that
// took the old counts for the latest, 10 to 13 counts short).
func TestLostSessionLeavesNoLateWrites(t *testing.T) {
	skipShort(t, "waits out a group session")
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	const users = 10
	topo := countTopology(t, true)
	rec := map[string]*recorder{"zombie": {}, "owner": {}}
	config := func(instance string, opts ...kgo.Opt) streams.Config {
		cfg := testConfig(b, "lost-session")
		cfg.InstanceID = instance
		cfg.StateDir = t.TempDir()
		cfg.SessionTimeout = time.Second
		// The commit waits on its flush for as long as the test needs: it
		// is the lost session, not this bound, that must end it.
		cfg.TransactionTimeout = 2 * time.Minute
		cfg.Hooks = []streams.Hook{rec[instance]}
		cfg.ClientOptions = opts
		return cfg
	}
	committed := func(instance string, offset int64) func() bool {
		return func() bool {
			r := rec[instance]
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, c := range r.commits {
				if c.Offsets[streams.TopicPartition{Topic: "clicks", Partition: 0}] >= offset {
					return true
				}
			}
			return false
		}
	}

	link := newCutDialer()
	zombie, err := streams.New(topo, config("zombie", kgo.Dialer(link.dial)))
	if err != nil {
		t.Fatal(err)
	}
	stopZombie := runApp(t, zombie)
	produceClicks(t, b, 0, 100, users)
	waitFor(t, 30*time.Second, "the first instance to commit 100 clicks", committed("zombie", 100))

	// The next commit's records wait in the producer, its flush with
	// them.
	link.setProduceCut(true)
	produceClicks(t, b, 100, 100, users)
	select {
	case <-link.refused:
	case <-time.After(30 * time.Second):
		t.Fatal("the first instance produced nothing for 100 more clicks")
	}
	// Then the instance is cut off: it gives its session up, and the
	// group drops it.
	link.setCut(true)
	waitFor(t, 30*time.Second, "the first instance to give its session up", func() bool {
		return zombie.State() == streams.Rebalancing
	})
	adm := admin(t, b)
	waitFor(t, 30*time.Second, "the group to drop the first instance", func() bool {
		groups, err := adm.DescribeGroups(context.Background(), "lost-session")
		if err != nil {
			return false
		}
		g, ok := groups["lost-session"]
		return ok && g.Err == nil && len(g.Members) == 0
	})

	// The task's next owner counts the 200 clicks and 100 more.
	owner, err := streams.New(topo, config("owner"))
	if err != nil {
		t.Fatal(err)
	}
	stopOwner := runApp(t, owner)
	produceClicks(t, b, 200, 100, users)
	waitFor(t, 30*time.Second, "the next owner to commit 300 clicks", committed("owner", 300))

	// The first instance's network comes back. Once it runs again, its
	// old commit is over, whatever it wrote.
	link.setProduceCut(false)
	link.setCut(false)
	waitFor(t, 30*time.Second, "the first instance to run again", func() bool {
		return zombie.State() == streams.Running
	})
	if err := stopZombie(); err != nil {
		t.Errorf("first instance: %v", err)
	}
	produceClicks(t, b, 300, 100, users)
	waitFor(t, 30*time.Second, "the next owner to commit 400 clicks", committed("owner", 400))
	if err := stopOwner(); err != nil {
		t.Errorf("next owner: %v", err)
	}

	for _, topic := range []string{"lost-session-clicks-per-user-changelog", "click-counts"} {
		last := map[string]int64{}
		for _, r := range readAllRecords(t, b, topic) {
			k, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
			if n < last[k] {
				t.Errorf("%s@%d: %s's count went from %d back to %d", topic, r.Offset, k, last[k], n)
			}
			last[k] = n
		}
		for u := range users {
			k := fmt.Sprintf("user-%02d", u)
			if last[k] < 40 {
				t.Errorf("%s: %s's last count is %d, want at least 40", topic, k, last[k])
			}
		}
	}
}

// readAllRecords reads partition 0 of topic to its end.
func readAllRecords(t *testing.T, b *brokertest.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ends, err := admin(t, b).ListEndOffsets(context.Background(), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %d records by %v, end %d", topic, len(out), ctx.Err(), end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
