package streams

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/braidstream/braid/runtime/internal/assign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The group protocol is cooperative by default (Config.RebalanceProtocol;
// see cooperative.go): a rebalance revokes only the tasks that move, which
// their old owner commits and gives up, and hands them to their new owner
// in the follow-up rebalance; the tasks that stay go on processing. Under
// the eager protocol, before every rebalance each member commits and
// suspends all its tasks, and the new assignment arrives whole. Either
// way, a suspended task keeps its stores open and its stream time, so a
// task that stays under eager resumes at once; a task that leaves becomes
// a standby when the assignment says so, else it is closed; a task that
// arrives is taken from a standby or warm-up replica when this instance
// has one, and then replays only what the replica had not applied.

// onAssigned takes up the tasks and replicas of a new assignment.
//
// franz-go fetches the committed offsets of the assigned partitions, and
// then their records, only once onAssigned returned, so the stores that
// arriving tasks open (a few milliseconds each on a fresh pebble, mostly
// its fsyncs, and tens of them on a busy disk: 25-40 ms for the 8 stores
// of bench join) would hold the first fetch back. When every arriving task is
// new to this instance's disk and its changelogs are empty
// (storesAside), nothing the stores hold can decide anything before the
// fetch: each opens empty at checkpoint 0, so none restores and no
// partition must be paused. onAssigned then returns as soon as the
// changelogs' ends are listed, and a goroutine finishes the assignment
// (finishAssigned) once its stores opened, while the offsets and the
// records are fetched. tasksMu stays held until it is finished (the
// goroutine unlocks what onAssigned locked), so that neither the
// processing goroutine nor a callback sees the assignment half taken up,
// as if onAssigned had waited; the next callback, and the end of Run,
// wait for it first (awaitArriving).
func (a *App) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	if cl == a.givenUp.Load() {
		a.log.Debug("assignment of a group client given up, not taken up", "assigned", fmt.Sprint(assigned))
		return
	}
	a.awaitArriving()
	a.client.Store(cl)
	a.noteMember(cl)
	as := &assignment{plan: a.balancer.Last(), rejoin: a.staticAssigned(cl), now: time.Now(), assigned: assigned}
	a.tasksMu.Lock()
	a.noteAssigned()
	var opening []*taskOpening
	as.arrivals, opening = a.prepareArrivals(assigned)
	aside := a.storesAside(as.arrivals, opening)
	if aside {
		// Listed before the opens begin: beside them (their fsyncs
		// hold the processors) it took up to 15 ms in bench join,
		// and the fetch waits for it.
		as.ends, aside = a.emptyChangelogs(ctx, cl, opening)
	}
	if !aside {
		a.openTasksStores(opening)
		as.opened(opening)
		a.finishAssigned(ctx, cl, as)
		return
	}
	done := make(chan struct{})
	a.arriving.Store(&done)
	go func() {
		defer close(done)
		a.openTasksStores(opening)
		as.opened(opening)
		a.finishAssigned(ctx, cl, as)
	}()
}

// awaitArriving waits until the assignment that onAssigned left to finish
// after it returned, if any, is taken up. Call it without tasksMu.
func (a *App) awaitArriving() {
	if done := a.arriving.Load(); done != nil {
		<-*done
	}
}

// assignment is an assignment onAssigned takes up: what the group
// assigned, the plan and the time it came, and the arrivals prepared for
// it. ends, when not nil, are its changelogs' ends, listed before the
// stores opened (emptyChangelogs).
type assignment struct {
	assigned map[string][]int32
	plan     assign.Assignment
	rejoin   bool
	now      time.Time
	arrivals map[TaskID]*arrival
	ends     kadm.ListedOffsets
}

// opened fills the arrivals of the tasks whose stores opening opened.
func (as *assignment) opened(opening []*taskOpening) {
	for _, op := range opening {
		ar := as.arrivals[op.id]
		ar.stores, ar.err = op.result()
	}
}

