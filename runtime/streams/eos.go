package streams

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Exactly-once.
//
// Under ExactlyOnce the App's client is a franz-go GroupTransactSession
// with the transactional id <ApplicationID>-<InstanceID>: one producer per
// instance, fencing its own predecessor when it starts, and one
// transaction per commit interval. Every consumer of the App reads
// committed records only: the group consumer, the restores and the
// standby follower, which also keep the control records so that they
// see where each transaction ended (see restoreEntry).
//
// A commit (commitTransaction) runs while the group cannot rebalance (the
// poll that preceded it blocks rebalances until AllowRebalance):
//
//  1. every task flushes its record cache: outputs and changelog records
//     go into the open transaction, rows into each store's pending pebble
//     batch, through which the task reads its own writes;
//  2. stream-time markers go to the windowed stores' changelogs;
//  3. the producer is flushed, and a record that failed fails the App,
//     whose transaction is then aborted;
//  4. End adds the processed input offsets to the transaction, with the
//     group generation, so that a member the group moved on from cannot
//     commit, and commits it;
//  5. every store applies its pending batch together with its checkpoint:
//     the changelog offset after its last record, and the stream time;
//  6. the next transaction begins.
//
// Crash points, and why each leaves state and outputs exact:
//
//   - Before the commit (steps 1 to 4): the transaction never commits.
//     The broker aborts it when the restarted instance initializes the
//     same transactional id, or after TransactionTimeout. Pebble holds
//     the previous commit's state and checkpoint, the group the previous
//     commit's offsets; read-committed readers never saw the aborted
//     records. Processing resumes from the previous commit.
//   - After the commit, before the stores applied (between 4 and 5):
//     pebble is at the previous checkpoint, while the changelog holds the
//     committed transaction after it. Restore replays the committed tail
//     from the checkpoint, skipping aborted transactions, and the task
//     resumes at the committed offsets with exactly the state they imply.
//   - During step 5: each store applies its batch and checkpoint in one
//     pebble batch, so each is at the old checkpoint or the new one, and
//     restore brings each from its own.
//
// No crash forces a wipe. In Kafka Streams before KIP-892 a store is
// written in place, so after a crash under exactly-once it may hold
// uncommitted writes and is restored from scratch.
//
// Aborts. A transaction aborts when the group revokes or loses partitions
// while it is open (franz-go's session then refuses to commit it), when
// End cannot commit it, or when the App fails. Every task then returns to
// its last commit (task.rollBack): the record caches and pending batches
// are dropped, window bookkeeping and stream time reload from pebble, and
// the consumer rewinds to the committed offsets.
//
// Bounds. Steps 3 and 4, and an abort, wait TransactionTimeout at most
// (the broker aborts a transaction open longer anyway): End's forced
// heartbeat, for one, never comes while franz-go's group goroutine waits
// for the rebalance this goroutine allows only after the commit. When the
// bound passes, or End fails, the App recovers (recover.go): it closes
// its tasks dirty, so that they restore from their last checkpoint, closes
// the session and starts a new one with the same transactional id, whose
// producer id fences the old one and aborts its open transaction. The
// tasks' next owner resumes from the last committed transaction: nothing
// is lost, nothing is committed twice.

// transactions is the App's transactional state under ExactlyOnce.
type transactions struct {
	sess *kgo.GroupTransactSession

	// dirty says the open transaction holds work: records processed since
	// it began. mustAbort is set when the group revoked or lost
	// partitions while a transaction was open: the session will not
	// commit it, so the processing goroutine aborts it before it
	// processes anything else. rebalanceWaiting is set by franz-go when a
	// rebalance waits for the processing goroutine to allow it: that
	// goroutine then commits first, so that the revocation finds nothing
	// to abort. The group callbacks run while the processing goroutine
	// polls, so these are atomics rather than fields under tasksMu.
	dirty            atomic.Bool
	mustAbort        atomic.Bool
	rebalanceWaiting atomic.Bool

	// failed is the error that left the producer unusable; the
	// processing goroutine sets and reads it.
	failed error
}

