package assign

import "testing"

// TestPlanMovesOrphansToTheirCaughtUpReplicas pins down where the tasks
// of a member that left go: a stateful task goes to the member holding its
// caught-up standby, even when its changelog is short enough (137 records,
// under the acceptable lag) that a member without state counts as caught
// up too, and even when stateless tasks, which may go anywhere, come
// first in task order or fill the standby holder's slots.
func TestPlanMovesOrphansToTheirCaughtUpReplicas(t *testing.T) {
	stateful := planTasks(1, 4)
	cases := []struct {
		name    string
		members []PlanMember
		// want: the member each task must land on.
		want map[string]string
	}{
		{
			// The failover: the leaver ran 0_0, 0_3 and 1_1;
			// B holds 1_1's standby with lag 0. Task order places
			// 0_0 and 0_3 first, which filled B's last slot and left
			// 1_1 to C, which restored all 137 records.
			name: "stateless orphans first in task order",
			members: []PlanMember{
				{ID: "B", PrevActive: planTS("0_1", "1_0", "1_3"), Offsets: offsets("1_0=137", "1_3=137", "1_1=137", "1_2=137")},
				{ID: "C", PrevActive: planTS("0_2", "1_2"), Offsets: offsets("1_2=137", "1_0=137", "1_3=137")},
			},
			want: map[string]string{"1_1": "B"},
		},
		{
			// B's slots are full with its previous actives, one of
			// them stateless: that one moves, rather than 1_1 being
			// restored in full on C.
			name: "standby holder full with a stateless active",
			members: []PlanMember{
				{ID: "B", PrevActive: planTS("0_0", "0_1", "1_0", "1_3"), Offsets: offsets("1_0=137", "1_3=137", "1_1=137")},
				{ID: "C", PrevActive: planTS("0_2", "0_3"), Offsets: offsets("1_0=137", "1_3=137")},
			},
			want: map[string]string{"1_1": "B", "1_2": "C"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := PlanInput{
				Members:               tc.members,
				Tasks:                 append(planTasks(0, 4), stateful...),
				Ends:                  ends(137, stateful),
				StandbyReplicas:       1,
				AcceptableRecoveryLag: 10_000,
				MaxWarmupReplicas:     2,
			}
			p := MakePlan(in)
			checkPlan(t, in, p)
			owner := make(map[string]string)
			for id, mp := range p.Members {
				for _, task := range mp.Active {
					owner[task.String()] = id
				}
			}
			for task, want := range tc.want {
				if owner[task] != want {
					t.Errorf("task %s went to %q, want %q, the member caught up on it; plan %v", task, owner[task], want, describe(p))
				}
			}
		})
	}
}
