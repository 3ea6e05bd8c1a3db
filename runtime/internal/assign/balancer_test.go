package assign_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/internal/assign"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	subtopologies = []assign.Subtopology{
		{ID: 0, Topics: []string{"a", "b"}, Changelogs: []string{"app-counts-changelog"}},
		{ID: 1, Topics: []string{"app-x-repartition"}},
	}
	topics     = []string{"a", "app-x-repartition", "b"}
	partitions = map[string]int32{"a": 3, "b": 3, "app-x-repartition": 2}
)

// member is one group member in a balancer test: its instance, what it
// held before the rebalance, and its balancer.
type member struct {
	id       string
	active   []assign.Task
	offsets  map[assign.Task]int64
	tags     map[string]string
	owned    map[string][]int32 // the partitions it owns, as franz-go passes them
	balancer *assign.Balancer
}

func newMember(id string, opts assign.Options, active []assign.Task, offsets map[assign.Task]int64) *member {
	m := &member{id: id, active: active, offsets: offsets}
	opts.Subtopologies = subtopologies
	opts.Instance, opts.Server = "instance-"+id, "127.0.0.1:80"+id[1:]
	opts.Held = func() ([]assign.Task, map[assign.Task]int64) { return m.active, m.offsets }
	m.balancer = assign.New(opts)
	return m
}

// rebalance runs one rebalance with members[0] as the leader: every
// member's join metadata, the leader's plan, and each member's parsing of
// its share.
func rebalance(t *testing.T, members []*member) map[string]assign.Assignment {
	t.Helper()
	var join []kmsg.JoinGroupResponseMember
	for _, m := range members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = m.balancer.JoinGroupMetadata(topics, m.owned, 7)
		join = append(join, jm)
	}
	leader := members[0].balancer
	mb, memberTopics, err := leader.MemberBalancer(join)
	if err != nil {
		t.Fatalf("MemberBalancer: %v", err)
	}
	if want := map[string]struct{}{"a": {}, "b": {}, "app-x-repartition": {}}; !reflect.DeepEqual(memberTopics, want) {
		t.Errorf("MemberBalancer topics = %v, want %v", memberTopics, want)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(partitions)
	if err != nil {
		t.Fatalf("BalanceOrError: %v", err)
	}
	byID := make(map[string]*member)
	for _, m := range members {
		byID[m.id] = m
	}
	out := make(map[string]assign.Assignment)
	for _, sa := range into.IntoSyncAssignment() {
		m := byID[sa.MemberID]
		parts, err := m.balancer.ParseSyncAssignment(sa.MemberAssignment)
		if err != nil {
			t.Fatalf("ParseSyncAssignment for %s: %v", sa.MemberID, err)
		}
		got := m.balancer.Last()
		checkPartitions(t, sa.MemberID, parts, got.Active)
		out[sa.MemberID] = got
	}
	if len(out) != len(members) {
		t.Fatalf("%d assignments for %d members", len(out), len(members))
	}
	return out
}

// checkPartitions checks that a member's partitions are exactly those of
// its active tasks: every source topic's partition of each task.
func checkPartitions(t *testing.T, member string, parts map[string][]int32, active []assign.Task) {
	t.Helper()
	want := make(map[string][]int32)
	for _, task := range active {
		for _, topic := range subtopologies[task.Subtopology].Topics {
			if task.Partition < partitions[topic] {
				want[topic] = append(want[topic], task.Partition)
			}
		}
	}
	for topic := range want {
		slices.Sort(want[topic])
	}
	got := make(map[string][]int32)
	for topic, ps := range parts {
		got[topic] = slices.Sorted(slices.Values(ps))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("member %s: partitions %v, want those of its active tasks %v: %v", member, got, active, want)
	}
}

func task(s string) assign.Task {
	var t assign.Task
	if err := t.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return t
}

