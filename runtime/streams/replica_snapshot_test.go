package streams_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// replicaLog keeps the replicas' start events and the last applied one.
type replicaLog struct {
	mu      sync.Mutex
	started []streams.StandbyEvent
	applied streams.StandbyEvent
}

func (l *replicaLog) OnStandbyStarted(ev streams.StandbyEvent) {
	l.mu.Lock()
	l.started = append(l.started, ev)
	l.mu.Unlock()
}

func (l *replicaLog) OnStandbyApplied(ev streams.StandbyEvent) {
	l.mu.Lock()
	l.applied = ev
	l.mu.Unlock()
}

func (l *replicaLog) OnStandbySuspended(streams.StandbyEvent) {}

// TestNewReplicaStartsFromSnapshot adds an instance to a group whose only
// store has a snapshot and a changelog tail after it: the replica placed
// on the new instance loads the snapshot and follows the changelog from
// there, and once the first instance crashes, the replica, promoted,
// answers every count right.
func TestNewReplicaStartsFromSnapshot(t *testing.T) {
	const users, tail = 20_000, 2_000
	b := startBroker(t)
	createTopic(t, b, "clicks", 1)
	createTopic(t, b, "click-counts", 1)
	sl, rl := &snapshotLog{}, &replicaLog{}
	cfg := testConfig(b, "snaprep")
	cfg.StateDir = t.TempDir()
	cfg.StandbyReplicas = 1
	cfg.Hooks = []streams.Hook{sl, rl}
	cfg.Snapshots = streams.SnapshotConfig{URL: "file://" + t.TempDir(), Records: 5_000, Interval: time.Hour}
	sup := runSupervisor(t, countTopology(t, false), cfg, 1)
	clicks := func(from, to int) { produceUsers(t, b, from, to) }
	clicks(0, users)
	waitFor(t, time.Minute, "a snapshot past changelog offset 15,000", func() bool {
		e, ok := sl.newest()
		return ok && e.ChangelogOffset >= 15_000
	})
	clicks(0, tail)
	want := func(i int) int64 {
		if i < tail {
			return 2
		}
		return 1
	}
	counted := func() bool {
		for i := 0; i < users; i += 499 {
			if v, ok, err := sup.Get("clicks-per-user", fmt.Sprintf("user-%06d", i)); err != nil || !ok || v.(int64) != want(i) {
				return false
			}
		}
		return true
	}
	waitFor(t, time.Minute, "every user counted", counted)
	const changelog = "snaprep-clicks-per-user-changelog"
	waitFor(t, time.Minute, "every count in the changelog", func() bool { return endOffsets(t, b, changelog)[0] >= users+tail })
	end := endOffsets(t, b, changelog)[0]

	added, err := sup.Add()
	if err != nil {
		t.Fatal(err)
	}
	// Caught up: started at the end (a snapshot may reach it), or
	// applied up to it since.
	var started *streams.StandbyEvent
	waitFor(t, time.Minute, "the new instance's replica caught up", func() bool {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		for i, ev := range rl.started {
			if ev.InstanceID == added {
				started = &rl.started[i]
			}
		}
		return started != nil && (started.Offset >= end || rl.applied.InstanceID == added && rl.applied.Offset >= end)
	})
	if started == nil || started.Snapshot == nil {
		t.Fatalf("the replica on %s did not start from a snapshot: %+v", added, started)
	}
	if started.Offset != started.Snapshot.Offset || started.Offset < 15_000 {
		t.Fatalf("the replica started at offset %d, its snapshot reaches %d", started.Offset, started.Snapshot.Offset)
	}
	t.Logf("replica on %s: snapshot %s (%d bytes) at offset %d, changelog to %d", added, started.Snapshot.ID, started.Snapshot.Bytes, started.Offset, end)

	if err := sup.Crash("instance-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "every user counted by the promoted replica", counted)
}
