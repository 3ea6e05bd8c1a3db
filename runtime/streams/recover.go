package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounded waits and recovery.
//
// No wait on the cluster is without a bound, and each has an outcome when
// the bound passes:
//
//   - an exactly-once commit or abort (the flush and the session's End):
//     TransactionTimeout, after which the broker aborts the transaction
//     anyway. End then aborts, or fails and the App recovers (below);
//   - a join of the group (the rebalance hand-off): joinTimeout, longer
//     than the rebalance timeout the App asks the group for
//     (rebalanceTimeout), which is the time the other members may take
//     to commit and rejoin before the coordinator drops them. The App
//     then recovers (below) with a new client, whose connections are
//     new;
//   - everything else that waits on the broker (an at-least-once commit,
//     the changelog ends listed at an assignment or for replicas, a
//     restore or a replica start that receives nothing, leaving the group,
//     initializing the producer id, preparing the topics): brokerTimeout,
//     the larger of SessionTimeout and TransactionTimeout. A member that
//     cannot reach the broker for a session timeout has lost its group
//     session, as far as the group is concerned, so waiting longer only
//     delays the rejoin.
//
// When a bound passes, or the cluster answers with an error that a new
// group session heals (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS, coordinator errors, a producer fenced by its own
// newer epoch after a broker restart, a cut connection), the App recovers
// by itself (recoverSession): it gives its tasks up as lost, closing them
// dirty (their pending pebble batches and record caches are dropped,
// their stores stay at their last checkpoint; under at-least-once the
// records the producer still holds for them are abandoned, see
// abandonProduced), closes the group client and joins again with a new
// one, retrying every retryBackoff until the broker answers. Nothing is lost or, under exactly-once, repeated: the
// next owner of a task resumes from the last committed offsets, with the
// state they imply (restored from the checkpoint and the changelog's
// committed tail), and under exactly-once the new session's producer id
// fences the old one and aborts its open transaction. Under at-least-once
// the outputs of the records since the last commit may come out again.
//
// The App fails only on what no new session heals, with the error Run
// returns: an *AuthorizationError, a *MissingSourceTopicError (a source
// topic deleted), a *FencedError (another live instance with the same
// InstanceID), a broker error that no retry changes (a record too large,
// a bad topic config), or an error of the App's own (a task's, a store's).

// retryBackoff is how long the App waits between attempts to join again
// while the broker does not answer: short, since an attempt to an absent
// broker fails at once and one to a frozen broker waits its bound, and
// the App should resume within a moment of the broker's return.
const retryBackoff = 250 * time.Millisecond

// fenceWindow is how soon a second fence of the producer means another
// live instance with the same InstanceID rather than this one's older
// epoch after a broker restart: two such instances fence each other at
// every rejoin, seconds apart.
const fenceWindow = time.Minute

// brokerTimeout bounds every wait on the broker but a transaction's; see
// the comment at the top.
func (a *App) brokerTimeout() time.Duration {
	return max(a.cfg.SessionTimeout, a.cfg.TransactionTimeout)
}

// rebalanceTimeout is the rebalance timeout the App's member sends when
// it joins: how long the coordinator waits for a member to rejoin (and to
// sync) once a rebalance began, before it drops the member and goes on
// without it. A member rejoins once its commit before the rebalance is
// done (brokerTimeout at most) and its current poll is processed (a
// session timeout's margin). franz-go's default, 60 s, is what a member
// that died during a join holds the group for: while it does, the other
// members' commits wait (franz-go holds them during a join), and each
// member that joins meanwhile starts the coordinator's wait again (kfake
// restarts its timer at every join), so members giving up their joins at
// joinTimeout, and joining again, kept a group from ever completing.
func (a *App) rebalanceTimeout() time.Duration {
	return a.brokerTimeout() + a.cfg.SessionTimeout
}

// joinTimeout bounds a join of the group: longer than the coordinator
// waits for the members that do not rejoin (rebalanceTimeout), by one
// session timeout, in which the members that left without a word time
// out, so that only a join that cannot complete passes it.
func (a *App) joinTimeout() time.Duration {
	return a.rebalanceTimeout() + a.cfg.SessionTimeout
}

