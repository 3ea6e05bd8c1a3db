package assign

import (
	"fmt"
	"slices"
)

// placeStandbys is rule 3: StandbyReplicas standbys per stateful task on
// distinct members other than the active owner, spread over racks first,
// then kept where they are caught up, then spread over the members.
//
// Spreading is what makes a crash cheap. Placed by load alone, with ties
// in ID order, every standby of one member's actives landed on one other
// member, which on a crash took all of its actives at once and held no
// standbys until the probing rebalance. So each member's standbys are
// spread over the others: a member's tasks are placed one after another,
// each standby on the candidate holding the fewest standbys of that
// member's actives so far, then the least loaded. Kafka Streams spreads by
// load alone with a priority queue over all clients; counting pairs
// spreads even when loads are equal, which is the common case.
//
// Stickiness: a standby that is caught up stays where it is, since moving
// it costs a full restore during which the task has one copy fewer, as
// long as its member holds fewer than pairCap of the owner's standbys.
// Only past the cap does spreading win, so a layout this rule made stays
// as it is on the next rebalance, while one that put more on one member
// (an older plan, or a member that joined) moves the excess only.
//
// Among members not caught up, the balanced destination of an active that
// rule 2 kept elsewhere comes first, even past the cap: a standby there
// warms it up, and no warm-up is needed. A caught-up member still comes
// before it, so that the task keeps a hot standby while the destination
// restores (with a warm-up, rule 4).
func (p *planner) placeStandbys(moves []move) {
	want := max(p.in.StandbyReplicas, 0)
	if want == 0 || len(p.members) == 0 {
		return
	}
	s := p.newSpreader(want)
	for _, mv := range moves {
		s.dest[mv.task] = p.index[mv.dest]
	}
	var short []Task
	for oi := range p.members {
		for _, t := range s.activesOf[oi] {
			if !s.place(t, oi) {
				short = append(short, t)
			}
		}
		clear(s.pairs)
	}
	slices.SortFunc(short, compareTasks)
	for _, t := range short {
		p.plan.Warnings = append(p.plan.Warnings, fmt.Sprintf(
			"task %s: %d standby replicas requested, %d placed: no other instance has room",
			t, want, len(p.standby[t])))
	}
}

// pairCap is the most standbys of one owner's actives that one other
// member should hold: the owner's stateful actives times the standbys
// each wants, shared evenly over the other members. The greedy spread
// never exceeds it without rack tags (a member below it always exists).
func pairCap(actives, want, members int) int {
	if members < 2 {
		return 0
	}
	return (actives*want + members - 2) / (members - 1)
}

// spreader holds, by member index, what the standby placement compares,
// so that it reads slices rather than maps: at 1,000 members and 10,000
// tasks it compares 20 million candidates.
type spreader struct {
	p         *planner
	want      int
	tagged    bool
	activesOf [][]Task // stateful actives per owner, in task order
	state     map[Task][]int
	dest      map[Task]int // balanced destination of a moved active
	load      []int        // actives, standbys and warm-ups per member
	pairs     []int        // standbys of the current owner's actives per member
	lag       []int64      // the current task's lag per member, -1 when no state
	held      []bool       // members holding the current task
	// tags holds each member's rack tags as ids of (key, value) pairs, and
	// holderTag marks the pairs the current task's holders carry, so that
	// comparing a candidate's tags is a few slice reads. Comparing the tag
	// maps themselves took 10 s at 1,000 tagged members and 10,000 tasks.
	tags      [][]int
	holderTag []bool
}

func (p *planner) newSpreader(want int) *spreader {
	n := len(p.members)
	s := &spreader{
		p: p, want: want,
		tagged:    slices.ContainsFunc(p.members, func(m PlanMember) bool { return len(m.Tags) > 0 }),
		activesOf: make([][]Task, n),
		state:     p.state,
		load:      make([]int, n),
		pairs:     make([]int, n),
		lag:       make([]int64, n),
		held:      make([]bool, n),
	}
	s.dest = make(map[Task]int)
	if s.tagged {
		s.internTags()
	}
	for i := range s.lag {
		s.lag[i] = -1
	}
	for _, t := range p.tasks {
		i := p.index[p.owner[t]]
		s.load[i]++
		if p.stateful(t) {
			s.activesOf[i] = append(s.activesOf[i], t)
		}
	}
	return s
}

