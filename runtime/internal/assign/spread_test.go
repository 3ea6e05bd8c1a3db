package assign

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// cluster is a group of n members running tasks stateful tasks over two
// sub-topologies, every changelog 100,000 records long, so that a member
// without state is never caught up.
func cluster(n, tasks, standbys int) PlanInput {
	in := PlanInput{
		Tasks:                 slices.Concat(planTasks(0, int32(tasks/2)), planTasks(1, int32(tasks-tasks/2))),
		StandbyReplicas:       standbys,
		AcceptableRecoveryLag: 10_000,
		MaxWarmupReplicas:     2,
	}
	in.Ends = ends(100_000, in.Tasks)
	for i := range n {
		in.Members = append(in.Members, PlanMember{ID: fmt.Sprintf("m%04d", i)})
	}
	return in
}

// settle returns the input of the rebalance after p: every member's
// previous actives are its actives in p, and it is caught up on every task
// it held in p as active or standby.
func settle(in PlanInput, p Plan) PlanInput {
	in.Members = prevFrom(in, p)
	for i, m := range in.Members {
		mp := p.Members[m.ID]
		m.Offsets = make(map[Task]int64)
		for _, t := range slices.Concat(mp.Active, mp.Standby) {
			m.Offsets[t] = in.Ends[t]
		}
		in.Members[i] = m
	}
	return in
}

// steady plans n members from scratch, then once more with the state the
// first plan left: the layout a group runs in once its replicas caught up.
func steady(n, tasks, standbys int) (PlanInput, Plan) {
	in := settle(cluster(n, tasks, standbys), MakePlan(cluster(n, tasks, standbys)))
	return in, MakePlan(in)
}

// pairsOf counts, per member, how many of its actives' standbys each
// other member holds.
func pairsOf(p Plan) map[string]map[string]int {
	owner := owners(p)
	pairs := make(map[string]map[string]int)
	for id, mp := range p.Members {
		for _, t := range mp.Standby {
			o := owner[t]
			if pairs[o] == nil {
				pairs[o] = make(map[string]int)
			}
			pairs[o][id]++
		}
	}
	return pairs
}

// owners maps every task to the member running it in p.
func owners(p Plan) map[Task]string {
	out := make(map[Task]string)
	for id, mp := range p.Members {
		for _, t := range mp.Active {
			out[t] = id
		}
	}
	return out
}

