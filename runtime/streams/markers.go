package streams

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Under exactly-once a restore runs to the changelog's last stable offset
// (LSO), not its end: the records after it belong to open transactions,
// and those of an instance that crashed are aborted, so waiting for them
// would hold a failover up for the transaction timeout. But the LSO also
// stops before a transaction that is decided and whose markers are not
// all written yet. Kafka's transaction coordinator answers EndTxn once it
// has logged PrepareCommit, then writes a marker on every partition the
// transaction touched, in no order: the group's offsets
// (__consumer_offsets) may be marked committed while the changelog's
// marker waits, for its leader to come back or for a restarted cluster's
// coordinator to finish the job. A task restored to such an LSO lacks
// the transaction's state while its inputs count as processed: counts
// come out short (seen once after a whole-cluster restart on Apache
// Kafka). Kafka Streams restores to the log end instead (KAFKA-10167),
// which waits for every open transaction, a crashed instance's included.
//
// Braid waits for the decided ones only: where the LSO is below the log
// end it asks the partition's leader which producers have a transaction
// open there (DescribeProducers) and the transaction coordinators what
// state those are in (ListTransactions), and lists the LSO again until no
// transaction that is committing holds it back. A transaction that is
// Ongoing is a crashed or fenced owner's (a live owner commits before it
// gives a task up), and is left to be aborted. One whose state no
// coordinator tells, while some coordinator does not answer, is waited for
// too: after a broker is killed, the coordinator that takes its partitions
// of __transaction_state answers COORDINATOR_LOAD_IN_PROGRESS until it has
// read them, and a transaction in PrepareCommit there is committing (seen
// on Apache Kafka: an instance's commit timed out as the leader was killed,
// the standby promoted in its place restored to the LSO before that
// transaction, and counts came out short).

// committingStates are the transaction states whose commit the LSO may
// not show yet: PrepareCommit while markers are written, CompleteCommit
// when they were written after the LSO was listed.
var committingStates = []string{"PrepareCommit", "CompleteCommit"}

// markerPoll is how often awaitCommitMarkers lists the LSO again while a
// committed transaction's markers are being written.
const markerPoll = 50 * time.Millisecond

// awaitCommitMarkers returns the LSOs of ends' partitions once no
// committing transaction holds one back, listing them again until then or
// until ctx ends. When the broker refuses to describe producers or
// transactions (a principal without DESCRIBE on them), it returns ends
// as they are and warns once.
func (a *App) awaitCommitMarkers(ctx context.Context, adm *kadm.Client, ends kadm.ListedOffsets) (kadm.ListedOffsets, error) {
	var waited time.Time
	// passed is the offset each partition's LSO must be past: the start
	// of a committing transaction seen holding it.
	passed := make(map[TopicPartition]int64)
	for {
		if short := shortOf(ends, passed); len(short) > 0 {
			// A committing transaction was seen holding these, and the
			// LSOs listed since do not show its marker: no producer
			// listing may end the wait before they do. After a broker
			// stalled, the LSOs and the producers can be asked of two
			// brokers, the one that led the partition still answering
			// with its stale log (counts came out short on Apache Kafka
			// after a node's SIGSTOP: the restore stopped before a
			// transaction it had seen committing).
			relisted, err := relistAfterPoll(ctx, adm, ends, short)
			if err != nil {
				return nil, err
			}
			ends = relisted
			continue
		}
		held, behind, err := heldBack(ctx, adm, ends, committingStates)
		var ae *kadm.AuthError
		if errors.As(err, &ae) || errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) {
			a.markerWarn.Do(func() {
				a.log.Warn("cannot see which transactions hold changelogs back; restoring to their last stable offsets, which may miss a committed transaction whose markers are late", "err", err)
			})
			return ends, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finding transactions that hold changelogs back: %w", err)
		}
		if !behind {
			return ends, nil // no transaction open on any: nothing to wait for
		}
		if len(held) == 0 {
			// The LSOs were listed before the producers were described:
			// markers written in between moved an LSO on, and the
			// producer may have begun its next transaction since. The
			// LSOs stand only if a new listing finds them where they were.
			relisted, err := listStableOffsets(ctx, adm, ends)
			if err != nil {
				return nil, err
			}
			if sameOffsets(relisted, ends) {
				if !waited.IsZero() {
					a.log.Info("the commit markers came; restoring", "waited", time.Since(waited).Round(time.Millisecond))
				}
				return ends, nil
			}
			ends = relisted
			continue
		}
		if waited.IsZero() {
			waited = time.Now()
			a.log.Info("waiting for the commit markers of committed transactions before restoring", "held", fmt.Sprint(held))
		}
		for _, h := range held {
			tp := TopicPartition{h.Topic, h.Partition}
			passed[tp] = max(passed[tp], h.TxnStart)
		}
		relisted, err := relistAfterPoll(ctx, adm, ends, held)
		if err != nil {
			return nil, err
		}
		ends = relisted
	}
}

