// Package assign is Braid's group balancer: it assigns tasks, not
// partitions, to the members of an application's consumer group, and
// with them standby and warm-up replicas.
//
// A task is one sub-topology's partition number; all input partitions of a
// task must go to the same member, which none of Kafka's partition
// assignors guarantee. The leader plans with MakePlan, a pure function
// modelled on Kafka Streams' high-availability assignor: balanced sticky
// actives, placed on members that are caught up on their state, standbys
// never beside their active, spread over rack tags and then over the
// members (so that a crash spreads its actives over the survivors), and
// warm-ups where an active should move once they have caught up.
//
// It speaks the classic consumer protocol, so that any Kafka broker runs
// it: members send kmsg.ConsumerMemberMetadata whose user data says what
// state they hold (see memberInfo), and receive a
// kmsg.ConsumerMemberAssignment whose partitions are their active tasks'
// and whose user data carries the rest of the plan (see assignmentInfo).
package assign

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Subtopology lists the real topics one sub-topology reads and the
// changelogs of its stores. A sub-topology without changelogs is
// stateless: its tasks need no caught-up member and get no standbys.
type Subtopology struct {
	ID         int
	Topics     []string
	Changelogs []string
}

// Task is one sub-topology's partition number.
type Task struct {
	Subtopology int
	Partition   int32
}

func (t Task) String() string { return fmt.Sprintf("%d_%d", t.Subtopology, t.Partition) }

// ProtocolName is the group protocol name members agree on. The version
// moves with the layout of the user data below.
const ProtocolName = "braid-tasks-v2"

// infoVersion is the version of memberInfo and assignmentInfo.
const infoVersion = 2

// Options configure a Balancer.
type Options struct {
	Subtopologies []Subtopology

	// Instance, Server and Tags describe this member to the leader.
	Instance string
	Server   string
	Tags     map[string]string

	StandbyReplicas       int
	AcceptableRecoveryLag int64
	MaxWarmupReplicas     int
	// ProbingInterval is how long after an assignment with warm-ups the
	// leader asks for the probing rebalance.
	ProbingInterval time.Duration
	// Cooperative makes the protocol cooperative (see cooperative.go):
	// a task that moves between members is revoked in one rebalance and
	// assigned in the next, and the tasks that stay are never revoked.
	Cooperative bool

	// Held is called when the member joins: the tasks it ran actively
	// until now, and the changelog offset sum of every task whose state
	// it holds.
	Held func() (active []Task, offsets map[Task]int64)
	// Ends is called on the leader: the end offsets of the given
	// changelog topics, by topic and partition.
	Ends func(ctx context.Context, topics []string) (map[string]map[int32]int64, error)
	// Warn receives what the leader could not do (standbys without room,
	// unknown end offsets). May be nil.
	Warn func(msg string)
}

