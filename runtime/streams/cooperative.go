package streams

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Cooperative rebalancing (Config.RebalanceProtocol).
//
// franz-go runs a cooperative member through a rebalance without taking
// anything from it: at the start it calls OnPartitionsRevoked with nothing
// (revokeCooperatively then only notes the rebalance), the member joins
// saying which partitions it owns, and once the assignment arrives franz-go
// revokes just the partitions the member lost, then calls
// OnPartitionsAssigned with just the partitions it gained. The leader
// withholds a task that moves between two members until its old owner
// revoked it (see the assign package), and the old owner, having revoked
// something, joins again at once, so the task reaches its new owner in the
// follow-up rebalance. The tasks that stay are never suspended: they keep
// processing while the group rebalances, with their stream time, their
// record caches and their commit interval.
//
// A revoked task is committed on its own under at-least-once (its outputs
// flushed, its stores applied, its offsets committed) and then set aside
// like an eager rebalance's suspended task: onAssigned, which franz-go
// always calls after the revocation, keeps it as a standby or warm-up
// when the plan says so, and closes it otherwise.
//
// Exactly-once. One transaction carries the work of all the instance's
// tasks, so a revoked task's work cannot commit without the others'. As
// Kafka Streams under EOS-v2, the instance commits all its tasks before
// it gives any up: franz-go holds the revocation until the processing
// goroutine allows rebalances (BlockRebalanceOnPoll) and reports that it
// waits (OnPartitionsCallbackBlocked), and the processing goroutine then
// commits the open transaction first (commitDue). The session still
// refuses to commit the transaction open at the revocation; it holds no
// work, so aborting it undoes nothing, and the tasks that stay keep their
// state and caches (only their buffered, unprocessed records are fetched
// again, since the abort rewinds the consumer). Should records have been
// processed between that commit and the revocation, the abort returns
// every task, the staying ones too, to the last commit (task.rollBack),
// which is correct but costs them their caches.

// revokeCooperatively is onRevoked under the cooperative protocol, unless
// the App leaves the group or crashed, which give up everything.
func (a *App) revokeCooperatively(ctx context.Context, revoked map[string][]int32) {
	a.enterRebalancing()
	ids := a.tasksOfPartitions(revoked)
	if len(ids) == 0 {
		return // the start of a rebalance: every task keeps running
	}
	if a.txn != nil {
		// The session aborts the open transaction at its next end; the
		// processing goroutine does so before it processes more.
		a.txn.mustAbort.Store(true)
		a.tasksMu.Lock()
		if a.txn.dirty.Swap(false) {
			a.rollBackTasks()
		}
		a.tasksMu.Unlock()
		a.suspendOnly(ids)
		return
	}
	if err := a.commitTasks(ctx, ids, false); err != nil {
		// Their next owner reprocesses from the last commit:
		// duplicates, never loss.
		a.log.Warn("committing revoked tasks failed", "err", err)
		a.reportError(TaskID{}, fmt.Errorf("committing revoked tasks: %w", err), false)
	}
	a.suspendOnly(ids)
}

// tasksOfPartitions returns the active tasks that read any of partitions.
func (a *App) tasksOfPartitions(partitions map[string][]int32) map[TaskID]bool {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	ids := make(map[TaskID]bool)
	for topic, ps := range partitions {
		for _, p := range ps {
			if t := a.taskOf[TopicPartition{topic, p}]; t != nil {
				ids[t.id] = true
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// suspendOnly sets the tasks in ids aside, as suspendTasks does all, and
// notes them as handed over.
func (a *App) suspendOnly(ids map[TaskID]bool) {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	a.handedOver, a.revokedNow = ids, true
	for _, id := range slices.SortedFunc(maps.Keys(ids), compareTaskIDs) {
		t := a.tasks[id]
		if t == nil {
			continue
		}
		for _, tp := range t.partitions() {
			delete(a.byTP, tp)
			delete(a.taskOf, tp)
		}
		delete(a.tasks, id)
		a.suspend(t)
	}
	a.publishStats()
}

// suspend sets one task aside with its stores open; the caller removed it
// from the active tasks and holds tasksMu. A restore in progress stops at
// its last applied batch and starts again from there if the task stays.
func (a *App) suspend(t *task) {
	if r := t.restoring; r != nil {
		r.cancel()
		<-r.done
		t.restoring, t.interrupted = nil, true
	}
	t.queues = nil
	a.suspended[t.id] = t
	a.suspensions[t.id]++
}

// noteAssigned forgets the tasks handed over before the rebalance whose
// assignment arrives, unless it revoked them itself: once the follow-up
// rebalance assigned them, this member no longer speaks for them. The
// caller holds tasksMu.
//
// Until then the member reports them among its previous actives, so that
// the leader plans the follow-up on the same view of the group as the
// rebalance that moved them, and hands them to the member it chose then.
// Reported as held state only, a task whose former owner is as caught up
// as anyone could be planned back there: revoked, then assigned again.
func (a *App) noteAssigned() {
	if !a.revokedNow {
		a.handedOver = nil
	}
	a.revokedNow = false
}

// dropBuffered drops the records the active tasks hold unprocessed, after
// the consumer was rewound to the committed offsets with nothing to undo.
// The caller holds tasksMu.
func (a *App) dropBuffered() {
	for _, t := range a.tasks {
		for _, q := range t.queues {
			q.rollBack()
		}
	}
}

// leavingGroup reports whether a revocation is the App leaving the group.
func (a *App) leavingGroup() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state == PendingShutdown || a.state == Failed
}

// cooperative reports whether a revocation takes only what moves.
func (a *App) cooperative() bool {
	return a.cfg.RebalanceProtocol == RebalanceCooperative && !a.crashing.Load() && !a.leavingGroup()
}

// stateful reports whether sub-topology sub has a logged store, which a
// replica can follow.
func (a *App) stateful(sub int) bool {
	if sub < 0 || sub >= len(a.topo.subtopologies) {
		return false
	}
	for _, n := range a.topo.subtopologies[sub].nodes {
		for _, spec := range n.storeSpecs {
			if spec.logged {
				return true
			}
		}
	}
	return false
}
