package assign

import (
	"cmp"
	"slices"
)

// PlanInput is everything the group leader knows when it assigns.
type PlanInput struct {
	Members []PlanMember
	// Tasks are all tasks of the topology.
	Tasks []Task
	// Ends holds, for every stateful task (one with changelogs), the sum of
	// the end offsets of its changelog partitions. A task not in Ends is
	// stateless: every member is caught up on it and it gets no standbys.
	Ends                  map[Task]int64
	StandbyReplicas       int
	AcceptableRecoveryLag int64
	MaxWarmupReplicas     int
}

// PlanMember is one group member (one instance).
type PlanMember struct {
	ID string
	// PrevActive are the tasks the member ran actively before this rebalance.
	PrevActive []Task
	// Offsets holds, per task whose state the member has locally (active,
	// standby, warm-up or just a state dir left from before), the sum of its
	// stores' changelog offsets (the next offset to apply). A stateful task
	// absent here means no local state: lag = the task's end sum.
	Offsets map[Task]int64
	// Tags are rack / zone tags, e.g. {"zone": "eu-1a"}; may be nil.
	Tags map[string]string
}

// MemberPlan is what one member runs after the rebalance. A member holds
// at most one of the three roles for any task.
type MemberPlan struct {
	Active, Standby, Warmup []Task // each sorted
}

// Plan is the assignment of every task to the members.
type Plan struct {
	Members map[string]*MemberPlan // one entry per member, even if empty
	// Probe is true when a follow-up probing rebalance is needed: some
	// active was placed away from its balanced destination because that
	// destination was not caught up (a warm-up or standby there is
	// catching up).
	Probe bool
	// Warnings says what could not be done, one line per task that got
	// fewer standbys than requested.
	Warnings []string
}

// Lag returns how many changelog records member m lacks of task t (0 for
// stateless tasks, never negative). Offsets past the end, which a member
// reports when a changelog was truncated or recreated, count as caught up
// rather than as negative lag, which would rank such a member above one
// that is exactly at the end.
func (in PlanInput) Lag(m PlanMember, t Task) int64 {
	end, stateful := in.Ends[t]
	if !stateful {
		return 0
	}
	return max(end-m.Offsets[t], 0) // absent: offset 0, lag the whole end
}

// planner carries the assignment while MakePlan builds it in steps.
type planner struct {
	in      PlanInput
	members []PlanMember // sorted by ID, IDs unique
	tasks   []Task       // sorted, unique
	owner   map[Task]string
	actives []int // active tasks per member, by index in members
	index   map[string]int
	lagBuf  []int64 // see lags
	standby map[Task][]string
	warmup  map[Task]string
	state   map[Task][]int // see stateIndex
	plan    Plan
}

// move records an active that left its balanced destination dest.
type move struct {
	task Task
	dest string
}

// MakePlan assigns actives, standbys and warm-up replicas, as Kafka
// Streams' HighAvailabilityTaskAssignor does. Actives are first placed
// balanced and sticky; an active whose balanced destination has too little
// state then stays on (or goes to) an instance that can run it at once,
// while the destination warms up, so that a rebalance never makes a task
// unavailable for a long restore. A later probing rebalance, once the
// warm-up has caught up, moves the active where balance wants it.
//
// MakePlan is pure so that every rule can be pinned down by a table test:
// members are visited by ID and tasks in (sub-topology, partition) order,
// never in map order, so the same input gives the same plan. Of members
// sharing an ID, the first is kept.
func MakePlan(in PlanInput) Plan {
	p := newPlanner(in)
	if len(p.members) == 0 {
		return p.plan
	}
	p.placeBalanced()
	p.swapToReplicas()
	moves := p.placeCaughtUp()
	p.placeStandbys(moves)
	p.placeWarmups(moves)
	p.fill()
	return p.plan
}