// finishAssigned takes up the assignment as, whose stores are open: it
// makes the tasks, starts their restores and the replicas, and lets
// tasksMu go, which onAssigned took.
func (a *App) finishAssigned(ctx context.Context, cl *kgo.Client, as *assignment) {
	arrived, resumed, kept := a.takeActives(as.assigned, as.arrivals, as.now)
	left := a.leaveSuspended()
	a.standby.queue(a.placeReplicas(as.plan, left))
	starting := append(slices.Clone(arrived), resumed...)
	ends, err := as.ends, error(nil)
	if ends == nil {
		ends, err = a.changelogEnds(ctx, kadm.NewClient(cl), starting, nil)
	}
	if err != nil {
		a.setAsyncError(err)
	} else {
		a.startRestores(ctx, cl, starting, ends)
	}
	switch {
	case as.rejoin:
		a.scheduleRebalance(0, "static membership: joining again with fresh metadata")
	case as.plan.ProbeAfter > 0:
		a.scheduleRebalance(as.plan.ProbeAfter, "probing rebalance: moving caught-up warm-ups to active")
	}
	a.publishStats()
	moves := a.taskMoves(arrived, left)
	a.tasksMu.Unlock()
	a.reportMoves(moves)
	a.unassignedSince.Store(0)
	a.changeState(Running, kept)
	a.outageEnded()
}

// storesAside reports whether the stores opening for an assignment may
// open while its records are fetched: under at-least-once, when every
// task taking up a partition is new here and opens stores of its own
// (none resumes, none comes from a replica, none was suspended), and no
// state of it was on disk when its opening was prepared, so that each
// store opens empty. Whether its changelogs are empty is for
// emptyChangelogs. Exactly-once keeps the order it has: its changelogs'
// ends wait for open transactions of the arriving tasks (changelogEnds).
// The caller holds tasksMu.
func (a *App) storesAside(arrivals map[TaskID]*arrival, opening []*taskOpening) bool {
	if a.txn != nil || len(opening) == 0 || len(opening) != len(arrivals) || len(a.suspended) > 0 {
		return false
	}
	for _, op := range opening {
		if !op.fresh {
			return false
		}
	}
	return true
}

// emptyChangelogs lists, in one request, the ends of the changelogs of
// the tasks opening, and reports whether every one of their partitions is
// empty, with the listing: such a task has nothing to restore. A failed
// listing reports false, leaving it to changelogEnds after the stores
// opened, which reports its error as it always did.
func (a *App) emptyChangelogs(ctx context.Context, cl *kgo.Client, opening []*taskOpening) (kadm.ListedOffsets, bool) {
	topics := slices.Sorted(maps.Keys(a.changelogTopics()))
	if len(topics) == 0 {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	ends, err := a.listChangelogEnds(ctx, kadm.NewClient(cl), topics...)
	if err != nil || ends.Error() != nil {
		return nil, false
	}
	for _, op := range opening {
		for _, spec := range op.specs {
			if !spec.logged {
				continue
			}
			end, ok := ends.Lookup(changelogTopic(a.cfg.ApplicationID, spec.name), op.id.Partition)
			if !ok || end.Offset != 0 {
				return nil, false
			}
		}
	}
	return ends, true
}

// takeActives makes a task of every assigned partition's task: the
// suspended one, the replica's, or a new one. It returns the tasks new to
// this instance, the suspended ones that resume but must restore first
// because a rebalance interrupted their restore, and the ids of all the
// suspended ones it gave back.
func (a *App) takeActives(assigned map[string][]int32, arrivals map[TaskID]*arrival, now time.Time) (arrived, resumed []*task, kept []TaskID) {
	for topic, p := range a.assignedSources(assigned) {
		src := a.sources[topic]
		st := a.topo.subtopologies[src.subtopology]
		id := TaskID{Subtopology: st.id, Partition: p}
		t, ok := a.tasks[id]
		if !ok {
			if t = a.suspended[id]; t != nil {
				delete(a.suspended, id)
				kept = append(kept, id)
				if t.interrupted {
					t.interrupted = false
					resumed = append(resumed, t)
				}
			} else {
				var err error
				t, err = a.arrive(st, id, arrivals[id], now)
				delete(arrivals, id)
				if err != nil {
					a.setAsyncError(&TaskFailedError{Task: id, Err: err})
					continue
				}
				arrived = append(arrived, t)
			}
			a.tasks[id] = t
		}
		tp := TopicPartition{topic, p}
		t.addPartition(tp, t.sources[src])
		a.byTP[tp] = t.queues[len(t.queues)-1]
		a.taskOf[tp] = t
	}
	return arrived, resumed, kept
}

// arrival is what a task new to this instance starts on, prepared for
// it before the task is made: its replica's stores, or its own, or why
// they did not open.
type arrival struct {
	stores  []*taskStore
	replica string
	err     error
}

// prepareArrivals prepares the arrival of every task of an assignment new
// to this instance: it takes the stores of those that have a replica here
// and returns the openings of the others' stores, for the caller to open
// side by side (openTasksStores) and fill in (assignment.opened), so that
// a member taking up several tasks waits for one round of store opens
// rather than one per task. An opening is fresh when the task has no
// state dir yet: its stores open empty.
func (a *App) prepareArrivals(assigned map[string][]int32) (map[TaskID]*arrival, []*taskOpening) {
	arrivals := make(map[TaskID]*arrival)
	var opening []*taskOpening
	for topic, p := range a.assignedSources(assigned) {
		st := a.topo.subtopologies[a.sources[topic].subtopology]
		id := TaskID{Subtopology: st.id, Partition: p}
		if a.tasks[id] != nil || a.suspended[id] != nil || arrivals[id] != nil {
			continue
		}
		ar := new(arrival)
		arrivals[id] = ar
		if sb := a.standby.release(id, "promoted"); sb != nil && sb.stores != nil {
			ar.stores, ar.replica = sb.stores, "standby"
			if sb.warmup {
				ar.replica = "warm-up"
			}
			continue
		}
		op := newTaskOpening(st, id)
		_, err := os.Lstat(filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, id.String()))
		op.fresh = errors.Is(err, fs.ErrNotExist)
		opening = append(opening, op)
	}
	return arrivals, opening
}

