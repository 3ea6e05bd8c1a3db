package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// TestPlanSimulation walks a group with one standby per task through the
// rebalances it meets in its life, at up to 1,000 members and 10,000
// tasks, and checks that each plan moves the fewest actives the
// high-availability rules allow: an active moves only when balance needs
// it and only to a member caught up on it (Kafka Streams'
// HighAvailabilityTaskAssignor), so
//
//   - initial placement: no member has state, every active count is the
//     floor or ceiling of tasks/members, each task gets its standby, and no
//     probe is needed (no member is better placed than another);
//   - steady state: a settled group planned again keeps every active and
//     every replica where it is;
//   - one member leaving: the survivors keep all their actives, and each
//     of the leaver's goes to the member that held its (caught-up)
//     standby, so exactly the leaver's actives move and none restores;
//   - one member joining without state: no active moves, since the joiner
//     is caught up on nothing; it gets warm-ups instead, as many as its
//     balanced share up to MaxWarmupReplicas, and a probing rebalance is
//     asked for;
//   - the probing rebalances that follow, each run once the warm-ups have
//     caught up: each moves exactly the actives the joiner has caught up
//     on, and once none is asked for the joiner holds its balanced share,
//     so the join moved tasks/members actives in all, the minimum.
//
// Timing is the benchmark's business (BenchmarkMakePlan); this test only
// checks the plans.
func TestPlanSimulation(t *testing.T) {
	type phase struct {
		name string
		// in builds the rebalance's input from the settled group and
		// the plan it runs.
		in    func(group PlanInput, base Plan) PlanInput
		check func(t *testing.T, group PlanInput, base Plan, in PlanInput, p Plan)
	}
	phases := []phase{
		{
			name: "initial placement",
			in: func(group PlanInput, _ Plan) PlanInput {
				return cluster(len(group.Members), len(group.Tasks), group.StandbyReplicas)
			},
			check: func(t *testing.T, _ PlanInput, _ Plan, in PlanInput, p Plan) {
				checkBalanced(t, in, p)
				if p.Probe || warmups(p) != 0 {
					t.Errorf("probe %v, %d warm-ups; want none, no member has state", p.Probe, warmups(p))
				}
			},
		},
		{
			name: "steady state",
			in:   func(group PlanInput, _ Plan) PlanInput { return group },
			check: func(t *testing.T, _ PlanInput, base Plan, in PlanInput, p Plan) {
				if n := moved(in, p); n != 0 {
					t.Errorf("%d actives moved, want 0", n)
				}
				if p.Probe || !reflect.DeepEqual(describe(p), describe(base)) {
					t.Errorf("replicas moved (probe %v)", p.Probe)
				}
			},
		},
		{
			name: "one member leaving",
			in: func(group PlanInput, _ Plan) PlanInput {
				n := len(group.Members)
				group.Members = slices.Delete(slices.Clone(group.Members), n/2, n/2+1)
				return group
			},
			check: func(t *testing.T, group PlanInput, base Plan, in PlanInput, p Plan) {
				checkBalanced(t, in, p)
				leaver := group.Members[len(group.Members)/2]
				if n := moved(in, p); n != 0 {
					t.Errorf("%d actives of the survivors moved, want 0", n)
				}
				owner := owners(p)
				for _, task := range leaver.PrevActive {
					if !slices.Contains(base.Members[owner[task]].Standby, task) {
						t.Errorf("%s's task %s went to %s, which held no standby of it", leaver.ID, task, owner[task])
					}
				}
				if p.Probe || warmups(p) != 0 {
					t.Errorf("probe %v, %d warm-ups; want none, every orphan went to its caught-up standby", p.Probe, warmups(p))
				}
			},
		},
		{
			name: "one member joining",
			in:   joinEmpty,
			check: func(t *testing.T, group PlanInput, base Plan, in PlanInput, p Plan) {
				checkPlan(t, in, p)
				if n := moved(in, p); n != 0 {
					t.Errorf("%d actives moved to a member not caught up, want 0", n)
				}
				joiner := p.Members["new"]
				if len(joiner.Active) != 0 || !p.Probe {
					t.Errorf("joiner: %d actives, probe %v; want 0, true", len(joiner.Active), p.Probe)
				}
				// The joiner restores its share of actives as warm-ups, up
				// to the cap, or as standbys: a standby on an active's
				// balanced destination warms it up and takes no warm-up.
				share := len(in.Tasks) / len(in.Members) // the joiner sorts last: it gets the floor
				if got, want := len(joiner.Warmup)+len(joiner.Standby), min(share, in.MaxWarmupReplicas); got < want {
					t.Errorf("joiner: %d warm-ups and %d standbys, want at least %d in all", len(joiner.Warmup), len(joiner.Standby), want)
				}
				// Replicas move only to the joiner: a caught-up standby
				// stays unless its member holds more than pairCap of one
				// owner's standbys, which a join lowers at small sizes.
				for id, mp := range p.Members {
					if id == "new" {
						continue
					}
					for _, task := range slices.Concat(mp.Standby, mp.Warmup) {
						if !slices.Contains(base.Members[id].Standby, task) {
							t.Errorf("%s got a replica of %s, which it did not hold", id, task)
						}
					}
				}
			},
		},
		{
			name: "probing rebalances after the join",
			in:   joinEmpty,
			check: func(t *testing.T, _ PlanInput, _ Plan, in PlanInput, p Plan) {
				share := len(in.Tasks) / len(in.Members)
				total := 0
				// Each round moves at least one active (the warm-ups cover
				// at least one of the joiner's share), so the share takes
				// at most share rounds after the join's own.
				for round := 1; p.Probe; round++ {
					if round > share {
						t.Fatalf("still probing after %d rounds", round-1)
					}
					before := p.Members["new"]
					in = caughtUp(in, p)
					// checkPlan replans every plan it checks; under -race
					// that doubled this phase at 1,000 members, so only
					// the last round's plan gets it (checkBalanced, below).
					p = MakePlan(in)
					n := moved(in, p)
					total += n
					// Every active that moved went to the joiner, which
					// was caught up on it, and the joiner kept its own.
					now := p.Members["new"].Active
					gained := 0
					for _, task := range now {
						switch {
						case slices.Contains(before.Active, task):
						case slices.Contains(before.Warmup, task), slices.Contains(before.Standby, task):
							gained++
						default:
							t.Errorf("round %d: the joiner runs %s, which it had not restored", round, task)
						}
					}
					if n == 0 || n != gained || len(now) != len(before.Active)+gained {
						t.Fatalf("round %d: %d actives moved, the joiner gained %d and runs %d (ran %d); want every move to the joiner, at least one",
							round, n, gained, len(now), len(before.Active))
					}
					t.Logf("round %d: the joiner took %d actives", round, n)
				}
				checkBalanced(t, in, p)
				if got := len(p.Members["new"].Active); total != share || got != share {
					t.Errorf("the join moved %d actives, the joiner runs %d; want %d each", total, got, share)
				}
			},
		},
	}
	for _, sz := range [][2]int{{10, 100}, {100, 1000}, {1000, 10000}} {
		n, tasks := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", n, tasks), func(t *testing.T) {
			skipLarge(t, n)
			group, base := steady(n, tasks, 1)
			group = settle(group, base)
			for _, ph := range phases {
				t.Run(ph.name, func(t *testing.T) {
					in := ph.in(group, base)
					p := MakePlan(in)
					ph.check(t, group, base, in, p)
				})
			}
		})
	}
}