// transactionalID is the App's transactional id: stable per instance, so
// that a restarted instance fences its predecessor's open transaction at
// once instead of waiting for the transaction timeout.
func (a *App) transactionalID() string { return a.cfg.ApplicationID + "-" + a.cfg.InstanceID }

// exactlyOnceOptions are the client options exactly-once adds.
func (a *App) exactlyOnceOptions() []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(a.transactionalID()),
		kgo.TransactionTimeout(a.cfg.TransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { a.txn.rebalanceWaiting.Store(true) }),
	}
}

// readOptions are the options of the App's changelog readers, restores
// and the standby follower. Under exactly-once they read committed records
// only. Under either guarantee they keep the control records: a changelog
// an exactly-once run wrote, which a later at-least-once run may read,
// ends each transaction with a marker that takes an offset, and a reader
// that drops the markers never receives the offset before the end, so it
// cannot tell that it reached the end. restoreEntry steps over them.
func (a *App) readOptions() []kgo.Opt {
	if a.txn == nil {
		return []kgo.Opt{kgo.KeepControlRecords()}
	}
	return []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}
}

// startTransactions creates the transactional session and begins the
// first transaction. It initializes the producer id at once: that aborts
// whatever transaction a killed predecessor with the same instance id
// left open, which read-committed readers of its partitions wait on.
func (a *App) startTransactions(opts []kgo.Opt) (*kgo.Client, error) {
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating transactional client: %w", err)
	}
	a.txn.sess = sess
	if err := a.initProducerID(sess.Client()); err != nil {
		a.abandonUnstarted(sess.Client())
		return nil, err
	}
	if err := sess.Begin(); err != nil {
		a.abandonUnstarted(sess.Client())
		return nil, fmt.Errorf("beginning a transaction: %w", err)
	}
	return sess.Client(), nil
}

// producerIDWindows is how many brokerTimeouts a new session waits for
// its producer id before it gives up. The producer id comes once the
// coordinator has aborted the transaction this instance's last session
// left open, which takes a marker on every partition it touched: after a
// node dies, only once the node is fenced (Kafka's
// broker.session.timeout.ms, 9 s, counted again from a new controller's
// election when the controller died with it) and its partitions have new
// leaders. A session given up meanwhile has joined the group in the
// background, so its members rebalance twice (seen on Apache Kafka: the
// active controller killed, a worker's producer id came 10.5 s after it
// asked, just past one brokerTimeout, and both workers lost their
// transactions to the rejoin).
const producerIDWindows = 2

// initProducerID waits for the producer id of the App's transactional id
// on cl, asking again each brokerTimeout while the broker's answer is one
// a retry heals, for producerIDWindows brokerTimeouts at most.
func (a *App) initProducerID(cl *kgo.Client) error {
	for window := 1; ; window++ {
		ctx, cancel := context.WithTimeout(a.clientCtx, a.brokerTimeout())
		_, _, err := cl.ProducerID(ctx)
		cancel()
		if err == nil {
			return nil
		}
		err = brokerErr(fmt.Sprintf("initializing transactional id %q", a.transactionalID()), err)
		if window == producerIDWindows || a.clientCtx.Err() != nil || !retryHeals(err) {
			return err
		}
		a.log.Info("the transactional id's producer id is late; asking again", "err", err)
	}
}

// retryHeals reports whether asking the broker again may heal err: a
// bound passed, a connection failed, or the broker answered with a
// retriable error (a coordinator moving or loading, a transaction still
// being aborted).
func retryHeals(err error) bool {
	if errors.Is(err, kgo.ErrClientClosed) {
		return false
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return true
	}
	return ke.Retriable
}