// assignedSources yields the assigned partitions of the topology's
// sources, topics in order: the one walk of an assignment that
// prepareArrivals and takeActives both make, so that every task new to
// the member has its arrival prepared.
func (a *App) assignedSources(assigned map[string][]int32) iter.Seq2[string, int32] {
	return func(yield func(string, int32) bool) {
		for _, topic := range slices.Sorted(maps.Keys(assigned)) {
			if a.sources[topic] == nil {
				continue
			}
			for _, p := range assigned[topic] {
				if !yield(topic, p) {
					return
				}
			}
		}
	}
}

// arrive creates a task new to this instance on what prepareArrivals
// prepared for it (ar): its replica's stores, or its own.
func (a *App) arrive(st *subtopology, id TaskID, ar *arrival, now time.Time) (*task, error) {
	if ar.err != nil {
		return nil, ar.err
	}
	t, err := a.newTask(st, id, ar.stores)
	if err != nil {
		return nil, err
	}
	delete(a.onDisk, id)
	t.assignedAt, t.replica = now, ar.replica
	return t, nil
}

// leaveSuspended takes the suspended tasks the assignment did not give
// back out of the suspended ones and returns them, stores open, for
// placeReplicas to hand each to its replica or close it. Deciding here
// too, on the plan's standbys and warm-ups alone, closed a task that
// placeReplicas then made a warm-up of (a pending one) on its stores.
func (a *App) leaveSuspended() []*task {
	var left []*task
	for _, id := range slices.SortedFunc(maps.Keys(a.suspended), compareTaskIDs) {
		left = append(left, a.suspended[id])
		delete(a.suspended, id)
	}
	return left
}

// closeTask closes a task's stores and remembers what state it leaves on
// disk, for the assignor. The caller holds tasksMu.
func (a *App) closeTask(t *task) {
	if t.hasChangelogs() {
		a.onDisk[t.id] = offsetSum(t.storeList)
	}
	t.closeStores()
	a.released(t.id, time.Now())
}