// joinOverdue fails with a broker error when the group client has been
// joining for longer than joinTimeout: franz-go may wait on a connection
// to a broker that is gone, and only a new client makes new connections.
func (a *App) joinOverdue() error {
	since := a.unassignedSince.Load()
	if since == 0 || time.Since(time.Unix(0, since)) < a.joinTimeout() {
		return nil
	}
	return brokerErr("joining the group", errNoProgress)
}

// brokerError marks an error of a request to the cluster, which triage
// tells apart from the App's own (a task's, a store's).
type brokerError struct {
	op  string // what the App was doing: "committing offsets"
	err error
}

func (e *brokerError) Error() string { return e.op + ": " + e.err.Error() }

func (e *brokerError) Unwrap() error { return e.err }

// brokerErr marks err, if any, as the cluster's answer to op.
func brokerErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &brokerError{op: op, err: err}
}

// errSessionLost is the cause of an outage that franz-go found first: its
// heartbeat or join failed, and it gives the tasks up (onLost) and joins
// again by itself.
var errSessionLost = errors.New("the group session expired or the coordinator is unreachable")

// errTasksAbandoned is what an at-least-once commit fails with when the
// records it flushed were abandoned meanwhile, with the tasks whose
// session was lost (abandonProduced).
var errTasksAbandoned = errors.New("the records to flush were abandoned with their tasks, whose group session was lost")

// errNoProgress is what a wait that received nothing within its bound
// fails with.
var errNoProgress = errors.New("the broker sent nothing within the bound")

// sessionErrors are the broker errors that franz-go does not retry itself
// and that a new group session or producer heals.
var sessionErrors = []error{
	kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, kerr.StaleMemberEpoch,
	kerr.GroupIDNotFound, kerr.UnknownProducerID, kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerIDMapping,
	kerr.InvalidTxnState, kerr.TransactionAbortable, kerr.UnknownServerError, kerr.OperationNotAttempted,
	kerr.TransactionCoordinatorFenced,
}

// authErrors are the broker's refusals that no retry heals.
var authErrors = []error{
	kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
	kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed, kerr.DelegationTokenAuthorizationFailed,
}