// loads returns the fewest and the most tasks, actives and standbys, one
// member holds.
func loads(p Plan) (lo, hi int) {
	lo = -1
	for _, mp := range p.Members {
		n := len(mp.Active) + len(mp.Standby)
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return lo, hi
}

// spreadSizes are the group sizes (members, tasks) the spread tests run.
// The largest plans in about 0.3 s, and takes a few seconds per case with
// the checks; -short leaves it out.
var spreadSizes = [][2]int{{3, 12}, {4, 40}, {10, 100}, {100, 1000}, {1000, 10000}}

// skipLarge skips a group of 1,000 members under -short.
func skipLarge(t *testing.T, n int) {
	if n >= 1000 && testing.Short() {
		t.Skip("1,000 members: runs without -short")
	}
}

// TestStandbySpread pins down that a settled group spreads each member's
// standbys: with a actives, s standbys each and n members, the standbys of
// one member's actives lie on at least min(n-1, a*s) members, and no other
// member holds more than pairCap, ceil(a*s/(n-1)), of them. With one
// standby that is within ceil(a/(n-1)); with two it cannot be less (at 3
// members both others hold every task's standby). Spreading costs some
// balance: the members' actives plus standbys differ by at most s+1 (they
// differ by 2 with one standby, 3 with two, at these sizes). The next
// rebalance keeps every caught-up standby.
func TestStandbySpread(t *testing.T) {
	for _, sz := range spreadSizes {
		for _, s := range []int{1, 2} {
			n, tasks := sz[0], sz[1]
			t.Run(fmt.Sprintf("%dx%d/standbys=%d", n, tasks, s), func(t *testing.T) {
				skipLarge(t, n)
				in, p := steady(n, tasks, s)
				checkPlan(t, in, p)
				pairs := pairsOf(p)
				fewest, most := n, 0
				for id, mp := range p.Members {
					a := len(mp.Active)
					fewest = min(fewest, len(pairs[id]))
					if got, want := len(pairs[id]), min(n-1, a*s); got < want {
						t.Errorf("%s: standbys of its %d actives on %d members, want at least %d", id, a, got, want)
					}
					for other, k := range pairs[id] {
						most = max(most, k)
						if limit := pairCap(a, s, n); k > limit {
							t.Errorf("%s holds %d of %s's %d actives' standbys, want at most %d", other, k, id, a, limit)
						}
					}
				}
				lo, hi := loads(p)
				t.Logf("fewest members holding one member's standbys %d, most of one member's on another %d, tasks per member %d..%d", fewest, most, lo, hi)
				if hi-lo > s+1 {
					t.Errorf("actives and standbys per member from %d to %d, want a spread of at most %d", lo, hi, s+1)
				}
				next := MakePlan(settle(in, p))
				if !reflect.DeepEqual(describe(next), describe(p)) || next.Probe {
					t.Errorf("the next rebalance moved replicas (probe %v)", next.Probe)
				}
			})
		}
	}
}

// TestFailoverSpread removes one member of a settled group and re-plans,
// as the rebalance after a crash does: each of the dead member's stateful
// actives goes to a member that held its standby, none needs a probing
// rebalance, and no survivor gains more than ceil(a/(n-1))+1 actives,
// where a is the number the dead member ran.
func TestFailoverSpread(t *testing.T) {
	for _, sz := range spreadSizes {
		for _, s := range []int{1, 2} {
			n, tasks := sz[0], sz[1]
			t.Run(fmt.Sprintf("%dx%d/standbys=%d", n, tasks, s), func(t *testing.T) {
				skipLarge(t, n)
				in, p := steady(n, tasks, s)
				in = settle(in, p)
				dead := in.Members[n/2]
				in.Members = slices.Delete(slices.Clone(in.Members), n/2, n/2+1)
				after := MakePlan(in)
				checkPlan(t, in, after)
				if after.Probe {
					t.Errorf("probe after the crash: some active went where it is not caught up")
				}
				a := len(dead.PrevActive)
				limit, most := (a+n-2)/(n-1)+1, 0
				for id, mp := range after.Members {
					gain := len(mp.Active) - len(p.Members[id].Active)
					most = max(most, gain)
					if gain > limit {
						t.Errorf("%s gained %d actives of %s's %d, want at most %d", id, gain, dead.ID, a, limit)
					}
				}
				t.Logf("%s ran %d actives; the most one survivor gained: %d", dead.ID, a, most)
				owner := owners(after)
				for _, task := range dead.PrevActive {
					if !slices.Contains(p.Members[owner[task]].Standby, task) {
						t.Errorf("task %s went to %s, which held no standby of it", task, owner[task])
					}
				}
			})
		}
	}
}

// BenchmarkMakePlan plans groups of up to 1,000 members running 10,000
// tasks: from scratch (no member has state), settled (every replica caught
// up, the common rebalance), after a member crashed, after a member without
// state joined, and settled with the members tagged over three zones (rack
// tags make every standby candidate compare tags). The leader plans every
// rebalance of the group, so each case reports s/plan against the target
// of under 1 s at 1,000 x 10,000.
func BenchmarkMakePlan(b *testing.B) {
	for _, sz := range [][3]int{{10, 100, 1}, {100, 1000, 2}, {1000, 10000, 2}} {
		fresh := cluster(sz[0], sz[1], sz[2])
		settled := settle(fresh, MakePlan(fresh))
		crashed := settled
		crashed.Members = slices.Delete(slices.Clone(settled.Members), sz[0]/2, sz[0]/2+1)
		joined := settled
		joined.Members = append(slices.Clone(settled.Members), PlanMember{ID: "new"})
		racks := cluster(sz[0], sz[1], sz[2])
		for i := range racks.Members {
			racks.Members[i].Tags = zone(fmt.Sprint(i % 3))
		}
		racks = settle(racks, MakePlan(racks))
		for _, c := range []struct {
			name string
			in   PlanInput
		}{{"fresh", fresh}, {"settled", settled}, {"crashed", crashed}, {"joined", joined}, {"racks", racks}} {
			b.Run(fmt.Sprintf("%dx%d/standbys=%d/%s", sz[0], sz[1], sz[2], c.name), func(b *testing.B) {
				for b.Loop() {
					MakePlan(c.in)
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
			})
		}
	}
}

// TestStandbySpreadKeepsCaughtUpStandbys starts from the layout the
// assignor made before it spread standbys: every standby of member i's
// actives on member i+1, caught up. A moved standby restores in full, so
// the rebalance keeps pairCap of them where they are and moves only the
// excess, onto the other members.
func TestStandbySpreadKeepsCaughtUpStandbys(t *testing.T) {
	for _, sz := range [][2]int{{4, 40}, {10, 100}, {100, 1000}} {
		n, tasks := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", n, tasks), func(t *testing.T) {
			in, p := steady(n, tasks, 1)
			in = settle(in, p)
			partner := make(map[string]string)
			for i, m := range in.Members {
				next := &in.Members[(i+1)%n]
				partner[m.ID] = next.ID
				next.Offsets = make(map[Task]int64)
				for _, task := range slices.Concat(next.PrevActive, m.PrevActive) {
					next.Offsets[task] = in.Ends[task]
				}
			}
			after := MakePlan(in)
			checkPlan(t, in, after)
			if n := moved(in, after); n != 0 || after.Probe {
				t.Errorf("%d actives moved, probe %v; want none", n, after.Probe)
			}
			pairs := pairsOf(after)
			for _, m := range in.Members {
				limit := pairCap(len(m.PrevActive), 1, n)
				if got := pairs[m.ID][partner[m.ID]]; got != limit {
					t.Errorf("%s kept %d of %s's caught-up standbys, want %d (pairCap)", partner[m.ID], got, m.ID, limit)
				}
				for other, k := range pairs[m.ID] {
					if k > limit {
						t.Errorf("%s holds %d of %s's standbys, want at most %d", other, k, m.ID, limit)
					}
				}
			}
		})
	}
}

// TestStandbySpreadWithinRacks pins down that rack tags come before
// spreading: with two zones of three members, every standby sits in the
// zone its active is not in, spread over that zone's three members (at
// most ceil(4/3) = 2 of one member's 4 actives' standbys on one member).
func TestStandbySpreadWithinRacks(t *testing.T) {
	in := cluster(6, 24, 1)
	for i := range in.Members {
		in.Members[i].Tags = zone(fmt.Sprint(i % 2))
	}
	p := MakePlan(in)
	checkPlan(t, in, p)
	zoneOf := make(map[string]string)
	for _, m := range in.Members {
		zoneOf[m.ID] = m.Tags["zone"]
	}
	for id, holders := range pairsOf(p) {
		if len(holders) != 3 {
			t.Errorf("%s's standbys on %d members %v, want the 3 of the other zone", id, len(holders), holders)
		}
		for other, k := range holders {
			if zoneOf[other] == zoneOf[id] {
				t.Errorf("%s holds %d standbys of %s, in its own zone", other, k, id)
			}
			if k > 2 {
				t.Errorf("%s holds %d of %s's standbys, want at most 2", other, k, id)
			}
		}
	}
}