// placeReplicas makes this instance's replicas what the assignment says:
// replicas no longer planned close, warm-ups that became standbys (or
// back) change role, and the new replicas are returned for the follower
// to start (see replica_start.go), with the open stores of a task that
// just left here when there is one; it closes the other tasks that left.
func (a *App) placeReplicas(plan assign.Assignment, left []*task) []*standbyTask {
	want := make(map[TaskID]bool) // task: is a warm-up
	for _, t := range plan.Standby {
		want[TaskID{t.Subtopology, t.Partition}] = false
	}
	for _, t := range plan.Warmup {
		want[TaskID{t.Subtopology, t.Partition}] = true
	}
	pending := make(map[TaskID]bool)
	for _, t := range plan.Pending {
		pending[TaskID{t.Subtopology, t.Partition}] = true
	}
	for _, id := range a.standby.ids() {
		if warmup, ok := want[id]; ok && a.tasks[id] == nil {
			a.standby.setWarmup(id, warmup)
			delete(want, id)
			continue
		}
		if pending[id] && a.tasks[id] == nil {
			delete(pending, id) // follows on in its role until it is promoted
			continue
		}
		if sb := a.standby.release(id, "moved"); sb != nil && sb.stores != nil {
			a.onDisk[id] = offsetSum(sb.stores)
			closeTaskStores(sb.stores)
		}
		a.released(id, time.Now())
	}
	for id := range pending {
		// A cooperative rebalance withheld it until its owner gives it
		// up: warmed up meanwhile, it restores less when it arrives.
		if _, planned := want[id]; !planned && a.stateful(id.Subtopology) {
			want[id] = true
		}
	}
	leaving := make(map[TaskID]*task)
	for _, t := range left {
		leaving[t.id] = t
	}
	var fresh []*standbyTask
	for _, id := range slices.SortedFunc(maps.Keys(want), compareTaskIDs) {
		if a.tasks[id] != nil || id.Subtopology >= len(a.topo.subtopologies) {
			continue // the plan never does this; a stale or foreign plan might
		}
		sb := &standbyTask{id: id, warmup: want[id]}
		if t := leaving[id]; t != nil {
			// The replica writes its changelog's records, the next
			// owner's, straight to pebble, beneath what the task
			// kept in memory of it: the clean rows of the record
			// caches (a key-value store keeps its flushed rows), the
			// open windows, the unmatched rows' progress. Kept, they
			// would hide the new owner's writes once the task is
			// back here: counts resumed from the rows the task held
			// when it left. So they go now, as when a transaction
			// aborts; a promotion reloads them from pebble
			// (task.start). The suspended task committed, so no
			// pending write is dropped. The join buffers in memory
			// write their snapshots first, for the replica to
			// follow on from.
			t.settleBuffers()
			for _, st := range t.storeList {
				st.rollBack()
			}
			sb.stores = t.storeList
			delete(leaving, id) // the replica owns its stores now
		}
		fresh = append(fresh, sb)
	}
	// Each task that left is handed to its replica or closed, here and
	// nowhere else: a store has one owner at a time.
	for _, t := range left {
		if leaving[t.id] != nil {
			a.closeTask(t)
		}
	}
	return fresh
}

// startRestores restores the stores of tasks that are behind their
// changelogs, pausing their partitions meanwhile, and starts the others.
func (a *App) startRestores(ctx context.Context, cl *kgo.Client, tasks []*task, ends kadm.ListedOffsets) {
	for _, t := range tasks {
		restoring, err := a.restoreStores(ctx, kadm.NewClient(cl), t, ends)
		if err != nil {
			a.setAsyncError(&TaskFailedError{Task: t.id, Err: err})
			continue
		}
		if restoring {
			cl.PauseFetchPartitions(t.partitionMap())
			continue
		}
		// Its partitions may still be paused: a rebalance may have cut
		// short the restore that paused them, here or in an earlier
		// assignment of the task to this instance.
		cl.ResumeFetchPartitions(t.partitionMap())
		if err := t.start(); err != nil {
			a.setAsyncError(&TaskFailedError{Task: t.id, Err: err})
		}
	}
}