// abandonUnstarted gives up the group client cl of a transactional
// session that never started: it may have joined the group and taken
// tasks up in the background while the App waited for the producer id.
// As recoverSession does with a running session, it drops those tasks
// (their restores ran on cl), leaves the group, so that the other
// members rebalance at once rather than at the session timeout, closes
// cl and forgets the session.
func (a *App) abandonUnstarted(cl *kgo.Client) {
	a.givenUp.Store(cl)
	a.dropTasks(false)
	a.leaveAndClose(cl)
	a.resetSession()
}

// commitTransaction is the exactly-once commit; see the steps above. It
// waits TransactionTimeout at most: the broker aborts a transaction open
// longer anyway.
func (a *App) commitTransaction(ctx context.Context) error {
	if a.txn.failed != nil {
		return a.txn.failed
	}
	if a.txn.mustAbort.Load() {
		return a.abortTransaction(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.TransactionTimeout)
	defer cancel()
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	offsets, queues := a.processedOffsets(nil)
	if !a.txn.dirty.Load() && len(queues) == 0 {
		return nil
	}
	for _, t := range a.tasks {
		if t.restoring == nil && len(t.storeList) > 0 {
			if err := t.flushStores(); err != nil {
				return &TaskFailedError{Task: t.id, Err: err}
			}
		}
	}
	a.markStreamTimes(nil)
	start := time.Now()
	if err := a.kc().Flush(ctx); err != nil {
		a.txn.failed = brokerErr("flushing the transaction's records", err)
		return a.txn.failed
	}
	if err := a.producedError(); err != nil {
		return err
	}
	if err := a.reachCrashPoint(crashBeforeCommit); err != nil {
		return err
	}
	committed, err := a.txn.sess.End(kgo.PreTxnCommitFnContext(ctx, commitOffsets(offsets)), kgo.TryCommit)
	if err != nil {
		a.txn.failed = brokerErr("committing transaction", err)
		return a.txn.failed
	}
	a.txn.dirty.Store(false)
	if !committed {
		// The group moved on while the transaction was open: the
		// session aborted it and rewound the consumer.
		a.log.Info("transaction aborted: the group rebalanced before it could commit")
		a.rollBackTasks()
		return a.beginTransaction()
	}
	if err := a.reachCrashPoint(crashAfterCommit); err != nil {
		return err
	}
	if err := a.applyStores(nil, func() error { return a.reachCrashPoint(crashDuringApply) }); err != nil {
		return err
	}
	a.committed(ctx, queues, start)
	return a.beginTransaction()
}

// The crash points of a commit, where tests make the App crash (see
// export_test.go) to check what the comment at the top says of each.
const (
	crashBeforeCommit = "before-commit"
	crashAfterCommit  = "after-commit"
	crashDuringApply  = "during-apply"
)

// reachCrashPoint crashes the App when a test asks for it at point: as
// App.crash does, without a word to the group or the broker, and with
// whatever pebble has not applied dropped when the stores close.
func (a *App) reachCrashPoint(point string) error {
	if a.crashAt == nil || !a.crashAt(point) {
		return nil
	}
	a.crashing.Store(true)
	a.clientCancel()
	return fmt.Errorf("crashed %s, as a test asked", point)
}

// commitOffsets makes the TxnOffsetCommit carry the offsets the tasks
// processed, rather than franz-go's: it counts every polled record as
// consumed, while a task may hold polled records it has not processed.
func commitOffsets(offsets map[string]map[int32]kgo.EpochOffset) func(*kmsg.TxnOffsetCommitRequest) error {
	return func(req *kmsg.TxnOffsetCommitRequest) error {
		ids := make(map[string][16]byte, len(req.Topics))
		for _, t := range req.Topics {
			ids[t.Topic] = t.TopicID
		}
		req.Topics = req.Topics[:0]
		for topic, parts := range offsets {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, ids[topic]
			for p, eo := range parts {
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
				rp.Metadata = &req.MemberID
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return nil
	}
}

// abortTransaction aborts the open transaction and returns every task to
// its last commit. It waits TransactionTimeout at most, as a commit does.
func (a *App) abortTransaction(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.TransactionTimeout)
	defer cancel()
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	_, err := a.txn.sess.End(ctx, kgo.TryAbort)
	a.txn.mustAbort.Store(false)
	if a.txn.dirty.Swap(false) {
		a.rollBackTasks()
	} else {
		// Nothing to undo, but the session rewound the consumer to the
		// committed offsets: the records a task that stayed through a
		// cooperative revocation holds unprocessed come again.
		a.dropBuffered()
	}
	if err != nil {
		a.txn.failed = brokerErr("aborting transaction", err)
		return a.txn.failed
	}
	a.log.Info("transaction aborted: the group revoked or lost partitions while it was open")
	return a.beginTransaction()
}

func (a *App) beginTransaction() error {
	if err := a.txn.sess.Begin(); err != nil {
		a.txn.failed = fmt.Errorf("beginning a transaction: %w", err)
		return a.txn.failed
	}
	return nil
}

// finishTransaction ends the App's last transaction when Run returns:
// committed after a clean stop, aborted after a failure, whose record
// may have left part of its outputs in it.
func (a *App) finishTransaction(ctx context.Context, failed bool) error {
	if a.txn.failed != nil {
		return nil // reported when it happened
	}
	if !failed {
		return a.commitTransaction(ctx)
	}
	a.txn.dirty.Store(true) // whatever was processed is dropped
	return a.abortTransaction(ctx)
}

// revokedExactlyOnce is onRevoked and onLost under exactly-once. The
// transaction cannot commit any more (franz-go's session refuses once the
// group moved on), and committing here would deadlock with the session,
// which holds its lock while it calls back: the tasks return to their
// last commit now, and the processing goroutine aborts the transaction
// after its poll.
func (a *App) revokedExactlyOnce(lost bool) {
	a.txn.mustAbort.Store(true)
	if a.crashing.Load() {
		a.dropTasks(false)
		return
	}
	leaving := a.enterRebalancing()
	a.tasksMu.Lock()
	if a.txn.dirty.Swap(false) {
		a.rollBackTasks()
	}
	a.tasksMu.Unlock()
	switch {
	case lost:
		a.dropTasks(false)
	case leaving:
		a.dropTasks(true)
	default:
		a.suspendTasks()
	}
}

// rollBackTasks returns every task to its last commit after its
// transaction aborted. The caller holds tasksMu.
func (a *App) rollBackTasks() {
	for _, group := range []map[TaskID]*task{a.tasks, a.suspended} {
		for _, t := range group {
			if err := t.rollBack(); err != nil {
				a.setAsyncError(&TaskFailedError{Task: t.id, Err: err})
			}
		}
	}
}

// rollBack returns the task to its last commit: the record caches and
// pebble's pending writes are dropped, the buffered records too (the
// consumer fetches them again from the committed offsets), and stream time
// and the open windows reload from what pebble committed.
func (t *task) rollBack() error {
	if t.restoring != nil {
		return nil // it processed nothing since it arrived
	}
	for _, st := range t.storeList {
		st.rollBack()
	}
	t.cacheBytes = 0
	for _, q := range t.queues {
		q.rollBack()
	}
	t.streamTime = -1
	return t.start()
}

func (st *taskStore) rollBack() {
	st.clearRows()
	st.order, st.cacheBytes = nil, 0
	st.db.Abort()
	switch {
	case st.win != nil && st.win.mem != nil:
		st.undoBuffer()
	case st.win != nil:
		st.win.releaseIndex()
		st.win = newWindowState(st.spec, st.win.inner)
	}
	if st.unmatched != nil {
		st.unmatched.nextClose = 0 // rows it emitted may be back
	}
}

func (q *partitionQueue) rollBack() {
	q.batches, q.pos = nil, 0
	q.head, q.headReady = record{}, false
	q.next = kgo.EpochOffset{Epoch: -1, Offset: q.committed}
	q.rewound()
}
