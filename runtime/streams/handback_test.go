package streams_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTaskBackFromItsOwnStandbyCountsOnItsState moves a task away from
// the instance that ran it, which keeps it as a standby on the same open
// stores, and back: the standby applied the new owner's changelog records
// to pebble, so the task that comes back must count on from them, not
// from the rows its record cache held when it left.
//
// A runs both tasks alone; B joins and takes one, A keeps its standby;
// B counts more clicks of that task's users and stops, so that the task
// returns to A from the standby; A counts more. Every count read committed
// must rise one at a time to its truth.
func TestTaskBackFromItsOwnStandbyCountsOnItsState(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.ExactlyOnce, streams.AtLeastOnce} {
		t.Run(g.String(), func(t *testing.T) { testTaskBackFromItsOwnStandby(t, g) })
	}
}

func testTaskBackFromItsOwnStandby(t *testing.T, g streams.Guarantee) {
	b := startBroker(t)
	createTopic(t, b, "clicks", 2)
	createTopic(t, b, "click-counts", 2)
	const app, users = "handback", 8
	truth := map[string]int64{}
	round := func(n int) {
		var recs []*kgo.Record
		for i := range n {
			user := fmt.Sprintf("user-%02d", i%users)
			truth[user]++
			recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(user), Value: []byte("click")})
		}
		produce(t, b, recs...)
		waitFor(t, 60*time.Second, "every click committed", func() bool { return allCommitted(t, b, app, "clicks") })
	}
	start := func(id string) (*streams.App, func() error) {
		cfg := testConfig(b, app)
		cfg.InstanceID = id
		cfg.StateDir = t.TempDir()
		cfg.ProcessingGuarantee = g
		cfg.StandbyReplicas = 1
		a, err := streams.New(countTopology(t, true), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, runApp(t, a)
	}
	running := func(a *streams.App) []streams.TaskID {
		st := a.Stats()
		if st.State != streams.Running {
			return nil
		}
		var ids []streams.TaskID
		for _, ts := range st.Tasks {
			if ts.Restoring {
				return nil
			}
			ids = append(ids, ts.ID)
		}
		return ids
	}

	a, _ := start("a")
	waitFor(t, 60*time.Second, "a running both tasks", func() bool { return len(running(a)) == 2 })
	round(40)

	bApp, stopB := start("b")
	var moved streams.TaskID
	waitFor(t, 60*time.Second, "b running one task, a keeping its standby", func() bool {
		onB, onA := running(bApp), running(a)
		if len(onB) != 1 || len(onA) != 1 {
			return false
		}
		moved = onB[0]
		return slices.ContainsFunc(a.Stats().Standbys, func(sb streams.StandbyStats) bool { return sb.ID == moved })
	})
	t.Logf("task %s moved to b; a keeps its standby", moved)
	round(40)

	if err := stopB(); err != nil {
		t.Fatalf("stopping b: %v", err)
	}
	waitFor(t, 60*time.Second, "a running both tasks again", func() bool { return len(running(a)) == 2 })
	round(40)

	last := map[string]int64{}
	for _, r := range readCommitted(t, b, "click-counts") {
		k, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
		if n <= last[k] && g == streams.ExactlyOnce {
			t.Errorf("%s counted %d after %d: an update repeated or went back", k, n, last[k])
		}
		last[k] = n
	}
	for k, n := range truth {
		if last[k] != n {
			t.Errorf("%s: last count %d, want %d", k, last[k], n)
		}
	}
}