// taskMoves are the events of the tasks that arrived and left, taken
// while the caller holds tasksMu: once it lets go, the processing
// goroutine may be at work on the arrived tasks (finishAssigned runs
// beside it when the stores opened aside).
func (a *App) taskMoves(arrived, left []*task) (moves taskMoves) {
	for _, t := range left {
		moves.left = append(moves.left, a.taskEvent(t, true))
	}
	for _, t := range arrived {
		moves.arrived = append(moves.arrived, a.taskEvent(t, true))
	}
	return moves
}

// taskMoves are the events of an assignment's moves (see App.taskMoves).
type taskMoves struct{ arrived, left []TaskEvent }

// reportMoves logs and reports the tasks that arrived and left.
func (a *App) reportMoves(moves taskMoves) {
	for _, ev := range moves.left {
		a.log.Info("task revoked", "task", ev.Task.String())
		for _, h := range a.hooks.revoked {
			h.OnTaskRevoked(ev)
		}
	}
	for _, ev := range moves.arrived {
		a.log.Info("task assigned", "task", ev.Task.String(), "partitions", fmt.Sprint(ev.Partitions), "from_replica", ev.FromReplica)
		for _, h := range a.hooks.assigned {
			h.OnTaskAssigned(ev)
		}
	}
}

func (a *App) taskEvent(t *task, clean bool) TaskEvent {
	return TaskEvent{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, Task: t.id, Partitions: t.partitions(),
		Clean: clean, FromReplica: t.replica, LastRecord: t.lastRecordAt}
}

// onRevoked, under the cooperative protocol, gives up the revoked tasks
// alone (see cooperative.go). Eager, or when the App leaves the group, it
// commits what the tasks processed and suspends them until the new
// assignment says which stay. When the commit fails the tasks are
// closed instead: their stores may hold writes whose inputs the next owner
// processes again.
func (a *App) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	a.awaitArriving() // the revoked tasks may be those arriving
	a.client.Store(cl)
	if a.cooperative() {
		a.revokeCooperatively(ctx, revoked)
		return
	}
	if a.txn != nil {
		a.revokedExactlyOnce(false)
		return
	}
	if a.crashing.Load() {
		a.dropTasks(false)
		return
	}
	leaving := a.enterRebalancing()
	if err := a.commit(ctx); err != nil {
		// The next owner reprocesses from the last commit: duplicates,
		// never loss.
		a.log.Warn("committing before revocation failed", "err", err)
		a.reportError(TaskID{}, fmt.Errorf("committing before revocation: %w", err), false)
		// Its flush may have given up with records still held.
		a.abandonProduced(cl)
		a.dropTasks(true)
		return
	}
	if leaving {
		a.dropTasks(true)
		return
	}
	a.suspendTasks()
}

// onLost drops the tasks without committing: another member may own them
// already, and its commits must not be overwritten, nor its writes
// followed by the lost tasks' older ones. Under at-least-once the
// producer's records are abandoned first (abandonProduced): a commit
// waiting on their flush, which holds the tasks, then gives up, and none
// of them reaches the broker once it answers again.
func (a *App) onLost(_ context.Context, cl *kgo.Client, _ map[string][]int32) {
	a.awaitArriving()
	if !a.crashing.Load() {
		a.outageBegan(errSessionLost)
	}
	if a.txn != nil {
		a.revokedExactlyOnce(true)
		return
	}
	a.enterRebalancing()
	a.abandonProduced(cl)
	a.dropTasks(false)
}

// abandonProduced fails, under at-least-once, every record cl still
// holds, unsent or waiting to be sent again, rather than let it reach the
// broker later: the tasks that produced them are being given up without
// a commit, and their next owner, which may be at work already (a group
// coordinator that forgot this member, as a restarted embedded broker
// does, hands them over at once), writes the same changelog and output
// partitions. A record of the old tasks sent after the new owner's puts
// old state last in the changelog (a restore takes it for the latest)
// and old counts last in the output; and the flush of a commit under way
// would return as if nothing happened and apply the stores with a
// checkpoint past the new owner's records, which their state never
// included, so that a later restore from it skips them. The inputs of
// the abandoned records are processed again from the last committed
// offsets, as after any lost session.
//
// A record already in a request on its way is not recalled; franz-go
// gives its producer a new epoch, so that no sequence number is reused.
// Under exactly-once the transaction's abort does this.
func (a *App) abandonProduced(cl *kgo.Client) {
	if a.txn != nil || cl == nil || a.capture != nil {
		return
	}
	a.abandoned.Add(1)
	cl.UnsafeAbortBufferedRecords()
}

