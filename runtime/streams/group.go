package streams

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/braidstream/braid/runtime/internal/assign"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startClient creates the App's franz-go client: one client consumes as a
// group member and produces, so that a commit can flush exactly what the
// processed records produced.
func (a *App) startClient() error {
	topics := slices.Sorted(maps.Keys(a.sources))
	// Tuning first, so that Config.ClientOptions can change it; what
	// the App relies on last, so that nothing can.
	opts := []kgo.Opt{
		// A fetch brings tens of thousands of records per partition, so
		// polls are large and round trips few.
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
		// Partitions assigned while a fetch waits for data join the
		// next fetch only, so a task taken over from a crashed instance
		// waits for the fetch in flight to come back before its first
		// record: up to franz-go's 5 s (seen with a repartition topic
		// the dead instance fed), and on Apache Kafka, with Kafka's own
		// 500 ms, about 470 ms of a standby's takeover (bench failover
		// --brokers: recovery 485 ms, downtime 882 ms; at 100 ms, 27 ms
		// and 291 ms). An idle consumer asks 10 times a second instead
		// of twice: nothing to a broker.
		kgo.FetchMaxWait(100 * time.Millisecond),
		// No linger: while a produce request is in flight the next batch
		// fills anyway, and lingering only delays the flush of a commit.
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(1_000_000),
		// A whole poll's outputs fit in the buffer without blocking.
		kgo.MaxBufferedRecords(250_000),
		// A broker that comes back is found within a second, not the
		// default 5 s: the producer waits for a metadata refresh to
		// reach it again, and a commit waits for the producer.
		kgo.MetadataMinAge(time.Second),
	}
	opts = append(opts, a.cfg.ClientOptions...)
	opts = append(opts, a.reach.watch(a.log)...)
	opts = append(opts,
		kgo.SeedBrokers(a.cfg.Brokers...),
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(a.balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// Transaction markers come with the records, so that the tasks
		// know the consumer's position past them (see idle.go).
		kgo.KeepControlRecords(),
		kgo.SessionTimeout(a.cfg.SessionTimeout),
		kgo.RebalanceTimeout(a.rebalanceTimeout()),
		kgo.HeartbeatInterval(a.cfg.HeartbeatInterval),
		kgo.WithContext(a.newSessionContext()),
		kgo.OnPartitionsAssigned(a.onAssigned),
		kgo.OnPartitionsRevoked(a.onRevoked),
		kgo.OnPartitionsLost(a.onLost),
		// Kafka's default partitioner (murmur2 of the key), so that
		// repartition topics agree with every other Kafka client.
		kgo.RecordPartitioner(streamsPartitioner{changelogs: a.changelogTopics()}),
	)
	if a.cfg.StaticMembership {
		opts = append(opts, kgo.InstanceID(a.cfg.InstanceID))
	}
	a.produceCtx = context.Background()
	a.idling = a.cfg.MaxTaskIdle != MaxTaskIdleDisabled
	if a.txn != nil {
		cl, err := a.startTransactions(append(opts, a.exactlyOnceOptions()...))
		if err != nil {
			return err
		}
		a.client.Store(cl)
		return nil
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	a.client.Store(cl)
	return nil
}

// newBalancer returns the group balancer: it tells the leader what state
// this instance holds, and plans with the App's high-availability
// settings when this instance leads.
func (a *App) newBalancer() *assign.Balancer {
	return assign.New(assign.Options{
		Subtopologies:         a.subtopologyInfo(),
		Instance:              a.cfg.InstanceID,
		Server:                a.cfg.ApplicationServer,
		Tags:                  a.cfg.RackTags,
		StandbyReplicas:       a.cfg.StandbyReplicas,
		AcceptableRecoveryLag: a.cfg.AcceptableRecoveryLag,
		Cooperative:           a.cfg.RebalanceProtocol == RebalanceCooperative,
		MaxWarmupReplicas:     a.cfg.MaxWarmupReplicas,
		ProbingInterval:       a.cfg.ProbingRebalanceInterval,
		Held:                  a.heldState,
		Ends:                  a.listEnds,
		Warn:                  func(msg string) { a.log.Warn("assignment: " + msg) },
	})
}

// listEnds lists the end offsets of changelog topics for the balancer.
// The group client may not be the App's yet: under exactly-once the group
// joins, and this instance may lead its first rebalance, while the App
// still waits for the transactional id's producer id (seen on Apache
// Kafka, where fencing a predecessor's transaction takes a while). A
// client of its own then lists them, rather than placing every task by
// the state members report.
func (a *App) listEnds(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	cl := a.kc()
	if cl == nil {
		own, err := a.newAdminClient()
		if err != nil {
			return nil, err
		}
		defer own.Close()
		cl = own
	}
	listed, err := a.listChangelogEnds(ctx, kadm.NewClient(cl), topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = make(map[int32]int64)
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, nil
}

// newSessionContext makes the context of a new group client; see
// sessionCtx.
func (a *App) newSessionContext() context.Context {
	a.unassignedSince.Store(time.Now().UnixNano())
	a.sessionCtx, a.sessionCancel = context.WithCancel(a.clientCtx)
	return a.sessionCtx
}

// commit flushes everything produced so far and then commits the offsets
// processed since the last commit. Order matters: an offset is committed
// only once the outputs of the records before it are acknowledged. It
// waits brokerTimeout at most: a commit that fails or times out leaves
// the offsets where they were, and the records after them are processed
// again, by this instance once it joined again (recover.go) or by the
// next owner.
func (a *App) commit(ctx context.Context) error {
	if a.txn != nil {
		return a.commitTransaction(ctx)
	}
	return a.commitTasks(ctx, nil, false)
}

// intervalCommit is the commit the commit interval calls for. Under
// at-least-once its offset commit gives way to a join that begins
// meanwhile, with errCommitDeferred (join_gate.go).
func (a *App) intervalCommit(ctx context.Context) error {
	if a.txn != nil {
		return a.commitTransaction(ctx)
	}
	return a.commitTasks(ctx, nil, true)
}

// commitTasks is the at-least-once commit of the tasks in only, or of
// every task when only is nil: a cooperative revocation commits the
// revoked tasks alone, so that the others commit when their interval is
// due, as if no rebalance happened. A yielding commit leaves its offsets
// uncommitted if a join begins before they are (errCommitDeferred); its
// outputs are flushed and its stores applied by then, which a later
// commit of the same offsets finds done.
func (a *App) commitTasks(ctx context.Context, only map[TaskID]bool, yielding bool) error {
	ctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	// The producer's records abandoned while this commit flushes
	// (abandonProduced: the session was lost) were never acknowledged:
	// the stores must not take the checkpoint after them, nor the
	// group the offsets of their inputs.
	abandoned := a.abandoned.Load()
	flushed := func(err error, what string) error {
		if err == nil && a.abandoned.Load() != abandoned {
			err = errTasksAbandoned
		}
		if err != nil {
			return brokerErr(what, err)
		}
		return a.producedError()
	}
	offsets, queues := a.processedOffsets(only)
	stateful := false
	for _, t := range a.tasks {
		if only != nil && !only[t.id] {
			continue
		}
		if t.restoring == nil && len(t.storeList) > 0 {
			stateful = true
			if err := t.flushStores(); err != nil {
				return &TaskFailedError{Task: t.id, Err: err}
			}
		}
	}
	if len(queues) == 0 && !stateful {
		return nil
	}
	start := time.Now()
	if err := flushed(a.kc().Flush(ctx), "flushing produced records"); err != nil {
		return err
	}
	if a.markStreamTimes(only) {
		if err := flushed(a.kc().Flush(ctx), "flushing stream-time markers"); err != nil {
			return err
		}
	}
	// Every changelog record is acknowledged now: the stores may apply
	// their pending writes with the checkpoint that says so, and only
	// then are the input offsets committed.
	if err := a.applyStores(only, nil); err != nil {
		return err
	}
	if len(queues) == 0 {
		return nil
	}
	commitCtx := ctx
	if yielding {
		var done func()
		var ok bool
		if commitCtx, done, ok = a.joins.commitContext(ctx, a.joining); !ok {
			return errCommitDeferred
		}
		defer done()
	}
	var commitErr error
	a.kc().CommitOffsetsSync(commitCtx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		var errs []error
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err))
				}
			}
		}
		commitErr = errors.Join(errs...)
	})
	if commitErr != nil {
		if commitCtx.Err() != nil && ctx.Err() == nil {
			return errCommitDeferred
		}
		return brokerErr("committing offsets", commitErr)
	}
	a.committed(ctx, queues, start)
	return nil
}