func TestBalancerRoundTrip(t *testing.T) {
	ends := func(_ context.Context, topics []string) (map[string]map[int32]int64, error) {
		if !slices.Equal(topics, []string{"app-counts-changelog"}) {
			return nil, errors.New("unexpected topics")
		}
		return map[string]map[int32]int64{"app-counts-changelog": {0: 1000, 1: 1000, 2: 1000}}, nil
	}
	opts := assign.Options{StandbyReplicas: 1, AcceptableRecoveryLag: 100, MaxWarmupReplicas: 2,
		ProbingInterval: time.Minute, Ends: ends}

	// m1 ran everything and holds all state; m2 and m3 just joined, m2
	// with an old copy of 0_1, too far behind to run it.
	m1 := newMember("m1", opts, []assign.Task{task("0_0"), task("0_1"), task("0_2"), task("1_0"), task("1_1")},
		map[assign.Task]int64{task("0_0"): 1000, task("0_1"): 1000, task("0_2"): 1000})
	m2 := newMember("m2", opts, nil, map[assign.Task]int64{task("0_1"): 500})
	m3 := newMember("m3", opts, nil, nil)
	got := rebalance(t, []*member{m1, m2, m3})

	roles := make(map[assign.Task][]string)
	for id, a := range got {
		for _, tk := range a.Active {
			roles[tk] = append(roles[tk], id+":active")
		}
		for _, tk := range a.Standby {
			roles[tk] = append(roles[tk], id+":standby")
		}
		for _, tk := range a.Warmup {
			roles[tk] = append(roles[tk], id+":warmup")
		}
		if len(a.Group) != 3 {
			t.Errorf("member %s sees %d members in the group, want 3", id, len(a.Group))
		}
	}
	for _, tk := range []assign.Task{task("0_0"), task("0_1"), task("0_2"), task("1_0"), task("1_1")} {
		actives := 0
		for _, r := range roles[tk] {
			if strings.HasSuffix(r, ":active") {
				actives++
			}
		}
		if actives != 1 {
			t.Errorf("task %s roles %v: want exactly one active", tk, roles[tk])
		}
	}
	// m3 is caught up on nothing stateful, so it runs no 0_x task; the
	// stateful tasks that balance would move are warmed up instead.
	for _, tk := range got["m3"].Active {
		if tk.Subtopology == 0 {
			t.Errorf("m3 holds no state but runs stateful task %s", tk)
		}
	}
	// The stateful tasks balance would move to m2 or m3 are warmed up
	// there, by a warm-up or a standby, until the probing rebalance.
	replicas := 0
	for _, id := range []string{"m2", "m3"} {
		replicas += len(got[id].Warmup) + len(got[id].Standby)
	}
	if replicas < 3 {
		t.Errorf("m2 and m3 hold %d replicas of the 3 stateful tasks; assignments %+v", replicas, got)
	}
	if got["m1"].ProbeAfter != time.Minute {
		t.Errorf("leader ProbeAfter = %v, want the probing interval", got["m1"].ProbeAfter)
	}
	for _, id := range []string{"m2", "m3"} {
		if got[id].ProbeAfter != 0 {
			t.Errorf("member %s ProbeAfter = %v: only the leader probes", id, got[id].ProbeAfter)
		}
	}
	for _, g := range got["m2"].Group {
		if g.Server == "" || !strings.HasPrefix(g.Instance, "instance-") {
			t.Errorf("group entry %+v lacks instance or server", g)
		}
	}
}