// internTags numbers every distinct (key, value) tag pair and lists each
// member's pairs. Two members share a tag key's value exactly when they
// carry the same pair, since a member has one value per key.
func (s *spreader) internTags() {
	type pair struct{ k, v string }
	ids := make(map[pair]int)
	s.tags = make([][]int, len(s.p.members))
	for i, m := range s.p.members {
		for k, v := range m.Tags {
			id, ok := ids[pair{k, v}]
			if !ok {
				id = len(ids)
				ids[pair{k, v}] = id
			}
			s.tags[i] = append(s.tags[i], id)
		}
	}
	s.holderTag = make([]bool, len(ids))
}

// stateIndex lists, per task, the indexes of the members that report
// state for it, so that a lookup need not visit every member.
func (p *planner) stateIndex() map[Task][]int {
	out := make(map[Task][]int)
	for i, m := range p.members {
		for t := range m.Offsets {
			if p.stateful(t) {
				out[t] = append(out[t], i)
			}
		}
	}
	return out
}

// place puts the standbys of t, active on member oi, and reports whether
// all wanted ones found a member.
func (s *spreader) place(t Task, oi int) bool {
	p := s.p
	for _, i := range s.state[t] {
		s.lag[i] = p.in.Lag(p.members[i], t)
	}
	defer func() {
		for _, i := range s.state[t] {
			s.lag[i] = -1
		}
	}()
	holders := []int{oi}
	limit := pairCap(len(s.activesOf[oi]), s.want, len(p.members))
	for len(holders) <= s.want {
		for _, h := range holders {
			s.held[h] = true
		}
		best := s.best(t, holders, limit)
		for _, h := range holders {
			s.held[h] = false
		}
		if best < 0 {
			return false
		}
		holders = append(holders, best)
		p.standby[t] = append(p.standby[t], p.members[best].ID)
		s.load[best]++
		s.pairs[best]++
	}
	return true
}

// best returns the index of the best member for one more standby of t, or
// -1 when every member holds t already.
func (s *spreader) best(t Task, holders []int, limit int) int {
	if s.tagged {
		for _, h := range holders {
			for _, id := range s.tags[h] {
				s.holderTag[id] = true
			}
		}
		defer func() {
			for _, h := range holders {
				for _, id := range s.tags[h] {
					s.holderTag[id] = false
				}
			}
		}()
	}
	end := s.p.in.Ends[t]
	dest, moved := s.dest[t]
	best, bestKey := -1, standbyKey{}
	for i := range s.p.members {
		if s.held[i] {
			continue
		}
		isDest := moved && i == dest
		k := standbyKey{
			elsewhere: !isDest, over: s.pairs[i] >= limit && !isDest,
			pairs: s.pairs[i], load: s.load[i], lag: end,
		}
		if s.lag[i] >= 0 {
			k.lag = s.lag[i]
		}
		k.behind = k.lag > s.p.in.AcceptableRecoveryLag
		if s.tagged {
			k.shared = s.sharedTags(i)
		}
		if best < 0 || k.less(bestKey) {
			best, bestKey = i, k
		}
	}
	return best
}

// standbyKey ranks standby candidates, lowest first: fewer tags shared
// with the task's holders (a rack failure then takes fewer copies); below
// the owner's pair cap (the balanced destination of a task rule 2 moved
// is never above it); caught up on the task (the standby is hot at once,
// and a caught-up standby stays); the task's balanced destination if rule
// 2 moved it; fewer of the owner's standbys
// (spread); lower load, actives included, so that a member that joins or
// returns gets its share of replicas; lower lag (the standby reuses more
// local state). Equal candidates keep ID order.
type standbyKey struct {
	shared                  int
	elsewhere, over, behind bool
	pairs, load             int
	lag                     int64
}

func (a standbyKey) less(b standbyKey) bool {
	switch {
	case a.shared != b.shared:
		return a.shared < b.shared
	case a.over != b.over:
		return !a.over
	case a.behind != b.behind:
		return !a.behind
	case a.elsewhere != b.elsewhere:
		return !a.elsewhere
	case a.pairs != b.pairs:
		return a.pairs < b.pairs
	case a.load != b.load:
		return a.load < b.load
	}
	return a.lag < b.lag
}

// sharedTags counts the tag keys on which member i has the value of one of
// the current task's holders (those marked in holderTag).
func (s *spreader) sharedTags(i int) int {
	n := 0
	for _, id := range s.tags[i] {
		if s.holderTag[id] {
			n++
		}
	}
	return n
}