// shortOf returns the partitions whose LSO in ends is not yet past the
// offset passed holds for them.
func shortOf(ends kadm.ListedOffsets, passed map[TopicPartition]int64) []TopicPartition {
	var short []TopicPartition
	for tp, start := range passed {
		if o, ok := ends.Lookup(tp.Topic, tp.Partition); !ok || o.Offset <= start {
			short = append(short, tp)
		}
	}
	return short
}

// relistAfterPoll lists the LSOs of the topics of ends again after
// markerPoll, or reports, with the partitions waited for, that ctx ended
// first.
func relistAfterPoll(ctx context.Context, adm *kadm.Client, ends kadm.ListedOffsets, waitingFor any) (kadm.ListedOffsets, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the commit markers of %v: %w", waitingFor, ctx.Err())
	case <-time.After(markerPoll):
	}
	return listStableOffsets(ctx, adm, ends)
}

// listStableOffsets lists the LSOs of the topics of ends again.
func listStableOffsets(ctx context.Context, adm *kadm.Client, ends kadm.ListedOffsets) (kadm.ListedOffsets, error) {
	relisted, err := adm.ListCommittedOffsets(ctx, slices.Collect(maps.Keys(ends))...)
	if err == nil {
		err = relisted.Error()
	}
	return relisted, err
}

// sameOffsets reports whether b lists every partition of a at the same
// offset.
func sameOffsets(a, b kadm.ListedOffsets) bool {
	same := true
	a.Each(func(o kadm.ListedOffset) {
		if other, ok := b.Lookup(o.Topic, o.Partition); !ok || other.Offset != o.Offset {
			same = false
		}
	})
	return same
}

// heldPartition is a changelog partition whose LSO a committing
// transaction holds back.
type heldPartition struct {
	Topic      string
	Partition  int32
	ProducerID int64
	State      string
	// TxnStart is the transaction's first offset on the partition: the
	// LSO is past it once its marker is written.
	TxnStart int64
}

func (h heldPartition) String() string {
	return fmt.Sprintf("%s/%d (producer %d, %s)", h.Topic, h.Partition, h.ProducerID, h.State)
}

// heldBack lists the partitions of lsos whose LSO a transaction in one of
// states holds back, and reports whether any LSO was below its log end.
func heldBack(ctx context.Context, adm *kadm.Client, lsos kadm.ListedOffsets, states []string) (held []heldPartition, behindEnd bool, err error) {
	ends, err := adm.ListEndOffsets(ctx, slices.Collect(maps.Keys(lsos))...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, false, err
	}
	behind := make(kadm.TopicsSet)
	lsos.Each(func(o kadm.ListedOffset) {
		if end, ok := ends.Lookup(o.Topic, o.Partition); ok && end.Offset > o.Offset {
			behind.Add(o.Topic, o.Partition)
		}
	})
	if len(behind) == 0 {
		return nil, false, nil
	}
	described, err := adm.DescribeProducers(ctx, behind)
	if err != nil {
		return nil, true, err
	}
	open := map[int64][]heldPartition{}
	var ids []int64
	var perr error
	described.EachPartition(func(p kadm.DescribedProducersPartition) {
		if p.Err != nil {
			perr = fmt.Errorf("describing the producers of %s/%d: %w", p.Topic, p.Partition, p.Err)
			return
		}
		lso, _ := lsos.Lookup(p.Topic, p.Partition)
		for _, pr := range p.ActiveProducers {
			if pr.CurrentTxnStartOffset < 0 || pr.CurrentTxnStartOffset < lso.Offset {
				continue // no transaction open here, or one the LSO is past
			}
			if !slices.Contains(ids, pr.ProducerID) {
				ids = append(ids, pr.ProducerID)
			}
			open[pr.ProducerID] = append(open[pr.ProducerID], heldPartition{Topic: p.Topic, Partition: p.Partition, ProducerID: pr.ProducerID, TxnStart: pr.CurrentTxnStartOffset})
		}
	})
	if perr != nil {
		return nil, true, perr
	}
	if len(ids) == 0 {
		return nil, true, nil
	}
	// Every broker is asked, as any may coordinate a transactional id,
	// for the transactions of these producers in any state: one that no
	// coordinator lists while some did not answer (a coordinator still
	// loading its partitions of __transaction_state after a broker
	// failed, which answers COORDINATOR_LOAD_IN_PROGRESS, or one that is
	// down) may be committing, and is waited for.
	txns, err := adm.ListTransactions(ctx, ids, nil)
	var se *kadm.ShardErrors
	if err != nil && !(errors.As(err, &se) && !se.AllFailed) {
		return nil, true, err
	}
	return heldBy(ids, open, txns, se != nil, states), true, nil
}

// unknownState is a held partition's State when no coordinator listed its
// producer's transaction while one or more did not answer.
const unknownState = "unknown (its coordinator did not answer)"