// triage returns nil when a new group session heals err, and else the
// error Run returns: a typed one when the caller can act on it.
func (a *App) triage(err error) error {
	var be *brokerError
	if !errors.As(err, &be) {
		return err // the App's own: a task's, a store's, a topology's
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return nil // a bound passed, a connection was cut, a client closed
	}
	switch {
	case isAny(err, authErrors):
		return &AuthorizationError{Op: be.op, Err: err}
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return a.fenced(err)
	case ke.Retriable, isAny(err, sessionErrors):
		return nil
	}
	return err
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// fenced judges a fenced producer. Under at-least-once the producer is
// idempotent only, and no other instance can fence it. Under exactly-once
// the first fence is taken for this instance's own older epoch (the
// broker restarted, or a session of this App that it gave up); a second
// within fenceWindow means another live instance with the same
// InstanceID, which is newer, since it fenced this one.
func (a *App) fenced(err error) error {
	if a.txn == nil {
		return nil
	}
	now := time.Now()
	last := a.lastFence
	a.lastFence = now
	if !last.IsZero() && now.Sub(last) < fenceWindow {
		return &FencedError{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, TransactionalID: a.transactionalID(), Err: err}
	}
	return nil
}

// run processes until ctx ends, recovering from what a new session heals,
// and returns what it cannot recover from.
func (a *App) run(ctx context.Context) error {
	for {
		err := a.loop(ctx)
		if err == nil || a.crashing.Load() {
			return err
		}
		if fatal := a.triage(err); fatal != nil {
			return fatal
		}
		if err := a.recoverSession(ctx, err); err != nil {
			return err
		}
		if a.kc() == nil {
			return nil // ctx ended before a new session started
		}
	}
}

// recoverSession gives the tasks up as lost, closes the group client and
// joins the group again with a new one; see the comment at the top. It
// returns nil once the new client runs or ctx ended, and the error when
// one that no retry heals came up.
func (a *App) recoverSession(ctx context.Context, cause error) error {
	var be *brokerError
	if err := a.producedError(); err != nil && !errors.As(err, &be) {
		return err // the App's own, met off the processing goroutine meanwhile
	}
	a.outageBegan(cause)
	a.setState(Rebalancing)
	// The client given up may still finish a join it had under way while
	// it leaves the group, and call onAssigned after its tasks were
	// dropped. Taken up, those tasks would outlive their session: their
	// restores, started on the closing client, ended unseen (resetSession
	// forgets finished restores), and the tasks stayed restoring for good
	// under the next session, which found them already there (a worker
	// processed nothing after a broker's SIGSTOP on Apache Kafka). Its
	// callbacks take nothing up from here on.
	a.givenUp.Store(a.kc())
	a.dropTasks(false)
	a.closeClient()
	a.resetSession()
	return a.connect(ctx)
}

// resetSession forgets what belonged to the closed client: its
// transaction's state and its produce errors. The caller closed it, so
// no callback of its can set them again.
func (a *App) resetSession() {
	a.givenUp.Store(nil) // closed: it calls nothing back any more
	if t := a.txn; t != nil {
		t.sess, t.failed = nil, nil
		t.dirty.Store(false)
		t.mustAbort.Store(false)
		t.rebalanceWaiting.Store(false)
	}
	a.asyncErrMu.Lock()
	a.asyncErr = nil
	a.asyncErrMu.Unlock()
	a.finishedMu.Lock()
	a.finished = nil // restorations of the dropped tasks
	a.finishedMu.Unlock()
}

// connect prepares the topics and starts the group client, retrying
// every retryBackoff while the broker does not answer or answers with
// what a retry may heal. It returns nil when the client runs or ctx
// ended (the App's client is then nil), else the error no retry heals.
func (a *App) connect(ctx context.Context) error {
	last := ""
	for {
		err := a.tryConnect(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if fatal := a.triage(err); fatal != nil {
			return fatal
		}
		a.outageBegan(err)
		// Each new reason once, not each attempt: what an outage that
		// lasts is stuck on.
		if msg := err.Error(); msg != last {
			a.log.Info("joining the group failed; retrying", "err", err)
			last = msg
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryBackoff):
		}
	}
}

func (a *App) tryConnect(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	if err := a.prepareTopics(pctx); err != nil {
		return err
	}
	return a.startClient()
}

// closeClient closes the group client (leaveAndClose).
func (a *App) closeClient() {
	cl := a.kc()
	if cl == nil {
		return
	}
	a.leaveAndClose(cl)
	a.lister.running.Wait()
	a.client.Store(nil)
}

// leaveAndClose closes the group client cl. It leaves the group first if
// the broker answers within brokerTimeout, so that the group rebalances
// at once; else it cuts the client's connections, and the group notices
// when the session times out.
func (a *App) leaveAndClose(cl *kgo.Client) {
	cl.AllowRebalance()
	ctx, cancel := context.WithTimeout(a.clientCtx, a.brokerTimeout())
	err := cl.LeaveGroupContext(ctx)
	cancel()
	if err != nil {
		a.sessionCancel()
	}
	cl.Close()
	a.sessionCancel()
}

// outageBegan logs the start of an outage once, rather than a line per
// failed request, and reports it to the ErrorHooks as not fatal.
func (a *App) outageBegan(cause error) {
	if !a.outageAt.CompareAndSwap(0, time.Now().UnixNano()) {
		return
	}
	a.log.Warn("lost the group session; giving up the tasks and joining again", "err", cause)
	a.reportError(TaskID{}, fmt.Errorf("losing the group session: %w", cause), false)
}

// outageEnded logs the end of an outage, when the group assigned this
// instance its tasks again.
func (a *App) outageEnded() {
	at := a.outageAt.Swap(0)
	if at == 0 {
		return
	}
	a.log.Info("joined the group again; processing resumes", "outage", time.Since(time.Unix(0, at)).Round(time.Millisecond))
}
