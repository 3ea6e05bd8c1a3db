package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// planTasks returns the tasks of sub-topology st for partitions 0..n-1.
func planTasks(st int, n int32) []Task {
	var out []Task
	for p := range n {
		out = append(out, Task{Subtopology: st, Partition: p})
	}
	return out
}

// planTS parses task names like "0_1" for compact tables.
func planTS(names ...string) []Task {
	out := []Task{}
	for _, name := range names {
		var t Task
		if _, err := fmt.Sscanf(name, "%d_%d", &t.Subtopology, &t.Partition); err != nil {
			panic(fmt.Sprintf("bad task name %q: %v", name, err))
		}
		out = append(out, t)
	}
	return out
}

// ends marks every task stateful with the same changelog end sum.
func ends(end int64, tasks []Task) map[Task]int64 {
	out := make(map[Task]int64, len(tasks))
	for _, t := range tasks {
		out[t] = end
	}
	return out
}

// offsets builds a member's Offsets from "task=offset" pairs.
func offsets(pairs ...string) map[Task]int64 {
	out := make(map[Task]int64, len(pairs))
	for _, pair := range pairs {
		name, off, _ := strings.Cut(pair, "=")
		var n int64
		if _, err := fmt.Sscanf(off, "%d", &n); err != nil {
			panic(fmt.Sprintf("bad offset %q: %v", pair, err))
		}
		out[planTS(name)[0]] = n
	}
	return out
}

func zone(z string) map[string]string { return map[string]string{"zone": z} }

// describe renders a plan per member as "A[..] S[..] W[..]" (active,
// standby, warm-up) so that a table can pin a whole plan down.
func describe(p Plan) map[string]string {
	names := func(ts []Task) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.String())
		}
		return strings.Join(s, " ")
	}
	out := make(map[string]string, len(p.Members))
	for id, mp := range p.Members {
		out[id] = fmt.Sprintf("A[%s] S[%s] W[%s]", names(mp.Active), names(mp.Standby), names(mp.Warmup))
	}
	return out
}

// activeCounts returns the members' active counts, sorted.
func activeCounts(p Plan) []int {
	var out []int
	for _, mp := range p.Members {
		out = append(out, len(mp.Active))
	}
	slices.Sort(out)
	return out
}

// moved counts the previous actives of in's members that are active on
// another member in p.
func moved(in PlanInput, p Plan) int {
	n := 0
	for _, m := range in.Members {
		for _, t := range m.PrevActive {
			if !slices.Contains(p.Members[m.ID].Active, t) {
				n++
			}
		}
	}
	return n
}

// prevFrom returns the members of in with PrevActive set to their actives
// in p: the input of the next rebalance.
func prevFrom(in PlanInput, p Plan) []PlanMember {
	out := slices.Clone(in.Members)
	for i := range out {
		out[i].PrevActive = p.Members[out[i].ID].Active
	}
	return out
}