// heldBy picks, of the producers ids with a transaction open on the
// partitions open lists, those that hold a partition back: a transaction
// the coordinators listed in one of states, and, when some coordinator
// did not answer (partial), one none listed.
func heldBy(ids []int64, open map[int64][]heldPartition, listed kadm.ListedTransactions, partial bool, states []string) []heldPartition {
	state := make(map[int64]string)
	listed.Each(func(t kadm.ListedTransaction) { state[t.ProducerID] = t.State })
	var held []heldPartition
	for _, id := range ids {
		s, ok := state[id]
		switch {
		case ok && !slices.Contains(states, s):
			continue
		case !ok && !partial:
			continue // no coordinator knows it: no transaction to wait for
		case !ok:
			s = unknownState
		}
		for _, h := range open[id] {
			h.State = s
			held = append(held, h)
		}
	}
	return held
}

// A restore must also not stop before a transaction that has yet to
// commit and has already put its offsets in the group. A member the group
// gave up on (its session expired while a broker was stopped, say) may
// have sent TxnOffsetCommit before the rebalance and EndTxn after it: the
// coordinator takes the EndTxn, since a transaction is not bound to the
// group's membership, and commits. Until then the transaction is Ongoing
// and the changelog's LSO stands before its records, so a restore that
// listed the LSO then would miss them; the new owner's consumer, which
// fetches the group's offsets with RequireStable, waits for the
// transaction and resumes after it. The store would lack the records the
// offsets count as processed, and counts come out short (as seen on
// Apache Kafka after a node was stopped for 15 s, where an instance's
// commit outlived its session). awaitStableOffsets is that fetch, done before the LSO
// is listed: once it returns, a transaction that holds offsets of the
// task's inputs has committed (and awaitCommitMarkers waits for its
// markers) or aborted, and none can add any, since the group refuses
// TxnOffsetCommit of an earlier generation. Kafka Streams restores to the
// log end (KAFKA-10167), which waits for every open transaction.

// stableOffsetsPoll is how often awaitStableOffsets fetches the offsets
// again while a transaction holds some of them.
const stableOffsetsPoll = 50 * time.Millisecond

// transactionCleanupInterval is how often Kafka's transaction coordinator
// looks for transactions open longer than their timeout to abort them
// (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s by
// default): a crashed owner's transaction may hold offsets that long
// past its timeout.
const transactionCleanupInterval = 10 * time.Second

// stableOffsetsWait bounds awaitStableOffsets: a crashed owner's
// transaction is aborted within its timeout and the coordinator's next
// clean-up, and the abort's markers take a broker request.
func (a *App) stableOffsetsWait() time.Duration {
	return a.cfg.TransactionTimeout + transactionCleanupInterval + a.brokerTimeout()
}

// awaitStableOffsets returns once the group's offsets of the input
// partitions of tasks are stable: no open transaction has committed
// offsets for them. It waits until ctx ends at most.
func (a *App) awaitStableOffsets(ctx context.Context, adm *kadm.Client, tasks []*task) error {
	inputs := make(map[TopicPartition]bool)
	for _, t := range tasks {
		if len(t.storeList) == 0 {
			continue // nothing restored: its offsets are the consumer's alone
		}
		for _, q := range t.queues {
			inputs[q.tp] = true
		}
	}
	if len(inputs) == 0 {
		return nil
	}
	var waited time.Time
	for {
		unstable, err := unstableOffsets(ctx, adm, a.cfg.ApplicationID, inputs)
		if err != nil {
			return fmt.Errorf("fetching the group's stable offsets: %w", err)
		}
		if len(unstable) == 0 {
			if !waited.IsZero() {
				a.log.Info("the transaction holding offsets ended; restoring", "waited", time.Since(waited).Round(time.Millisecond))
			}
			return nil
		}
		if waited.IsZero() {
			waited = time.Now()
			a.log.Info("waiting for a transaction that holds offsets of the arriving tasks before restoring", "partitions", fmt.Sprint(unstable))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the transaction holding offsets of %v: %w", unstable, ctx.Err())
		case <-time.After(stableOffsetsPoll):
		}
	}
}

// unstableOffsets fetches group's offsets, requiring stable ones, and
// lists the partitions of inputs for which an open transaction holds
// offsets.
func unstableOffsets(ctx context.Context, adm *kadm.Client, group string, inputs map[TopicPartition]bool) ([]TopicPartition, error) {
	fetched, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
	if errors.Is(err, kerr.UnstableOffsetCommit) {
		return slices.Collect(maps.Keys(inputs)), nil
	}
	if err != nil {
		return nil, err
	}
	var unstable []TopicPartition
	for tp := range inputs {
		o, ok := fetched.Lookup(tp.Topic, tp.Partition)
		switch {
		case !ok:
			continue // never committed
		case errors.Is(o.Err, kerr.UnstableOffsetCommit):
			unstable = append(unstable, tp)
		case o.Err != nil:
			return nil, fmt.Errorf("fetching the offset of %s/%d: %w", tp.Topic, tp.Partition, o.Err)
		}
	}
	slices.SortFunc(unstable, func(x, y TopicPartition) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition - y.Partition)
	})
	return unstable, nil
}
