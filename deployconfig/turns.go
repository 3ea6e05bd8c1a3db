package deployconfig

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Processes holds the latest Status of each process of one deployment,
// as a follower of the topic reads them, and decides whose turn it is
// to move to a new revision. The rule is the whole rollout protocol: a
// process moves when every live process before it, in the order of
// their ids, runs the new revision; so one process restarts at a time,
// with no scheduler, and a process killed without a word (its Status
// older than LiveFor) holds no turn.
//
// The liveness is the Status's heartbeat rather than the consumer
// group's members: a restarting process leaves the group, and the
// group names a non-static member by no id of ours.
type Processes struct {
	deployment string
	seen       map[string]seenStatus
}

type seenStatus struct {
	status Status
	// at is when the status was written, as far as this reader can tell:
	// the record's timestamp, or when it arrived if that is earlier
	// (another machine's clock ahead of this one's).
	at time.Time
}

// NewProcesses tracks the processes of deployment id.
func NewProcesses(id string) *Processes {
	return &Processes{deployment: id, seen: make(map[string]seenStatus)}
}

// Apply takes an Update read at now; those of other deployments and
// those that are no Status are ignored.
func (p *Processes) Apply(u Update, now time.Time) {
	if u.ID != p.deployment {
		return
	}
	switch u.Kind {
	case StatusPut:
		at := u.Timestamp
		if at.IsZero() || at.After(now) {
			at = now
		}
		p.seen[u.Status.Process] = seenStatus{status: u.Status, at: at}
	case StatusDeleted:
		delete(p.seen, u.Status.Process)
	}
}

// Live returns the Statuses of the processes live at now, by process id.
func (p *Processes) Live(now time.Time) []Status {
	var out []Status
	for _, id := range slices.Sorted(maps.Keys(p.seen)) {
		if s := p.seen[id]; now.Sub(s.at) <= LiveFor {
			out = append(out, s.status)
		}
	}
	return out
}

// Turn reports whether process me may move to revision at now: every
// live process before it runs revision. If not, wait says which one
// it waits for and what that one does.
func (p *Processes) Turn(me string, revision int, now time.Time) (ok bool, wait string) {
	for _, s := range p.Live(now) {
		if s.Process >= me {
			break
		}
		if s.Revision != revision || s.State != Running {
			return false, fmt.Sprintf("process %s (%s revision %d)", s.Process, s.State, s.Revision)
		}
	}
	return true, ""
}