// checkPlan asserts what holds for every plan: one entry per member,
// sorted lists, every task active exactly once, no member with two roles
// for a task (so no standby beside its active), warm-ups within the cap,
// one warning per task short of standbys, and the same plan for the same
// input in another order.
func checkPlan(t *testing.T, in PlanInput, p Plan) {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range in.Members {
		ids[m.ID] = true
	}
	if got := slices.Sorted(maps.Keys(p.Members)); !slices.Equal(got, slices.Sorted(maps.Keys(ids))) {
		t.Fatalf("plan members %v, want %v", got, slices.Sorted(maps.Keys(ids)))
	}
	active := map[Task]int{}
	standbys := map[Task]int{}
	warmups := 0
	for id, mp := range p.Members {
		roles := map[Task]string{}
		for role, ts := range map[string][]Task{"active": mp.Active, "standby": mp.Standby, "warm-up": mp.Warmup} {
			if !slices.IsSortedFunc(ts, compareTasks) {
				t.Errorf("%s: %s list %v not sorted", id, role, ts)
			}
			for _, task := range ts {
				if other, ok := roles[task]; ok {
					t.Errorf("%s holds task %s as %s and as %s", id, task, other, role)
				}
				roles[task] = role
			}
		}
		for _, task := range mp.Active {
			active[task]++
		}
		for _, task := range mp.Standby {
			standbys[task]++
			if _, stateful := in.Ends[task]; !stateful {
				t.Errorf("%s: standby of stateless task %s", id, task)
			}
		}
		warmups += len(mp.Warmup)
	}
	short := 0
	for _, task := range in.Tasks {
		if len(in.Members) > 0 && active[task] != 1 {
			t.Errorf("task %s active on %d members, want 1", task, active[task])
		}
		if _, stateful := in.Ends[task]; stateful && len(in.Members) > 0 && standbys[task] < in.StandbyReplicas {
			short++
		}
	}
	if len(active) > len(slices.Compact(slices.SortedFunc(slices.Values(in.Tasks), compareTasks))) {
		t.Errorf("actives %v include tasks not in the topology", active)
	}
	if warmups > in.MaxWarmupReplicas {
		t.Errorf("%d warm-ups, cap %d", warmups, in.MaxWarmupReplicas)
	}
	if len(p.Warnings) != short {
		t.Errorf("%d warnings %q, want %d (tasks short of standbys)", len(p.Warnings), p.Warnings, short)
	}
	shuffled := in
	shuffled.Members = slices.Clone(in.Members)
	slices.Reverse(shuffled.Members)
	shuffled.Tasks = slices.Clone(in.Tasks)
	slices.Reverse(shuffled.Tasks)
	if again := MakePlan(shuffled); !reflect.DeepEqual(again, p) {
		t.Errorf("input order changed the plan:\n%v\nvs\n%v", describe(p), describe(again))
	}
}

// Rebalances the stickiness and probing cases start from.
var (
	sticky3 = []PlanMember{
		{ID: "a", PrevActive: planTS("0_5", "0_1", "0_6")},
		{ID: "b", PrevActive: planTS("0_0", "0_3", "0_7")},
		{ID: "c", PrevActive: planTS("0_2", "0_4")},
	}
	stateful6 = ends(1000, planTasks(0, 6))
	// twoOwners run 0_0..0_5 caught up; n has joined empty.
	twoOwners = []PlanMember{
		{ID: "a", PrevActive: planTS("0_0", "0_1", "0_2"), Offsets: offsets("0_0=1000", "0_1=1000", "0_2=1000")},
		{ID: "b", PrevActive: planTS("0_3", "0_4", "0_5"), Offsets: offsets("0_3=1000", "0_4=1000", "0_5=1000")},
	}
)