// Balancer implements kgo.GroupBalancer for one topology: the leader
// plans actives, standbys and warm-ups with MakePlan.
type Balancer struct {
	opts     Options
	byID     map[int]Subtopology
	bySource map[string]int

	// mu guards everything below. franz-go's group goroutine writes
	// them (lastJoin and replayed when this member joins, probe when it
	// leads a rebalance, last when its SyncGroup response arrives); the
	// App reads last and lastJoin in its assignment callback, and sets
	// replay before it starts (see replay.go).
	mu       sync.Mutex
	last     Assignment
	probe    time.Duration
	replay   []byte
	lastJoin []byte
	replayed bool
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

// New returns a balancer for opts.
func New(opts Options) *Balancer {
	b := &Balancer{opts: opts, byID: make(map[int]Subtopology), bySource: make(map[string]int)}
	for _, st := range opts.Subtopologies {
		b.byID[st.ID] = st
		for _, t := range st.Topics {
			b.bySource[t] = st.ID
		}
	}
	return b
}

// Assignment is what one member received in the last rebalance.
type Assignment struct {
	Active, Standby, Warmup []Task
	// Pending are the tasks planned active here that a cooperative
	// rebalance withholds until their owner gave them up (see
	// cooperative.go); they arrive in the follow-up rebalance.
	Pending []Task
	// ProbeAfter, when positive, asks this member (the leader) to trigger
	// a probing rebalance after that long.
	ProbeAfter time.Duration
	// Group is every member's assignment, for routing queries and for
	// showing where each task and its replicas live.
	Group []MemberAssignment
}

// MemberAssignment is one member's share of an assignment.
type MemberAssignment struct {
	Instance string            `json:"instance"`
	Server   string            `json:"server,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Active   []Task            `json:"active,omitempty"`
	Standby  []Task            `json:"standby,omitempty"`
	Warmup   []Task            `json:"warmup,omitempty"`
}

// Last returns the assignment of the last completed rebalance.
func (b *Balancer) Last() Assignment {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// MarshalText writes a task as "1_3", so that it can key JSON maps.
func (t Task) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads "1_3".
func (t *Task) UnmarshalText(b []byte) error {
	st, p, ok := strings.Cut(string(b), "_")
	sub, err1 := strconv.Atoi(st)
	part, err2 := strconv.ParseInt(p, 10, 32)
	if !ok || err1 != nil || err2 != nil || sub < 0 || part < 0 {
		return fmt.Errorf("task id %q is not <subtopology>_<partition>", b)
	}
	*t = Task{Subtopology: sub, Partition: int32(part)}
	return nil
}

// memberInfo is the user data of a member's join metadata.
type memberInfo struct {
	Version  int               `json:"v"`
	Instance string            `json:"instance"`
	Server   string            `json:"server,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Active   []Task            `json:"active,omitempty"`
	Offsets  map[Task]int64    `json:"offsets,omitempty"`
}

// assignmentInfo is the user data of a member's assignment; its active
// partitions travel in the assignment proper.
type assignmentInfo struct {
	Version int                `json:"v"`
	Active  []Task             `json:"active,omitempty"`
	Standby []Task             `json:"standby,omitempty"`
	Warmup  []Task             `json:"warmup,omitempty"`
	Pending []Task             `json:"pending,omitempty"`
	Group   []MemberAssignment `json:"group,omitempty"`
}

// ProtocolName implements kgo.GroupBalancer.
func (*Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer. Eager, every member
// commits and suspends its tasks before a rebalance, keeping their stores
// open, so a task that stays put resumes at once; cooperative, a member
// gives up only the tasks that move, and keeps running the others.
func (b *Balancer) IsCooperative() bool { return b.opts.Cooperative }

// JoinGroupMetadata implements kgo.GroupBalancer.
func (b *Balancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	b.mu.Lock()
	b.probe = 0 // set again by Balance if this member leads this rebalance
	b.mu.Unlock()
	info := memberInfo{Version: infoVersion, Instance: b.opts.Instance, Server: b.opts.Server, Tags: b.opts.Tags}
	if b.opts.Held != nil {
		info.Active, info.Offsets = b.opts.Held()
	}
	if replay := b.takeReplay(topics, info.Offsets); replay != nil {
		b.joined(replay, true)
		return replay
	}
	data, _ := json.Marshal(info) // maps and slices of plain values: cannot fail
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = topics
	meta.Generation = generation
	meta.UserData = data
	if b.opts.Cooperative {
		// The leader withholds a task from its new owner while another
		// member still owns it; see cooperative.go.
		for _, topic := range slices.Sorted(maps.Keys(owned)) {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = topic, owned[topic]
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
	}
	out := meta.AppendTo(nil)
	b.joined(out, false)
	return out
}

// joined records the metadata of this member's join.
func (b *Balancer) joined(meta []byte, replayed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastJoin, b.replayed = meta, replayed
}

// ParseSyncAssignment implements kgo.GroupBalancer, keeping the standby
// and warm-up lists for Last.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, fmt.Errorf("reading assignment: %w", err)
	}
	parts := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		parts[t.Topic] = t.Partitions
	}
	var info assignmentInfo
	if len(a.UserData) > 0 {
		if err := json.Unmarshal(a.UserData, &info); err != nil {
			return nil, fmt.Errorf("reading assignment user data: %w", err)
		}
	}
	if info.Version != infoVersion && len(a.UserData) > 0 {
		return nil, fmt.Errorf("reading assignment: user data version %d, want %d", info.Version, infoVersion)
	}
	b.mu.Lock()
	b.last = Assignment{Active: info.Active, Standby: info.Standby, Warmup: info.Warmup, Pending: info.Pending, ProbeAfter: b.probe, Group: info.Group}
	b.mu.Unlock()
	return parts, nil
}

// MemberBalancer implements kgo.GroupBalancer.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, fmt.Errorf("reading join metadata: %w", err)
	}
	return cb, cb.MemberTopics(), nil
}

// Balance implements kgo.ConsumerBalancerBalance: it plans tasks over the
// members and returns each member's active partitions with its plan.
func (b *Balancer) Balance(cb *kgo.ConsumerBalancer, partitions map[string]int32) kgo.IntoSyncAssignment {
	in := PlanInput{
		Tasks:                 b.tasks(partitions),
		StandbyReplicas:       b.opts.StandbyReplicas,
		AcceptableRecoveryLag: b.opts.AcceptableRecoveryLag,
		MaxWarmupReplicas:     b.opts.MaxWarmupReplicas,
	}
	infos := make(map[string]memberInfo)
	owned := make(map[string][]Task)
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		owned[m.MemberID] = b.ownedTasks(meta.OwnedPartitions)
		var info memberInfo
		if err := json.Unmarshal(meta.UserData, &info); err != nil || info.Version != infoVersion {
			// A member of another Braid version: it still gets tasks,
			// as one with no state.
			b.warn(fmt.Sprintf("member %s sent join metadata this version cannot read; it is treated as holding no state", m.MemberID))
			info = memberInfo{Instance: m.MemberID}
		}
		infos[m.MemberID] = info
		in.Members = append(in.Members, PlanMember{ID: m.MemberID, PrevActive: info.Active, Offsets: info.Offsets, Tags: info.Tags})
	})
	in.Ends = b.ends(in.Tasks, in.Members)
	if b.opts.Cooperative {
		runningCaughtUp(in.Members, owned, in.Ends)
	}
	plan := MakePlan(in)
	// A lone member cannot hold standbys: nothing to warn about while the
	// first instance of a group waits for the others.
	if len(in.Members) > 1 {
		for _, w := range plan.Warnings {
			b.warn(w)
		}
	}
	var pending map[string][]Task
	if b.opts.Cooperative {
		pending = withholdMoving(&plan, owned)
	}
	return b.syncPlan(cb, plan, pending, infos, partitions)
}

