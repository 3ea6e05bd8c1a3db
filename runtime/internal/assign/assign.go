// Package assign is Braid's group balancer: it assigns tasks, not
// partitions, to the members of an application's consumer group.
//
// A task is one sub-topology's partition number; all input partitions of a
// task must go to the same member, which none of Kafka's partition
// assignors guarantee. The balancer keeps tasks where they were (sticky)
// as far as balance allows, and balances the task count per member to
// within one. It speaks the classic consumer protocol: members send
// kmsg.ConsumerMemberMetadata with their owned partitions, and receive a
// kmsg.ConsumerMemberAssignment.
package assign

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolName is the group protocol name members agree on.
const ProtocolName = "braid-tasks-v1"

// Subtopology lists the (real) topics one sub-topology reads.
type Subtopology struct {
	ID     int
	Topics []string
}

// Task is one sub-topology's partition number.
type Task struct {
	Subtopology int
	Partition   int32
}

func (t Task) String() string { return fmt.Sprintf("%d_%d", t.Subtopology, t.Partition) }

// Balancer implements kgo.GroupBalancer for one topology.
type Balancer struct {
	subtopologies []Subtopology
	byID          map[int]Subtopology
	bySource      map[string]int
	instance      string
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

// New returns a balancer for the given sub-topologies; instance names the
// member in its join metadata.
func New(subtopologies []Subtopology, instance string) *Balancer {
	b := &Balancer{subtopologies: subtopologies, byID: make(map[int]Subtopology), bySource: make(map[string]int), instance: instance}
	for _, st := range subtopologies {
		b.byID[st.ID] = st
		for _, t := range st.Topics {
			b.bySource[t] = st.ID
		}
	}
	return b
}

// ProtocolName implements kgo.GroupBalancer.
func (*Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer: the protocol is eager, so
// every member commits and drops its tasks before a new assignment.
func (*Balancer) IsCooperative() bool { return false }

// JoinGroupMetadata implements kgo.GroupBalancer.
func (b *Balancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = topics
	meta.Generation = generation
	meta.UserData = []byte(b.instance)
	for _, topic := range slices.Sorted(maps.Keys(current)) {
		owned := kmsg.NewConsumerMemberMetadataOwnedPartition()
		owned.Topic = topic
		owned.Partitions = current[topic]
		meta.OwnedPartitions = append(meta.OwnedPartitions, owned)
	}
	return meta.AppendTo(nil)
}

// ParseSyncAssignment implements kgo.GroupBalancer.
func (*Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

// MemberBalancer implements kgo.GroupBalancer.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, fmt.Errorf("reading join metadata: %w", err)
	}
	return cb, cb.MemberTopics(), nil
}

// Balance implements kgo.ConsumerBalancerBalance: it turns partition
// counts into tasks, assigns them and returns the partition plan.
func (b *Balancer) Balance(cb *kgo.ConsumerBalancer, partitions map[string]int32) kgo.IntoSyncAssignment {
	var tasks []Task
	for _, st := range b.subtopologies {
		var n int32
		for _, t := range st.Topics {
			n = max(n, partitions[t])
		}
		for p := range n {
			tasks = append(tasks, Task{st.ID, p})
		}
	}
	var members []Member
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mem := Member{ID: m.MemberID}
		for _, owned := range meta.OwnedPartitions {
			st, ok := b.bySource[owned.Topic]
			if !ok {
				continue
			}
			for _, p := range owned.Partitions {
				mem.Owned = append(mem.Owned, Task{st, p})
			}
		}
		members = append(members, mem)
	})
	assigned := Assign(members, tasks)

	plan := cb.NewPlan()
	for i := range cb.Members() {
		m, _ := cb.MemberAt(i)
		for _, task := range assigned[m.MemberID] {
			for _, topic := range b.byID[task.Subtopology].Topics {
				if task.Partition < partitions[topic] {
					plan.AddPartition(m, topic, task.Partition)
				}
			}
		}
	}
	return plan
}

// Member is a group member and the tasks it owned before this rebalance.
type Member struct {
	ID    string
	Owned []Task
}

// Assign gives every task to exactly one member. Task counts per member
// differ by at most one; within that bound each member keeps the tasks it
// owned. The result is deterministic for the same input.
func Assign(members []Member, tasks []Task) map[string][]Task {
	out := make(map[string][]Task, len(members))
	if len(members) == 0 {
		return out
	}
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	exists := make(map[Task]bool, len(tasks))
	for _, t := range tasks {
		exists[t] = true
	}
	floor, extra := len(tasks)/len(members), len(tasks)%len(members)
	taken := make(map[Task]bool, len(tasks))

	// Keep owned tasks up to the floor, then let members keep one more
	// while extra slots remain, so stickiness never costs balance.
	keep := func(m Member, limit int) {
		for _, t := range m.Owned {
			if len(out[m.ID]) >= limit {
				return
			}
			if exists[t] && !taken[t] {
				taken[t] = true
				out[m.ID] = append(out[m.ID], t)
			}
		}
	}
	for _, m := range members {
		keep(m, floor)
	}
	for _, m := range members {
		if extra == 0 {
			break
		}
		if len(out[m.ID]) == floor {
			before := len(out[m.ID])
			keep(m, floor+1)
			if len(out[m.ID]) > before {
				extra--
			}
		}
	}

	// Hand out the rest to the least loaded member that has room, one
	// sub-topology after another, so that each sub-topology's tasks spread
	// over the members.
	var rest []Task
	for _, t := range tasks {
		if !taken[t] {
			rest = append(rest, t)
		}
	}
	slices.SortFunc(rest, func(a, b Task) int {
		return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition))
	})
	for _, t := range rest {
		best := -1
		for i, m := range members {
			n := len(out[m.ID])
			room := n < floor || (n == floor && extra > 0)
			if room && (best < 0 || n < len(out[members[best].ID])) {
				best = i
			}
		}
		id := members[best].ID
		if len(out[id]) == floor {
			extra--
		}
		out[id] = append(out[id], t)
	}
	for id := range out {
		slices.SortFunc(out[id], func(a, b Task) int {
			return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition))
		})
	}
	return out
}