func newPlanner(in PlanInput) *planner {
	members := slices.Clone(in.Members)
	slices.SortStableFunc(members, func(a, b PlanMember) int { return cmp.Compare(a.ID, b.ID) })
	members = slices.CompactFunc(members, func(a, b PlanMember) bool { return a.ID == b.ID })
	tasks := slices.Clone(in.Tasks)
	slices.SortFunc(tasks, compareTasks)
	p := &planner{
		in:      in,
		members: members,
		tasks:   slices.Compact(tasks),
		owner:   make(map[Task]string),
		actives: make([]int, len(members)),
		index:   make(map[string]int, len(members)),
		lagBuf:  make([]int64, len(members)),
		standby: make(map[Task][]string),
		warmup:  make(map[Task]string),
		plan:    Plan{Members: make(map[string]*MemberPlan, len(members))},
	}
	for i, m := range members {
		p.plan.Members[m.ID] = &MemberPlan{}
		p.index[m.ID] = i
	}
	p.state = p.stateIndex()
	return p
}

func compareTasks(a, b Task) int {
	return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition))
}

// stateful reports whether t has changelogs; only those have lag, standbys
// and warm-ups.
func (p *planner) stateful(t Task) bool {
	_, ok := p.in.Ends[t]
	return ok
}

func (p *planner) caughtUp(m PlanMember, t Task) bool {
	return !p.stateful(t) || p.in.Lag(m, t) <= p.in.AcceptableRecoveryLag
}

func (p *planner) give(t Task, id string) {
	if old, ok := p.owner[t]; ok {
		p.actives[p.index[old]]--
	}
	p.owner[t] = id
	p.actives[p.index[id]]++
}

// keepOrder is the order in which m keeps its previous actives when it
// cannot keep them all: the tasks fewest other members are caught up on
// come first, so that a member sheds the tasks another can run at once.
// This is what lets a probing rebalance converge: the tasks a warm-up has
// caught up on are the ones their old owner gives away.
func (p *planner) keepOrder(m PlanMember, caughtUp map[Task]int) []Task {
	others := func(t Task) int {
		n, ok := caughtUp[t]
		if !ok {
			n = p.caughtUpCount(t)
			caughtUp[t] = n
		}
		if p.caughtUp(m, t) {
			n--
		}
		return n
	}
	order := slices.Clone(m.PrevActive)
	rank := make(map[Task]int, len(order))
	for _, t := range order {
		rank[t] = others(t)
	}
	slices.SortStableFunc(order, func(a, b Task) int { return cmp.Compare(rank[a], rank[b]) })
	return order
}

// caughtUpCount counts the members caught up on t. Only members that
// report state for t are visited (see stateIndex): the others lack all of
// it, and are caught up only when the whole changelog is within the
// acceptable lag.
func (p *planner) caughtUpCount(t Task) int {
	if !p.stateful(t) {
		return len(p.members)
	}
	n := 0
	for _, i := range p.state[t] {
		if p.caughtUp(p.members[i], t) {
			n++
		}
	}
	if p.in.Ends[t] <= p.in.AcceptableRecoveryLag {
		n += len(p.members) - len(p.state[t])
	}
	return n
}

// placeBalanced is rule 1: the ideal assignment, ignoring catch-up. Active
// counts differ by at most one. Members first keep previous actives up to
// the floor, then one more while extra slots remain, so stickiness never
// costs balance (the same scheme as Assign).
func (p *planner) placeBalanced() {
	exists := make(map[Task]bool, len(p.tasks))
	for _, t := range p.tasks {
		exists[t] = true
	}
	floor, extra := len(p.tasks)/len(p.members), len(p.tasks)%len(p.members)
	keepOrder := make(map[string][]Task, len(p.members))
	caughtUp := make(map[Task]int)
	for _, m := range p.members {
		keepOrder[m.ID] = p.keepOrder(m, caughtUp)
	}
	keep := func(i int, limit int) {
		m := p.members[i]
		for _, t := range keepOrder[m.ID] {
			if p.actives[i] >= limit {
				return
			}
			if _, taken := p.owner[t]; exists[t] && !taken {
				p.give(t, m.ID)
			}
		}
	}
	for i := range p.members {
		keep(i, floor)
	}
	for i := range p.members {
		if extra > 0 && p.actives[i] == floor {
			keep(i, floor+1)
			if p.actives[i] > floor {
				extra--
			}
		}
	}
	for _, t := range p.unownedByStake() {
		best := p.roomiest(t, floor, extra > 0)
		if p.actives[best] == floor {
			extra--
		}
		p.give(t, p.members[best].ID)
	}
}