// suspendTasks sets every task aside with its stores open. A restore in
// progress is stopped at its last applied batch and starts again from
// there if the task stays.
func (a *App) suspendTasks() {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	for _, t := range a.tasks {
		a.suspend(t)
	}
	clear(a.tasks)
	clear(a.byTP)
	clear(a.taskOf)
	a.publishStats()
}

// dropTasks closes every active and suspended task.
func (a *App) dropTasks(clean bool) {
	a.awaitArriving() // else the arriving tasks would come after the drop
	a.tasksMu.Lock()
	dropped := slices.SortedFunc(maps.Values(a.tasks), func(x, y *task) int { return compareTaskIDs(x.id, y.id) })
	for _, t := range a.suspended {
		dropped = append(dropped, t)
	}
	clear(a.tasks)
	clear(a.suspended)
	clear(a.byTP)
	clear(a.taskOf)
	a.handedOver, a.revokedNow = nil, false // it speaks for no task now
	crashed := a.crashing.Load()
	if !crashed {
		// A crash leaves the last snapshot, which says what the
		// instance had processed when it died.
		a.publishStats()
	}
	for _, t := range dropped {
		if r := t.restoring; r != nil {
			r.cancel()
			<-r.done
		}
		a.closeTask(t)
	}
	if len(dropped) > 0 && !clean {
		// What the dropped tasks produced since their last commit, which
		// no commit acknowledged, must not reach the broker after their
		// next owner's writes. No task is left to produce more.
		a.abandonProduced(a.kc())
	}
	a.tasksMu.Unlock()
	if crashed {
		return // a dead process reports nothing
	}
	for _, t := range dropped {
		a.log.Info("task revoked", "task", t.id.String(), "clean", clean)
		for _, h := range a.hooks.revoked {
			h.OnTaskRevoked(a.taskEvent(t, clean))
		}
	}
}

func compareTaskIDs(x, y TaskID) int {
	if x.Subtopology != y.Subtopology {
		return x.Subtopology - y.Subtopology
	}
	return int(x.Partition - y.Partition)
}

// heldState is what this member tells the assignor when it joins: the
// tasks it ran until now, and the changelog offset sum of every stateful
// task whose state it holds, open or on disk.
//
// franz-go asks while it joins, on its group goroutine, which under the
// cooperative protocol need not wait for the processing goroutine to poll.
// That goroutine may hold tasksMu through an exactly-once commit, whose
// End waits for a heartbeat that only the group goroutine, stuck here,
// would send: waiting for the lock stalls both until TransactionTimeout,
// and the whole group with them. So a busy lock is answered with what was
// published at the last commit or rebalance step (publishHeld), which
// differs from the present only by the offsets written since: less state
// than held, the safe error.
func (a *App) heldState() (active []assign.Task, offsets map[assign.Task]int64) {
	var snap *heldTasks
	if a.tasksMu.TryLock() {
		snap = a.publishHeld()
		a.tasksMu.Unlock()
	} else if snap = a.lastHeld.Load(); snap == nil {
		// Nothing published yet: no task ran, so no commit holds the
		// lock for long.
		a.tasksMu.Lock()
		snap = a.publishHeld()
		a.tasksMu.Unlock()
	}
	held := maps.Clone(snap.offsets)
	a.standby.offsets(held)
	offsets = make(map[assign.Task]int64, len(held))
	for id, off := range held {
		offsets[assign.Task{Subtopology: id.Subtopology, Partition: id.Partition}] = off
	}
	return slices.Clone(snap.active), offsets
}

// heldTasks is the tasks part of heldState: the active tasks and the
// offset sums of the state held open or on disk.
type heldTasks struct {
	active  []assign.Task
	offsets map[TaskID]int64
}

