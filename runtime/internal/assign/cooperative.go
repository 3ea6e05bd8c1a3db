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
// it. The new owner learns of the withheld task (the assignment's
// pending list): a warm-up or standby it keeps of it goes on following the
// changelog in its role instead of closing, else it starts a warm-up, and
// the replica is promoted in the follow-up, as eagerly.

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
// member of this rebalance still owns, and returns them as each member's
// pending tasks.
func withholdMoving(plan *Plan, owned map[string][]Task) map[string][]Task {
	owners := make(map[Task][]string)
	for m, tasks := range owned {
		for _, t := range tasks {
			owners[t] = append(owners[t], m)
		}
	}
	pending := make(map[string][]Task)
	for id, mp := range plan.Members {
		var keep []Task
		for _, t := range mp.Active {
			if slices.ContainsFunc(owners[t], func(m string) bool { return m != id }) {
				pending[id] = append(pending[id], t)
			} else {
				keep = append(keep, t)
			}
		}
		mp.Active = keep
	}
	return pending
}

// runningCaughtUp counts a task as caught up on the member that runs it.
// A cooperative member joins while its tasks run, so the checkpoint it
// reports of one lags its changelog by up to a commit interval's writes,
// while a standby elsewhere may have applied them all: taken at their
// word, the leader would move the active to the standby, and the commit
// of the revocation would make the old owner the most caught up again in
// the follow-up. (Eager members commit before they join, so their
// checkpoints are at the end.) Kafka Streams' members report a running
// active the same way, as caught up.
func runningCaughtUp(members []PlanMember, owned map[string][]Task, ends map[Task]int64) {
	for i := range members {
		m := &members[i]
		for _, t := range owned[m.ID] {
			end, ok := ends[t]
			if !ok || m.Offsets[t] >= end {
				continue
			}
			if m.Offsets == nil {
				m.Offsets = make(map[Task]int64)
			}
			m.Offsets[t] = end
		}
	}
}