// unownedByStake lists the tasks no member kept, those whose placement
// matters most first: by how much more the member with the most lag on
// them lacks than the member with the least, then in task order. The
// tasks of a member that left would otherwise be placed in task order,
// and a stateless one, or one every member is caught up on, could take
// the last slot of the member holding another's caught-up standby, which
// would then restore in full elsewhere.
func (p *planner) unownedByStake() []Task {
	stake := make(map[Task]int64)
	var out []Task
	for _, t := range p.tasks {
		if _, taken := p.owner[t]; taken {
			continue
		}
		out = append(out, t)
		if !p.stateful(t) {
			continue
		}
		lags := p.lags(t)
		lo, hi := slices.Min(lags), slices.Max(lags)
		stake[t] = hi - lo
	}
	slices.SortStableFunc(out, func(a, b Task) int { return cmp.Compare(stake[b], stake[a]) })
	return out
}

// swapToReplicas is part of rule 1: a stateful active placed on a member
// that lacks records of it trades places with an active of the member
// with the least lag on it, so that a task goes to its caught-up standby
// even when balance filled that member's slots. The active traded back is
// a stateless one, which carries no state, else one the first member is
// caught up on (it holds its standby), whose move costs no restore
// either; the counts stay balanced. Without this, a changelog shorter
// than the acceptable lag makes every member caught up, and rule 2 keeps
// the task where it restores in full; and after a crash, when the members
// holding a task's standbys are full, rule 2 would move it there and
// unbalance them until a probing rebalance.
func (p *planner) swapToReplicas() {
	for _, t := range p.tasks {
		if !p.stateful(t) {
			continue
		}
		from := p.member(p.owner[t])
		lag := p.in.Lag(from, t)
		if lag == 0 {
			continue
		}
		best, bestLag, trade := "", lag, Task{}
		// Only members that report state for t can lag less than from.
		for _, i := range p.state[t] {
			m := p.members[i]
			if l := p.in.Lag(m, t); l < bestLag {
				if u, ok := p.tradable(m.ID, from, t); ok {
					best, bestLag, trade = m.ID, l, u
				}
			}
		}
		if best == "" {
			continue
		}
		p.give(t, best)
		p.give(trade, from.ID)
	}
}

