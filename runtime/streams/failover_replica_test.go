package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestCrashMovesActivesToCaughtUpStandbys is the issue's failover: three
// instances, one standby per task, a topology of a stateless sub-topology
// (re-keying into a repartition topic) and a stateful one (counting), with
// changelogs far shorter than the default acceptable lag, so that every
// instance counts as caught up on every task. Crashing one instance must
// still move each of its stateful tasks to the instance holding its
// standby, which replays nothing or little, and the failover must name
// the replica; none restores its changelog in full elsewhere.
func TestCrashMovesActivesToCaughtUpStandbys(t *testing.T) {
	const partitions, users, clicks = 4, 40, 2000
	b := startBroker(t)
	createTopic(t, b, "clicks", partitions)
	createTopic(t, b, "click-counts", partitions)
	builder := streams.NewBuilder()
	builder.Stream([]string{"clicks"}, streams.WithSerdes(streams.String, streams.String)).
		SelectKey(func(k, _ any) (any, error) { return k, nil }).
		GroupByKey(streams.WithSerdes(streams.String, streams.String)).
		Count(streams.Materialized(streams.StoreOptions{Name: "per-user"})).
		To("click-counts", streams.WithSerdes(streams.String, streams.Int64))
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	events := &haEvents{}
	cfg := testConfig(b, "replica-failover")
	cfg.StateDir = t.TempDir()
	cfg.SessionTimeout = 3 * time.Second
	cfg.StandbyReplicas = 1
	cfg.Hooks = []streams.Hook{events}
	sup := runSupervisor(t, topo, cfg, 3)
	produceClicks(t, b, 0, clicks, users)
	total := func() int64 {
		var n int64
		for u := range users {
			if v, ok, err := sup.Get("per-user", fmt.Sprintf("user-%02d", u)); err == nil && ok {
				n += v.(int64)
			}
		}
		return n
	}
	// settled: every task active once, every stateful one with a
	// standby at lag 0 on another instance.
	stateful := func(id streams.TaskID) bool { return id.Subtopology == 1 }
	settled := func() bool {
		active, standby := map[streams.TaskID]int{}, map[streams.TaskID]int{}
		for _, in := range sup.Instances() {
			if in.State != streams.InstanceRunning {
				continue
			}
			if in.Stats.State != streams.Running {
				return false
			}
			for _, ts := range in.Stats.Tasks {
				if ts.Restoring {
					return false
				}
				active[ts.ID]++
			}
			for _, sb := range in.Stats.Standbys {
				for _, st := range sb.Stores {
					if st.Lag != 0 {
						return false
					}
				}
				if !sb.Warmup {
					standby[sb.ID]++
				}
			}
		}
		for p := range int32(partitions) {
			for st := range 2 {
				id := streams.TaskID{Subtopology: st, Partition: p}
				if active[id] != 1 || (stateful(id) && standby[id] != 1) {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, 60*time.Second, "the clicks counted and every standby caught up", func() bool {
		return total() == clicks && settled()
	})

	// The victim is preferably the layout of the issue: an instance
	// running a stateless task and a stateful one whose standby is on
	// the surviving instance with the lowest id, while both survivors run
	// three tasks. Balance then leaves one free slot per survivor, and
	// placing the stateless task first in task order took the standby
	// holder's slot. Else it is the instance with the most stateful tasks.
	instances := sup.Instances()
	holder := map[streams.TaskID]string{}
	for _, in := range instances {
		for _, sb := range in.Stats.Standbys {
			holder[sb.ID] = in.ID
		}
	}
	victim, moved, layout := "", []streams.TaskID(nil), false
	for i, in := range instances {
		var mine []streams.TaskID
		stateless := false
		for _, ts := range in.Stats.Tasks {
			if stateful(ts.ID) {
				mine = append(mine, ts.ID)
			} else {
				stateless = true
			}
		}
		lowest := instances[(i+1)%3].ID
		if other := instances[(i+2)%3].ID; other < lowest {
			lowest = other
		}
		issue := stateless && len(in.Stats.Tasks) == 2 && len(mine) == 1 && holder[mine[0]] == lowest
		if issue && !layout || !layout && len(mine) > len(moved) {
			victim, moved, layout = in.ID, mine, issue
		}
	}
	t.Logf("crashing %s, which runs stateful tasks %v (the issue's layout: %v)", victim, moved, layout)
	if err := sup.Crash(victim); err != nil {
		t.Fatal(err)
	}
	// A failover completes at the task's first record on its new owner.
	produceClicks(t, b, clicks, clicks, users)
	var got map[streams.TaskID]streams.FailoverEvent
	waitFor(t, 60*time.Second, fmt.Sprintf("failover events for %v", moved), func() bool {
		got = events.failoversOf(moved)
		return len(got) == len(moved)
	})
	for _, id := range moved {
		ev := got[id]
		t.Logf("task %s %s -> %s (from %q): restored %d, standby lag at the crash %d", id, ev.From, ev.To, ev.FromReplica, ev.Restored, ev.StandbyLag)
		if ev.To != holder[id] || ev.FromReplica != "standby" || ev.StandbyLag != 0 {
			t.Errorf("task %s moved to %s from replica %q (standby lag %d, restored %d); want %s, which held its standby at lag 0",
				id, ev.To, ev.FromReplica, ev.StandbyLag, ev.Restored, holder[id])
		}
		if ev.Restored != 0 {
			t.Errorf("task %s restored %d records; its standby was at lag 0 and nothing was written to its changelog since", id, ev.Restored)
		}
	}
	waitFor(t, 60*time.Second, "the counts intact after the failover", func() bool { return total() == 2*clicks })
}