// listChangelogEnds lists the offsets up to which changelogs can be read:
// their ends, or under exactly-once their last stable offsets, since a
// read-committed reader cannot read past an open transaction (one a
// crashed instance left open stays so until it is aborted).
//
// On Kafka a changelog just created (by this instance or another) may be
// unknown, or without a leader, at the broker asked for a moment after its
// creation: such answers are asked again, for newTopicWait at most, rather
// than failing the assignment or the restore that needs the offsets.
func (a *App) listChangelogEnds(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.ListedOffsets, error) {
	wctx, cancel := context.WithTimeout(ctx, newTopicWait)
	defer cancel()
	for {
		var listed kadm.ListedOffsets
		var err error
		if a.txn != nil {
			listed, err = adm.ListCommittedOffsets(wctx, topics...)
		} else {
			listed, err = adm.ListEndOffsets(wctx, topics...)
		}
		if err == nil {
			err = listed.Error()
		}
		if err == nil || !(kerr.IsRetriable(err) || errors.Is(err, kerr.UnknownTopicOrPartition)) {
			return listed, err
		}
		select {
		case <-wctx.Done():
			return listed, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newTopicWait bounds how long listChangelogEnds waits for a new topic's
// partitions to be known: metadata reaches every Kafka broker within
// moments of a topic's creation.
const newTopicWait = 10 * time.Second

// applyStores lets every store of the tasks that run (those in only, when
// not nil) apply its pending writes with its checkpoint; afterFirst, when
// set, runs once the first store applied. The caller holds tasksMu.
func (a *App) applyStores(only map[TaskID]bool, afterFirst func() error) error {
	for _, t := range a.tasks {
		if t.restoring != nil || (only != nil && !only[t.id]) {
			continue
		}
		for _, st := range t.storeList {
			if err := st.commit(t.streamTime); err != nil {
				return &TaskFailedError{Task: t.id, Err: err}
			}
			if a.snaps != nil {
				a.snaps.offer(t, st)
			}
			if afterFirst != nil {
				if err := afterFirst(); err != nil {
					return err
				}
				afterFirst = nil
			}
		}
	}
	return nil
}

// processedOffsets returns the offsets to commit: of each input partition
// processed since the last commit, the offset after its last processed
// record; only those of the tasks in only when it is not nil. The caller
// holds tasksMu.
func (a *App) processedOffsets(only map[TaskID]bool) (map[string]map[int32]kgo.EpochOffset, []*partitionQueue) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var queues []*partitionQueue
	for tp, q := range a.byTP {
		if only != nil && !only[a.taskOf[tp].id] {
			continue
		}
		if q.next.Offset > q.committed {
			if offsets[q.tp.Topic] == nil {
				offsets[q.tp.Topic] = make(map[int32]kgo.EpochOffset)
			}
			offsets[q.tp.Topic][q.tp.Partition] = q.next
			queues = append(queues, q)
		}
	}
	return offsets, queues
}

// committed records that the offsets of queues are committed, reports the
// commit that began at start and purges what no one reads again.
func (a *App) committed(ctx context.Context, queues []*partitionQueue, start time.Time) {
	if len(queues) == 0 {
		return
	}
	committed := make(map[TopicPartition]int64, len(queues))
	for _, q := range queues {
		q.committed = q.next.Offset
		committed[q.tp] = q.next.Offset
	}
	ev := CommitEvent{ApplicationID: a.cfg.ApplicationID, InstanceID: a.cfg.InstanceID, Offsets: committed, Took: time.Since(start)}
	for _, h := range a.hooks.commit {
		h.OnCommit(ev)
	}
	a.purgeRepartitions(ctx, committed)
}

// markStreamTimes writes the stream time of every task with windowed
// stores to their changelogs, after the flush that acknowledged the
// results emitted up to it (see taskStore.markStreamTime), and reports
// whether it wrote any; only for the tasks in only when it is not nil.
func (a *App) markStreamTimes(only map[TaskID]bool) bool {
	wrote := false
	for _, t := range a.tasks {
		if t.restoring != nil || (only != nil && !only[t.id]) {
			continue
		}
		for _, st := range t.windowed {
			wrote = st.markStreamTime(t) || wrote
		}
	}
	return wrote
}

// purgeRepartitions deletes, at most every RepartitionPurgeInterval, the
// records of repartition topics that are committed: nobody reads them
// again, and a repartition topic would otherwise grow without bound. It is
// best effort; the next purge retries.
func (a *App) purgeRepartitions(ctx context.Context, committed map[TopicPartition]int64) {
	if time.Since(a.lastPurge) < a.cfg.RepartitionPurgeInterval {
		return
	}
	var offsets kadm.Offsets
	for tp, off := range committed {
		if src := a.sources[tp.Topic]; src != nil && src.internal {
			offsets.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: off})
		}
	}
	if len(offsets) == 0 {
		return
	}
	a.lastPurge = time.Now()
	resps, err := kadm.NewClient(a.kc()).DeleteRecords(ctx, offsets)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		a.log.Warn("purging committed repartition records failed", "err", err)
	}
}