// tradable returns an active of member id that from can take in exchange
// for t at no restore cost: the last stateless one in task order, else the
// first in task order that from is caught up on.
func (p *planner) tradable(id string, from PlanMember, t Task) (Task, bool) {
	if u := p.statelessActive(id); u != nil {
		return *u, true
	}
	var out []Task
	for u := range from.Offsets {
		if u != t && p.stateful(u) && p.owner[u] == id && p.caughtUp(from, u) {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return Task{}, false
	}
	return slices.MinFunc(out, compareTasks), true
}

// statelessActive returns the last stateless active of member id in task
// order, nil when it has none.
func (p *planner) statelessActive(id string) *Task {
	for i := len(p.tasks) - 1; i >= 0; i-- {
		if t := p.tasks[i]; !p.stateful(t) && p.owner[t] == id {
			return &t
		}
	}
	return nil
}

// roomiest picks, among the members with room for one more active, the one
// best placed to run t: lowest lag, then fewest actives, then ID. Ranking
// by lag alone also ranks caught-up members first, since every caught-up
// lag is at most the acceptable lag and every other lag is above it.
// Tasks arrive in (sub-topology, partition) order, so with equal lags the
// active count spreads each sub-topology over the members.
func (p *planner) roomiest(t Task, floor int, extra bool) int {
	lags := p.lags(t)
	best := -1
	for i, n := range p.actives {
		if n > floor || (n == floor && !extra) {
			continue
		}
		if best < 0 || cmp.Or(cmp.Compare(lags[i], lags[best]), cmp.Compare(n, p.actives[best])) < 0 {
			best = i
		}
	}
	return best
}

// lags returns every member's lag on t, by index in members, in a buffer
// the next call overwrites. Only the members that report state for t are
// looked up (see stateIndex): every other one lacks the whole changelog.
// Plans visit every member for every task to be placed, and at 1,000
// members and 10,000 tasks a map lookup per visit took seconds.
func (p *planner) lags(t Task) []int64 {
	end := p.in.Ends[t] // 0 when stateless, and then no member has state
	for i := range p.lagBuf {
		p.lagBuf[i] = end
	}
	for _, i := range p.state[t] {
		p.lagBuf[i] = p.in.Lag(p.members[i], t)
	}
	return p.lagBuf
}

// placeCaughtUp is rule 2: a stateful active whose balanced destination is
// not caught up goes where it can run without a long restore. It returns
// the moved tasks with their destinations, in task order, for warm-ups.
func (p *planner) placeCaughtUp() []move {
	var moves []move
	for _, t := range p.tasks {
		dest := p.owner[t]
		if !p.stateful(t) || p.caughtUp(p.member(dest), t) {
			continue
		}
		to, ok := p.caughtUpOwner(t)
		if !ok {
			to = p.mostState(t, dest)
		}
		if to == dest {
			continue
		}
		p.give(t, to)
		moves = append(moves, move{t, dest})
		p.plan.Probe = true
	}
	return moves
}

func (p *planner) member(id string) PlanMember {
	i, _ := slices.BinarySearchFunc(p.members, id, func(m PlanMember, id string) int { return cmp.Compare(m.ID, id) })
	return p.members[i]
}

// caughtUpOwner returns the caught-up member that should run t: its
// previous owner, whose state is surely hot, else the caught-up member
// with the fewest actives (then lower lag, then ID), to limit imbalance.
func (p *planner) caughtUpOwner(t Task) (string, bool) {
	lags := p.lags(t)
	up := func(i int) bool { return lags[i] <= p.in.AcceptableRecoveryLag }
	for i, m := range p.members {
		if up(i) && slices.Contains(m.PrevActive, t) {
			return m.ID, true
		}
	}
	best := -1
	for i := range p.members {
		if !up(i) {
			continue
		}
		if best < 0 || cmp.Or(cmp.Compare(p.actives[i], p.actives[best]), cmp.Compare(lags[i], lags[best])) < 0 {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return p.members[best].ID, true
}

// mostState returns the member with the least lag on t when none is
// caught up: it restores the least before the task runs again. Ties keep
// the balanced destination dest, then go to fewer actives, then ID.
func (p *planner) mostState(t Task, dest string) string {
	lags := p.lags(t)
	d := p.index[dest]
	best := d
	for i := range p.members {
		c := cmp.Compare(lags[i], lags[best])
		if c == 0 && best != d {
			c = cmp.Compare(p.actives[i], p.actives[best])
		}
		if c < 0 {
			best = i
		}
	}
	return p.members[best].ID
}

// holds reports whether member id already has any role for t.
func (p *planner) holds(id string, t Task) bool {
	w, warm := p.warmup[t]
	return p.owner[t] == id || slices.Contains(p.standby[t], id) || (warm && w == id)
}

// placeWarmups is rule 4: the balanced destination of each moved task
// restores it as a warm-up so that a probing rebalance can move the active
// there. A destination that holds a standby is warming up already. The cap
// bounds the restore traffic one rebalance starts.
func (p *planner) placeWarmups(moves []move) {
	placed := 0
	for _, mv := range moves {
		if placed >= p.in.MaxWarmupReplicas {
			return
		}
		if p.holds(mv.dest, mv.task) {
			continue
		}
		p.warmup[mv.task] = mv.dest
		placed++
	}
}

// fill writes the roles into the plan in task order, so every list is
// sorted.
func (p *planner) fill() {
	for _, t := range p.tasks {
		mp := p.plan.Members[p.owner[t]]
		mp.Active = append(mp.Active, t)
		for _, id := range p.standby[t] {
			p.plan.Members[id].Standby = append(p.plan.Members[id].Standby, t)
		}
		if id, ok := p.warmup[t]; ok {
			p.plan.Members[id].Warmup = append(p.plan.Members[id].Warmup, t)
		}
	}
}