// tasks lists the topology's tasks for the source partition counts: a
// sub-topology has as many tasks as its widest source topic.
func (b *Balancer) tasks(partitions map[string]int32) []Task {
	var tasks []Task
	for _, st := range b.opts.Subtopologies {
		var n int32
		for _, t := range st.Topics {
			n = max(n, partitions[t])
		}
		for p := range n {
			tasks = append(tasks, Task{st.ID, p})
		}
	}
	return tasks
}

// ends sums the end offsets of each stateful task's changelog partitions.
// When they cannot be listed, the best offset any member holds stands in
// for the end, so that placement still favours the most state.
func (b *Balancer) ends(tasks []Task, members []PlanMember) map[Task]int64 {
	var topics []string
	for _, st := range b.opts.Subtopologies {
		topics = append(topics, st.Changelogs...)
	}
	if len(topics) == 0 {
		return nil
	}
	var listed map[string]map[int32]int64
	var err error
	if b.opts.Ends != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		listed, err = b.opts.Ends(ctx, topics)
		cancel()
	}
	if err != nil {
		b.warn(fmt.Sprintf("listing changelog end offsets: %v; placing tasks by the state members hold", err))
	}
	out := make(map[Task]int64)
	for _, t := range tasks {
		st := b.byID[t.Subtopology]
		if len(st.Changelogs) == 0 {
			continue
		}
		if listed == nil {
			for _, m := range members {
				out[t] = max(out[t], m.Offsets[t])
			}
			continue
		}
		for _, topic := range st.Changelogs {
			out[t] += listed[topic][t.Partition]
		}
	}
	return out
}

func (b *Balancer) warn(msg string) {
	if b.opts.Warn != nil {
		b.opts.Warn(msg)
	}
}

// syncPlan turns the plan into each member's assignment: its active
// tasks' partitions, and the plan itself in the user data.
func (b *Balancer) syncPlan(cb *kgo.ConsumerBalancer, plan Plan, pending map[string][]Task, infos map[string]memberInfo, partitions map[string]int32) kgo.IntoSyncAssignment {
	var group []MemberAssignment
	for _, id := range slices.Sorted(maps.Keys(plan.Members)) {
		mp, info := plan.Members[id], infos[id]
		group = append(group, MemberAssignment{Instance: info.Instance, Server: info.Server, Tags: info.Tags,
			Active: mp.Active, Standby: mp.Standby, Warmup: mp.Warmup})
	}
	slices.SortFunc(group, func(x, y MemberAssignment) int { return cmp.Compare(x.Instance, y.Instance) })
	if plan.Probe {
		// The leader alone probes: one rebalance serves the group.
		b.mu.Lock()
		b.probe = max(time.Millisecond, b.opts.ProbingInterval)
		b.mu.Unlock()
	}
	out := make(syncAssignments, len(plan.Members))
	for i := range cb.Members() {
		m, _ := cb.MemberAt(i)
		mp := plan.Members[m.MemberID]
		if mp == nil {
			mp = &MemberPlan{}
		}
		var a kmsg.ConsumerMemberAssignment
		for _, topic := range slices.Sorted(maps.Keys(partitions)) {
			st, ok := b.bySource[topic]
			if !ok {
				continue
			}
			var ps []int32
			for _, t := range mp.Active {
				if t.Subtopology == st && t.Partition < partitions[topic] {
					ps = append(ps, t.Partition)
				}
			}
			if len(ps) > 0 {
				a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: ps})
			}
		}
		info := assignmentInfo{Version: infoVersion, Active: mp.Active, Standby: mp.Standby, Warmup: mp.Warmup,
			Pending: pending[m.MemberID], Group: group}
		a.UserData, _ = json.Marshal(info)
		out[m.MemberID] = a.AppendTo(nil)
	}
	return out
}

// syncAssignments is a finished plan: member id to encoded assignment.
type syncAssignments map[string][]byte

func (s syncAssignments) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(s))
	for _, id := range slices.Sorted(maps.Keys(s)) {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, s[id]
		out = append(out, a)
	}
	return out
}