func TestBalancerJoinGroupMetadata(t *testing.T) {
	b := assign.New(assign.Options{
		Subtopologies: subtopologies, Instance: "host-1", Server: "10.0.0.1:7070", Tags: map[string]string{"zone": "a"},
		Held: func() ([]assign.Task, map[assign.Task]int64) {
			return []assign.Task{task("0_2")}, map[assign.Task]int64{task("0_2"): 42, task("0_0"): 7}
		},
	})
	raw := b.JoinGroupMetadata([]string{"a"}, nil, 3)
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(raw); err != nil {
		t.Fatalf("join metadata does not parse as ConsumerMemberMetadata: %v", err)
	}
	if !slices.Equal(meta.Topics, []string{"a"}) || meta.Generation != 3 {
		t.Errorf("Topics, Generation = %v, %d; want [a], 3", meta.Topics, meta.Generation)
	}
	var info map[string]any
	if err := json.Unmarshal(meta.UserData, &info); err != nil {
		t.Fatalf("user data is not JSON: %v: %s", err, meta.UserData)
	}
	want := map[string]any{"v": 2.0, "instance": "host-1", "server": "10.0.0.1:7070", "tags": map[string]any{"zone": "a"},
		"active": []any{"0_2"}, "offsets": map[string]any{"0_0": 7.0, "0_2": 42.0}}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("user data = %v, want %v", info, want)
	}
}

func TestBalancerForeignMetadata(t *testing.T) {
	var warnings []string
	opts := assign.Options{Warn: func(msg string) { warnings = append(warnings, msg) }}
	m1 := newMember("m1", opts, nil, nil)
	b := m1.balancer

	bad := kmsg.NewJoinGroupResponseMember()
	bad.MemberID = "m1"
	bad.ProtocolMetadata = []byte{0, 9, 1}
	if _, _, err := b.MemberBalancer([]kmsg.JoinGroupResponseMember{bad}); err == nil {
		t.Fatal("MemberBalancer accepted unreadable metadata")
	}

	// A member whose user data this version cannot read still gets its
	// share, as a member with no state.
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics, meta.UserData = topics, []byte("instance-from-v1")
	other := kmsg.NewJoinGroupResponseMember()
	other.MemberID, other.ProtocolMetadata = "m0", meta.AppendTo(nil)
	self := kmsg.NewJoinGroupResponseMember()
	self.MemberID, self.ProtocolMetadata = "m1", b.JoinGroupMetadata(topics, nil, 1)
	mb, _, err := b.MemberBalancer([]kmsg.JoinGroupResponseMember{other, self})
	if err != nil {
		t.Fatal(err)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(partitions)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(into.IntoSyncAssignment()); n != 2 {
		t.Errorf("%d assignments, want 2", n)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "m0") {
		t.Errorf("warnings = %q, want one naming member m0", warnings)
	}
}

func TestBalancerEndsUnknown(t *testing.T) {
	var warnings []string
	opts := assign.Options{
		AcceptableRecoveryLag: 10,
		Ends: func(context.Context, []string) (map[string]map[int32]int64, error) {
			return nil, errors.New("broker away")
		},
		Warn: func(msg string) { warnings = append(warnings, msg) },
	}
	// m2 holds all the state: with the ends unknown, the best state
	// stands in for them, so m2 keeps every stateful task.
	full := map[assign.Task]int64{task("0_0"): 500, task("0_1"): 500, task("0_2"): 500}
	m1 := newMember("m1", opts, nil, nil)
	m2 := newMember("m2", opts, nil, full)
	got := rebalance(t, []*member{m1, m2})
	for _, tk := range got["m1"].Active {
		if tk.Subtopology == 0 {
			t.Errorf("m1 got stateful task %s though m2 holds all the state", tk)
		}
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "broker away") {
		t.Errorf("warnings = %q, want the listing error", warnings)
	}
}

func TestTaskText(t *testing.T) {
	for _, s := range []string{"0_0", "3_17"} {
		var tk assign.Task
		if err := tk.UnmarshalText([]byte(s)); err != nil || tk.String() != s {
			t.Errorf("UnmarshalText(%q) = %v, %v", s, tk, err)
		}
	}
	for _, s := range []string{"", "1", "a_1", "1_b", "-1_0", "1_-2", "1_99999999999"} {
		var tk assign.Task
		if err := tk.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("UnmarshalText(%q) = %v, want an error", s, tk)
		}
	}
	b, _ := json.Marshal(map[assign.Task]int64{task("1_2"): 5})
	if string(b) != `{"1_2":5}` {
		t.Errorf("JSON of a task-keyed map = %s", b)
	}
}