// joinEmpty adds a member without state to the settled group. Its ID sorts
// after cluster's, so that balance gives it the floor of tasks/members.
func joinEmpty(group PlanInput, _ Plan) PlanInput {
	group.Members = append(slices.Clone(group.Members), PlanMember{ID: "new"})
	return group
}

// caughtUp is settle with the warm-ups of p caught up too: the input of
// the probing rebalance once they have restored.
func caughtUp(in PlanInput, p Plan) PlanInput {
	out := settle(in, p)
	for _, m := range out.Members {
		for _, t := range p.Members[m.ID].Warmup {
			m.Offsets[t] = in.Ends[t]
		}
	}
	return out
}

// warmups counts the warm-up replicas of p.
func warmups(p Plan) int {
	n := 0
	for mp := range maps.Values(p.Members) {
		n += len(mp.Warmup)
	}
	return n
}

// checkBalanced is checkPlan, and every task with its standbys and every
// member with the floor or the ceiling of tasks/members actives.
func checkBalanced(t *testing.T, in PlanInput, p Plan) {
	t.Helper()
	checkPlan(t, in, p)
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %q, want none", p.Warnings)
	}
	floor := len(in.Tasks) / len(in.Members)
	ceil := (len(in.Tasks) + len(in.Members) - 1) / len(in.Members)
	if c := activeCounts(p); c[0] < floor || c[len(c)-1] > ceil {
		t.Errorf("active counts from %d to %d, want %d..%d", c[0], c[len(c)-1], floor, ceil)
	}
}
