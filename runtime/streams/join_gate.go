package streams

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Commits that give way to a cooperative join.
//
// franz-go holds every offset commit, plain or transactional, while the
// member joins and syncs (its noCommitDuringJoinAndSync lock), and under
// the cooperative protocol that lasts until every member has rejoined:
// the others learn of the rebalance at their next heartbeat, and a
// follow-up rebalance comes after any task moved. A periodic commit that
// met a join would wait there holding tasksMu, and every task that stays
// would stop for as long: the pause cooperative rebalancing exists to
// avoid (measured by braid bench failover: commits held 100 to 600 ms).
//
// So while a join is under way the commit interval does not commit; the
// tasks go on processing, and the commit comes once the assignment
// arrived. Kafka Streams does the same after the fact: a commit that
// meets a rebalance fails with RebalanceInProgressException and is
// retried at the next interval. A join is under way from the revocation
// franz-go calls at the end of every session until the assignment, while
// App.unassignedSince is set (an eager member has suspended its tasks
// then, and has nothing to commit). The commits a rebalance itself needs
// are not held: a revocation commits after the sync, and under
// exactly-once the commit before a rebalance that waits for this member
// comes while no join is under way (commitDue).
//
// An at-least-once commit flushes before it commits offsets, and the
// flush takes long enough for a join to begin meanwhile; its offset
// commit then runs under a context the join cancels, and whatever it
// processed commits at the next interval. An exactly-once commit is not
// cut short that way: a failed offset commit would abort the whole
// transaction. Its interval waits for the join instead, as long as the
// open transaction has time to spare (commitDue).
type joinGate struct {
	// mu orders cutShort against commitContext: a commit either sees the
	// join begun, or registers its cancel before cutShort runs.
	mu     sync.Mutex
	cancel context.CancelFunc // of the offset commit under way, if any
}

// errCommitDeferred says a periodic commit gave way to a join: nothing
// failed, and the offsets are committed at the next interval.
var errCommitDeferred = errors.New("commit deferred: the group is rebalancing")

// cutShort cancels the offset commit under way; enterRebalancing calls it
// once the join is noted as begun.
func (g *joinGate) cutShort() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
}

// commitContext returns the context of an offset commit that a join
// cuts short, and the func that ends it; ok is false while a join is
// under way (joining reports it).
func (g *joinGate) commitContext(parent context.Context, joining func() bool) (ctx context.Context, done func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if joining() {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(parent)
	g.cancel = cancel
	return ctx, func() {
		g.mu.Lock()
		g.cancel = nil
		g.mu.Unlock()
		cancel()
	}, true
}

// joiningFor reports how long the group client has been joining, if it
// is.
func (a *App) joiningFor(now time.Time) (time.Duration, bool) {
	since := a.unassignedSince.Load()
	if since == 0 {
		return 0, false
	}
	return now.Sub(time.Unix(0, since)), true
}

// joining reports whether the group client is joining.
func (a *App) joining() bool { return a.unassignedSince.Load() != 0 }