func TestMakePlan(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   PlanInput
		// want is the exact plan (see describe) when the case pins it
		// down; nil means only the invariants and check run.
		want     map[string]string
		probe    bool
		warnings []string
		check    func(t *testing.T, in PlanInput, p Plan)
	}{
		{
			name: "zero members: empty plan",
			in:   PlanInput{Tasks: planTasks(0, 4), Ends: ends(10, planTasks(0, 4)), StandbyReplicas: 1},
			want: map[string]string{},
		},
		{
			name: "balance: 8 tasks over 3 members is 3/3/2",
			in:   PlanInput{Members: []PlanMember{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Tasks: planTasks(0, 8)},
			check: func(t *testing.T, _ PlanInput, p Plan) {
				if got := activeCounts(p); !slices.Equal(got, []int{2, 3, 3}) {
					t.Errorf("active counts %v, want [2 3 3]", got)
				}
			},
		},
		{
			name: "balance: 8 tasks over 4 members is 2 each",
			in:   PlanInput{Members: []PlanMember{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}, Tasks: planTasks(0, 8)},
			check: func(t *testing.T, _ PlanInput, p Plan) {
				if got := activeCounts(p); !slices.Equal(got, []int{2, 2, 2, 2}) {
					t.Errorf("active counts %v, want [2 2 2 2]", got)
				}
			},
		},
		{
			name: "balance: each sub-topology spreads over the members",
			in:   PlanInput{Members: []PlanMember{{ID: "a"}, {ID: "b"}}, Tasks: slices.Concat(planTasks(1, 2), planTasks(0, 2))},
			want: map[string]string{"a": "A[0_0 1_0] S[] W[]", "b": "A[0_1 1_1] S[] W[]"},
		},
		{
			name: "stickiness: same members keep their actives",
			in:   PlanInput{Members: sticky3, Tasks: planTasks(0, 8)},
			want: map[string]string{
				"a": "A[0_1 0_5 0_6] S[] W[]",
				"b": "A[0_0 0_3 0_7] S[] W[]",
				"c": "A[0_2 0_4] S[] W[]",
			},
		},
		{
			name: "stickiness: a fourth member joins and only two actives move",
			in:   PlanInput{Members: append(slices.Clone(sticky3), PlanMember{ID: "d"}), Tasks: planTasks(0, 8)},
			check: func(t *testing.T, in PlanInput, p Plan) {
				if got := activeCounts(p); !slices.Equal(got, []int{2, 2, 2, 2}) {
					t.Errorf("active counts %v, want [2 2 2 2]", got)
				}
				if n := moved(in, p); n != 2 {
					t.Errorf("%d actives moved, want 2: %v", n, describe(p))
				}
			},
		},
		{
			name: "stickiness: unknown previous tasks are ignored, a doubly claimed task goes to the lower ID",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "b", PrevActive: planTS("0_0", "9_9")},
					{ID: "a", PrevActive: planTS("0_0")},
				},
				Tasks: planTasks(0, 2),
			},
			want: map[string]string{"a": "A[0_0] S[] W[]", "b": "A[0_1] S[] W[]"},
		},
		{
			name: "members leaving: 3 to 2, everything reassigned and balanced",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a", PrevActive: planTS("0_0", "0_3", "0_6")},
					{ID: "b", PrevActive: planTS("0_1", "0_4")},
				},
				Tasks: planTasks(0, 7),
			},
			want: map[string]string{"a": "A[0_0 0_3 0_5 0_6] S[] W[]", "b": "A[0_1 0_2 0_4] S[] W[]"},
			check: func(t *testing.T, in PlanInput, p Plan) {
				if n := moved(in, p); n != 0 {
					t.Errorf("%d actives of remaining members moved, want 0", n)
				}
			},
		},
		{
			name: "standbys: never beside the active, spread by load",
			in: PlanInput{
				Members:         []PlanMember{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
				Tasks:           planTasks(0, 4),
				Ends:            ends(0, planTasks(0, 4)),
				StandbyReplicas: 1,
			},
			want: map[string]string{
				"a": "A[0_0] S[0_1] W[]",
				"b": "A[0_1] S[0_0] W[]",
				"c": "A[0_2] S[0_3] W[]",
				"d": "A[0_3] S[0_2] W[]",
			},
		},
		{
			name: "standbys: caught-up local state beats load, stateless tasks get none",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a", PrevActive: planTS("0_0"), Offsets: offsets("0_0=1000")},
					{ID: "b", PrevActive: planTS("0_1"), Offsets: offsets("0_1=1000")},
					{ID: "c", PrevActive: planTS("1_0"), Offsets: offsets("0_0=990", "0_1=995")},
				},
				Tasks:                 slices.Concat(planTasks(0, 2), planTasks(1, 1)),
				Ends:                  ends(1000, planTasks(0, 2)),
				StandbyReplicas:       1,
				AcceptableRecoveryLag: 100,
			},
			want: map[string]string{
				"a": "A[0_0] S[] W[]",
				"b": "A[0_1] S[] W[]",
				"c": "A[1_0] S[0_0 0_1] W[]",
			},
		},
		{
			// Everyone is caught up on the small changelogs: replicas go
			// by load, actives counted, so that a member that returns
			// gets its share (tasks 3, 3, 2) rather than none.
			name: "standbys: among caught-up members the least loaded, actives counted",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a", PrevActive: planTS("0_0", "0_1"), Offsets: offsets("0_0=100", "0_1=100", "0_2=100")},
					{ID: "b", PrevActive: planTS("0_2", "0_3"), Offsets: offsets("0_2=100", "0_3=100", "0_0=100", "0_1=100")},
					{ID: "c", Offsets: offsets("0_0=90", "0_3=95")},
				},
				Tasks:                 planTasks(0, 4),
				Ends:                  ends(100, planTasks(0, 4)),
				StandbyReplicas:       1,
				AcceptableRecoveryLag: 1000,
			},
			want: map[string]string{
				"a": "A[0_0 0_1] S[0_2] W[]",
				"b": "A[0_2] S[0_0 0_3] W[]",
				"c": "A[0_3] S[0_1] W[]",
			},
		},
		{
			name: "standbys: more requested than instances, one each and a warning per task",
			in: PlanInput{
				Members:         []PlanMember{{ID: "a"}, {ID: "b"}},
				Tasks:           planTasks(0, 2),
				Ends:            ends(0, planTasks(0, 2)),
				StandbyReplicas: 3,
			},
			want: map[string]string{"a": "A[0_0] S[0_1] W[]", "b": "A[0_1] S[0_0] W[]"},
			warnings: []string{
				"task 0_0: 3 standby replicas requested, 1 placed: no other instance has room",
				"task 0_1: 3 standby replicas requested, 1 placed: no other instance has room",
			},
		},
		{
			name: "rack spreading: the standby goes to the other zone, even past local state",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a1", Tags: zone("a"), PrevActive: planTS("0_0")},
					{ID: "a2", Tags: zone("a"), Offsets: offsets("0_0=100", "0_1=100")},
					{ID: "b1", Tags: zone("b"), PrevActive: planTS("0_1")},
					{ID: "b2", Tags: zone("b")},
				},
				Tasks:                 planTasks(0, 2),
				Ends:                  ends(100, planTasks(0, 2)),
				StandbyReplicas:       1,
				AcceptableRecoveryLag: 1000,
			},
			want: map[string]string{
				"a1": "A[0_0] S[] W[]",
				"a2": "A[] S[0_1] W[]",
				"b1": "A[0_1] S[] W[]",
				"b2": "A[] S[0_0] W[]",
			},
		},
		{
			name: "caught-up placement: a crashed member's actives go to its standbys, not to the empty member",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "b", PrevActive: planTS("0_2", "0_3"), Offsets: offsets("0_2=1000", "0_3=1000", "0_0=995")},
					{ID: "c", PrevActive: planTS("0_4", "0_5"), Offsets: offsets("0_4=1000", "0_5=1000", "0_1=998")},
					{ID: "d"},
				},
				Tasks:                 planTasks(0, 6),
				Ends:                  stateful6,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     2,
			},
			want: map[string]string{
				"b": "A[0_0 0_2 0_3] S[] W[]",
				"c": "A[0_1 0_4 0_5] S[] W[]",
				"d": "A[] S[] W[0_0 0_1]",
			},
			probe: true,
		},
		{
			name: "caught-up placement: a destination holding a standby needs no warm-up, probe stays",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "b", PrevActive: planTS("0_0"), Offsets: offsets("0_0=1000", "0_1=1000")},
					{ID: "c"},
					{ID: "d", Offsets: offsets("0_1=500")},
				},
				Tasks:                 planTasks(0, 3),
				Ends:                  ends(1000, planTasks(0, 3)),
				StandbyReplicas:       1,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     2,
			},
			// Balance sends 0_1 to d, the member with room and the most
			// state, but d is not caught up: the active goes to caught-up
			// b, and d's standby keeps catching up in place of a warm-up.
			want: map[string]string{
				"b": "A[0_0 0_1] S[0_2] W[]",
				"c": "A[0_2] S[] W[]",
				"d": "A[] S[0_0 0_1] W[]",
			},
			probe: true,
		},
		{
			name: "new empty member: actives stay on caught-up owners, warm-ups capped, probe",
			in: PlanInput{
				Members:               append(slices.Clone(twoOwners), PlanMember{ID: "n"}),
				Tasks:                 planTasks(0, 6),
				Ends:                  stateful6,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     1,
			},
			want: map[string]string{
				"a": "A[0_0 0_1 0_2] S[] W[]",
				"b": "A[0_3 0_4 0_5] S[] W[]",
				"n": "A[] S[] W[0_2]",
			},
			probe: true,
		},
		{
			name: "probing rebalance: one warm-up caught up, its active moves, the other warms up",
			in: PlanInput{
				Members:               append(slices.Clone(twoOwners), PlanMember{ID: "n", Offsets: offsets("0_2=995")}),
				Tasks:                 planTasks(0, 6),
				Ends:                  stateful6,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     1,
			},
			want: map[string]string{
				"a": "A[0_0 0_1] S[] W[]",
				"b": "A[0_3 0_4 0_5] S[] W[]",
				"n": "A[0_2] S[] W[0_5]",
			},
			probe: true,
		},
		{
			name: "probing rebalance: the new member is caught up and takes its balanced share",
			in: PlanInput{
				Members:               append(slices.Clone(twoOwners), PlanMember{ID: "n", Offsets: offsets("0_2=1000", "0_5=995")}),
				Tasks:                 planTasks(0, 6),
				Ends:                  stateful6,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     1,
			},
			want: map[string]string{
				"a": "A[0_0 0_1] S[] W[]",
				"b": "A[0_3 0_4] S[] W[]",
				"n": "A[0_2 0_5] S[] W[]",
			},
			check: func(t *testing.T, in PlanInput, p Plan) {
				in.Members = prevFrom(in, p)
				if again := MakePlan(in); again.Probe || !reflect.DeepEqual(describe(again), describe(p)) {
					t.Errorf("plan not stable on the next rebalance: %v, probe %v", describe(again), again.Probe)
				}
			},
		},
		{
			// Without shedding by catch-up, a would keep 0_0 (first in its
			// list) and give away 0_2, on which n is not caught up: the
			// probing rebalance would warm up again, forever.
			name: "probing rebalance: owners shed the tasks the warm-ups caught up on, whatever their order",
			in: PlanInput{
				Members:               append(slices.Clone(twoOwners), PlanMember{ID: "n", Offsets: offsets("0_0=1000", "0_3=995")}),
				Tasks:                 planTasks(0, 6),
				Ends:                  stateful6,
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     2,
			},
			want: map[string]string{
				"a": "A[0_1 0_2] S[] W[]",
				"b": "A[0_4 0_5] S[] W[]",
				"n": "A[0_0 0_3] S[] W[]",
			},
		},
		{
			name: "no one caught up: the active goes where the most state is, warm-up on the destination",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a", PrevActive: planTS("0_0", "0_1"), Offsets: offsets("0_0=1000", "0_1=200")},
					{ID: "b", PrevActive: planTS("0_2"), Offsets: offsets("0_2=1000", "0_1=900")},
					{ID: "c"},
				},
				Tasks:                 planTasks(0, 3),
				Ends:                  ends(1000, planTasks(0, 3)),
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     4,
			},
			want: map[string]string{
				"a": "A[0_0] S[] W[]",
				"b": "A[0_1 0_2] S[] W[]",
				"c": "A[] S[] W[0_1]",
			},
			probe: true,
		},
		{
			name: "no one caught up: a destination with as much state as any keeps the active",
			in: PlanInput{
				Members: []PlanMember{
					{ID: "a", Offsets: offsets("0_0=500")},
					{ID: "b", PrevActive: planTS("0_0"), Offsets: offsets("0_0=500")},
				},
				Tasks:                 planTasks(0, 1),
				Ends:                  ends(1000, planTasks(0, 1)),
				AcceptableRecoveryLag: 10,
				MaxWarmupReplicas:     4,
			},
			want: map[string]string{"a": "A[] S[] W[]", "b": "A[0_0] S[] W[]"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := MakePlan(tt.in)
			checkPlan(t, tt.in, p)
			if tt.want != nil && !reflect.DeepEqual(describe(p), tt.want) {
				t.Errorf("plan\n got %v\nwant %v", describe(p), tt.want)
			}
			if p.Probe != tt.probe {
				t.Errorf("probe %v, want %v", p.Probe, tt.probe)
			}
			if !slices.Equal(p.Warnings, tt.warnings) {
				t.Errorf("warnings %q, want %q", p.Warnings, tt.warnings)
			}
			if tt.check != nil {
				tt.check(t, tt.in, p)
			}
		})
	}
}

func TestLag(t *testing.T) {
	task, stateless := planTS("0_0")[0], planTS("1_0")[0]
	in := PlanInput{Ends: map[Task]int64{task: 100}}
	for _, tt := range []struct {
		name string
		m    PlanMember
		task Task
		want int64
	}{
		{"stateless task: 0", PlanMember{Offsets: offsets("1_0=5")}, stateless, 0},
		{"absent offset: the end sum", PlanMember{}, task, 100},
		{"partial state: end minus offset", PlanMember{Offsets: offsets("0_0=60")}, task, 40},
		{"at the end: 0", PlanMember{Offsets: offsets("0_0=100")}, task, 0},
		{"offset past the end: 0, never negative", PlanMember{Offsets: offsets("0_0=150")}, task, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := in.Lag(tt.m, tt.task); got != tt.want {
				t.Errorf("Lag = %d, want %d", got, tt.want)
			}
		})
	}
}