// publishHeld computes heldTasks and publishes it for heldState. The
// caller holds tasksMu.
func (a *App) publishHeld() *heldTasks {
	snap := &heldTasks{offsets: maps.Clone(a.onDisk)}
	if snap.offsets == nil {
		snap.offsets = make(map[TaskID]int64)
	}
	for _, group := range []map[TaskID]*task{a.tasks, a.suspended} {
		for id, t := range group {
			snap.active = append(snap.active, assign.Task{Subtopology: id.Subtopology, Partition: id.Partition})
			if t.hasChangelogs() {
				snap.offsets[id] = offsetSum(t.storeList)
			}
		}
	}
	for id := range a.handedOver {
		if a.tasks[id] == nil && a.suspended[id] == nil {
			snap.active = append(snap.active, assign.Task{Subtopology: id.Subtopology, Partition: id.Partition})
		}
	}
	a.lastHeld.Store(snap)
	return snap
}

// hasChangelogs reports whether any of the task's stores is logged.
func (t *task) hasChangelogs() bool {
	return slices.ContainsFunc(t.storeList, func(st *taskStore) bool { return st.changelog != "" })
}

// scanStateDir finds the task state a previous run left on disk, so that
// the first join already tells the assignor where state is.
func (a *App) scanStateDir() error {
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading state dir: %w", err)
	}
	for _, e := range entries {
		id, ok := parseTaskDir(e.Name())
		if !e.IsDir() || !ok || id.Subtopology >= len(a.topo.subtopologies) {
			continue
		}
		sum, found := int64(0), false
		for _, n := range a.topo.subtopologies[id.Subtopology].nodes {
			for _, spec := range n.storeSpecs {
				if !spec.logged {
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, e.Name(), spec.name)); err != nil {
					continue
				}
				st, err := a.openStore(spec, id)
				if err != nil {
					return fmt.Errorf("reading the checkpoint of task %s: %w", id, err)
				}
				sum += st.db.Checkpoint().ChangelogOffset
				found = true
				st.db.Close()
			}
		}
		if found {
			a.onDisk[id] = sum
		}
	}
	return nil
}

// parseTaskDir reads a task state directory's name, "<subtopology>_<partition>".
func parseTaskDir(name string) (TaskID, bool) {
	var t assign.Task
	if err := t.UnmarshalText([]byte(name)); err != nil {
		return TaskID{}, false
	}
	return TaskID{Subtopology: t.Subtopology, Partition: t.Partition}, true
}

// scheduleRebalance triggers a rebalance after a while, logging why: the
// probing rebalance the leader was asked for, which moves the actives
// whose warm-ups caught up, or a static member's rejoin (static.go). A
// later one replaces a pending one. The caller holds tasksMu.
func (a *App) scheduleRebalance(after time.Duration, why string) {
	if a.probe != nil {
		a.probe.Stop()
	}
	a.probe = time.AfterFunc(after, func() {
		if a.crashing.Load() {
			return
		}
		a.log.Info(why)
		if cl := a.kc(); cl != nil {
			cl.ForceRebalance()
		}
	})
}

// Member is one member of the application's group, with its tasks, as
// the last rebalance assigned them.
type Member struct {
	InstanceID string
	// Server is the member's Config.ApplicationServer, where it answers
	// interactive queries; RackTags its Config.RackTags.
	Server   string
	RackTags map[string]string
	Active   []TaskID
	Standby  []TaskID
	Warmup   []TaskID
}

// Members returns every member of the group and its active, standby and
// warm-up tasks as the last rebalance this instance took part in assigned
// them, sorted by instance id; nil before the first. It is how one
// instance finds which other holds a task, to route a query there.
func (a *App) Members() []Member {
	group := a.balancer.Last().Group
	if group == nil {
		return nil
	}
	ids := func(ts []assign.Task) []TaskID {
		out := make([]TaskID, len(ts))
		for i, t := range ts {
			out[i] = TaskID{Subtopology: t.Subtopology, Partition: t.Partition}
		}
		return out
	}
	out := make([]Member, len(group))
	for i, m := range group {
		out[i] = Member{InstanceID: m.Instance, Server: m.Server, RackTags: maps.Clone(m.Tags),
			Active: ids(m.Active), Standby: ids(m.Standby), Warmup: ids(m.Warmup)}
	}
	return out
}