// enterRebalancing marks a rebalance, unless the revocation is the App
// leaving the group on shutdown, which it reports.
func (a *App) enterRebalancing() (leaving bool) {
	a.mu.Lock()
	leaving = a.state == PendingShutdown || a.state == Failed
	a.mu.Unlock()
	if !leaving {
		a.unassignedSince.CompareAndSwap(0, time.Now().UnixNano())
		a.joins.cutShort()
		a.setState(Rebalancing)
	}
	return leaving
}

// streamsPartitioner writes changelog records to the partition of their
// task, which each record names, and everything else by Kafka's default
// key hash (murmur2), so that repartition topics agree with every other
// Kafka client.
type streamsPartitioner struct {
	changelogs map[string]bool
}

var (
	manualPartitioner = kgo.ManualPartitioner()
	keyPartitioner    = kgo.StickyKeyPartitioner(nil)
)

func (p streamsPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.changelogs[topic] {
		return manualPartitioner.ForTopic(topic)
	}
	return keyPartitioner.ForTopic(topic)
}

// changelogTopics returns the real names of all changelog topics.
func (a *App) changelogTopics() map[string]bool {
	out := make(map[string]bool)
	for _, n := range a.topo.nodes {
		for _, spec := range n.storeSpecs {
			if spec.logged {
				out[changelogTopic(a.cfg.ApplicationID, spec.name)] = true
			}
		}
	}
	return out
}
