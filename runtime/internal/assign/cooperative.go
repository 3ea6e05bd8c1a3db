package assign

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cooperative rebalancing.
//
// Under the eager protocol every member gives up all its partitions before
// it joins, so the leader may hand any task to anyone. Under the
// cooperative protocol members keep their partitions while they join and
// say which they own (the join metadata's owned partitions). The leader
// plans as always, with MakePlan, and then adjusts the plan on top
// (withholdMoving): a task planned on one member while another still owns
// it is withheld from the new owner in this rebalance. The old owner finds
// the task missing from its assignment, revokes it (commits it and gives
// it up) and, as franz-go's cooperative consumer does after any
// revocation, joins again at once; in that follow-up rebalance nobody
// owns the task any more and the plan hands it to its new owner. A task
// that stays where it is appears in both its owner's old and new
// assignments, and so is never revoked.
//
// The adjustment touches only actives, and only for one rebalance, so
// every property of the plan (caught-up placement, warm-ups, probing,
// standbys off their active's member and rack) holds as MakePlan made
// it. Meanwhile the withheld task's new owner is given a standby of it
// when the task is stateful: a warm-up or standby it already keeps there
// goes on following the changelog instead of closing, and is promoted in
// the follow-up, as eagerly.

// ownedTasks returns the tasks whose partitions a member says it owns.
func (b *Balancer) ownedTasks(owned []kmsg.ConsumerMemberMetadataOwnedPartition) []Task {
	seen := make(map[Task]bool)
	for _, op := range owned {
		st, ok := b.bySource[op.Topic]
		if !ok {
			continue
		}
		for _, p := range op.Partitions {
			seen[Task{st, p}] = true
		}
	}
	return slices.SortedFunc(maps.Keys(seen), compareTasks)
}

// withholdMoving removes from each member's actives the tasks another
// member of this rebalance still owns, and makes them standbys there when
// they are stateful.
func (b *Balancer) withholdMoving(plan *Plan, owned map[string][]Task) {
	owners := make(map[Task][]string)
	for m, tasks := range owned {
		for _, t := range tasks {
			owners[t] = append(owners[t], m)
		}
	}
	for id, mp := range plan.Members {
		var keep []Task
		for _, t := range mp.Active {
			if !slices.ContainsFunc(owners[t], func(m string) bool { return m != id }) {
				keep = append(keep, t)
				continue
			}
			if len(b.byID[t.Subtopology].Changelogs) > 0 && !slices.Contains(mp.Standby, t) && !slices.Contains(mp.Warmup, t) {
				mp.Standby = append(mp.Standby, t)
			}
		}
		if len(keep) < len(mp.Active) {
			mp.Active = keep
			slices.SortFunc(mp.Standby, compareTasks)
		}
	}
}
