package streams

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Task idling, as Kafka Streams' max.task.idle.ms (KIP-695). A task that
// reads several partitions takes the record with the lowest timestamp
// next, but only among the records it has buffered. When one partition is
// empty here while the broker holds records for it, taking the others'
// records would let stream time run ahead of that partition and close
// windows before its records arrive. So before each record the task
// checks its empty partitions (readyToProcess): one whose lag is unknown
// or positive makes it wait for the fetch; one known to be caught up
// makes it wait Config.MaxTaskIdle, after which it goes on without that
// partition ("enforced processing", counted in TaskStats).
//
// The lag is what the consumer has fetched against what the broker lets
// it read: the high watermark, or under exactly-once the last stable
// offset. franz-go says neither where its fetch position is nor anything
// of a fetch without records, and a transaction's commit marker takes an
// offset that no record has: a partition that ends with one would seem to
// lag by one forever. So the App's consumer keeps the markers
// (kgo.KeepControlRecords): the offset after the last record or marker it
// handed over is its position, and each fetch says what can be read. A
// partition the consumer has handed nothing of since the task arrived (an
// empty or caught-up partition yields no fetch) has no known lag; the App
// lists its start and readable end and compares them with the offset the
// consumer starts from (listLags). One thing still moves the position
// unseen: a batch that compaction emptied, which the consumer steps over
// without handing anything over. So a partition that seems to lag but
// yields nothing for lagStaleAfter is listed again: when nothing was
// written since, what lay between its position and its end was nothing to
// read, and it is caught up.

// MaxTaskIdleDisabled, as Config.MaxTaskIdle, turns task idling off: a
// task processes whatever it has buffered, in timestamp order among that,
// without waiting for its other partitions (Kafka Streams'
// max.task.idle.ms = -1).
const MaxTaskIdleDisabled time.Duration = -1

// lagStaleAfter is how long a partition may seem to lag while the consumer
// hands over nothing of it before the App checks whether anything is left
// to read. A fetch of records the broker holds takes a round trip, so this
// is rarely reached but by a partition whose end only an emptied batch
// fills; were it reached by a slow fetch, the task would go on as after
// an idle deadline, which Kafka Streams allows too.
const lagStaleAfter = 10 * time.Second

// staleAfter is lagStaleAfter, or what a test set instead.
func (a *App) staleAfter() time.Duration {
	if a.lagStale > 0 {
		return a.lagStale
	}
	return lagStaleAfter
}

// taskIdle is a task's state of waiting.
type taskIdle struct {
	// since is when the task began to wait while it had records
	// buffered, zero while it does not wait; waitingOn are the empty
	// partitions it waits for, toList those of them whose lag must be
	// listed: unknown, or stale. wake is the earliest deadline among
	// them (idle or stale), zero when none has one.
	since     time.Time
	waitingOn []TopicPartition
	toList    []*partitionQueue
	wake      time.Time
	// enforced counts the records processed while a partition was empty
	// and its idle time had passed.
	enforced int64
}

// lag is how many offsets the broker lets the consumer read past what it
// has handed over, -1 when unknown.
func (q *partitionQueue) lag() int64 {
	if q.fetched < 0 || q.readable < 0 {
		return -1
	}
	return max(0, q.readable-q.fetched)
}

// noteFetch records what a fetch of the partition said and returns its
// records without the transaction markers, which only move the position.
func (q *partitionQueue) noteFetch(p *kgo.FetchPartition, readCommitted bool) []*kgo.Record {
	q.endOffset = p.HighWatermark
	q.readable = p.HighWatermark
	if readCommitted {
		q.readable = p.LastStableOffset
	}
	recs := p.Records
	if len(recs) == 0 {
		return nil
	}
	q.fetched = max(q.fetched, recs[len(recs)-1].Offset+1)
	q.laggingSince = time.Time{}
	i := slices.IndexFunc(recs, func(r *kgo.Record) bool { return r.Attrs.IsControl() })
	if i < 0 {
		return recs
	}
	// Copied, once per fetch that has markers: they are few (one per
	// transaction), and most fetches have none.
	out := slices.Clone(recs[:i])
	for _, r := range recs[i+1:] {
		if !r.Attrs.IsControl() {
			out = append(out, r)
		}
	}
	return out
}

// rewound forgets what the consumer had fetched: it fetches again from the
// committed offset.
func (q *partitionQueue) rewound() {
	q.fetched, q.readable = -1, -1
	q.idleDeadline, q.laggingSince = time.Time{}, time.Time{}
	q.listing = false
	q.epoch++
}

// nextReady is nextQueue behind the idling rule: nil while the task waits.
func (t *task) nextReady() *partitionQueue {
	if t.app.idling && len(t.queues) > 1 && !t.readyToProcess(time.Now) {
		return nil
	}
	return t.nextQueue()
}

// readyToProcess reports whether the task may take its next record now,
// as Kafka Streams' PartitionGroup.readyToProcess decides, and keeps the
// task's idle state. Every empty partition is looked at, not only up to
// the first that makes the task wait, so that the state names them all.
// now is called only when a partition is empty.
func (t *task) readyToProcess(now func() time.Time) bool {
	var at time.Time
	clock := func() time.Time {
		if at.IsZero() {
			at = now()
		}
		return at
	}
	queued, waiting, enforced := 0, false, false
	wait := &t.idle
	wait.waitingOn, wait.toList = wait.waitingOn[:0], wait.toList[:0]
	if !wait.wake.IsZero() {
		wait.wake = time.Time{}
	}
	for _, q := range t.queues {
		if !q.empty() {
			// Written only when set: this runs for every record, and
			// a time.Time holds a pointer, whose every write costs a
			// write barrier while the GC marks.
			if !q.idleDeadline.IsZero() || !q.laggingSince.IsZero() {
				q.idleDeadline, q.laggingSince = time.Time{}, time.Time{}
			}
			queued++
			continue
		}
		if t.waitsFor(q, clock) {
			waiting = true
			wait.waitingOn = append(wait.waitingOn, q.tp)
		} else {
			enforced = true
		}
	}
	switch {
	case queued == 0:
		// Nothing to process: the task is not waiting, it is done.
		t.stopIdling()
		return false
	case waiting:
		if wait.since.IsZero() {
			wait.since = clock()
			t.app.log.Debug("task waits for records of empty partitions", "task", t.id.String(), "partitions", fmt.Sprint(wait.waitingOn))
		}
		return false
	}
	t.stopIdling()
	if enforced {
		wait.enforced++
	}
	return true
}

// waitsFor says whether the task must wait for empty partition q, noting
// the lags to list and the deadlines to wake up at.
func (t *task) waitsFor(q *partitionQueue, clock func() time.Time) bool {
	wait := &t.idle
	wakeAt := func(at time.Time) {
		if wait.wake.IsZero() || at.Before(wait.wake) {
			wait.wake = at
		}
	}
	switch lag := q.lag(); {
	case lag < 0:
		// Nothing fetched yet: the broker may hold records.
		q.idleDeadline, q.laggingSince = time.Time{}, time.Time{}
		wait.toList = append(wait.toList, q)
	case lag > 0:
		// The broker holds records not fetched yet.
		q.idleDeadline = time.Time{}
		if q.laggingSince.IsZero() {
			q.laggingSince = clock()
		}
		if stale := q.laggingSince.Add(t.app.staleAfter()); clock().Before(stale) {
			wakeAt(stale)
		} else {
			wait.toList = append(wait.toList, q)
		}
	default:
		// Caught up: wait MaxTaskIdle from when the task first found
		// it so, then go on without it.
		q.laggingSince = time.Time{}
		if q.idleDeadline.IsZero() {
			q.idleDeadline = clock().Add(max(0, t.app.cfg.MaxTaskIdle))
		}
		if !clock().Before(q.idleDeadline) {
			return false
		}
		wakeAt(q.idleDeadline)
	}
	return true
}

// stopIdling ends the task's wait.
func (t *task) stopIdling() {
	if !t.idle.since.IsZero() || !t.idle.wake.IsZero() { // see readyToProcess
		t.idle.since, t.idle.wake = time.Time{}, time.Time{}
	}
	t.idle.waitingOn, t.idle.toList = t.idle.waitingOn[:0], t.idle.toList[:0]
}

// idleLister lists, off the processing goroutine, the lags the App does
// not know of partitions that idling tasks wait for. running counts the
// listings under way: closeClient waits for them, so that none outlives
// the client it lists with (each ends soon once the session's context is
// cancelled).
type idleLister struct {
	running sync.WaitGroup
	mu      sync.Mutex
	done    []listedLag
}

// listedLag is a listing's answer for one partition: the position the
// consumer reads from and the offset it can read up to.
type listedLag struct {
	lagRequest
	position, end int64
	err           error
}

// lagRequest is what the listing needs of a queue, copied on the
// processing goroutine: the offset its task resumes at, and what the
// consumer had handed over of it (fetched -1 for nothing).
type lagRequest struct {
	q                 *partitionQueue
	tp                TopicPartition
	epoch             int
	next              int64
	fetched, readable int64
}

// tasksToRecheck adds to tasks every waiting task not among them: a fetch
// or a listing may have ended its wait, or its deadline passed. The
// caller holds tasksMu.
func (a *App) tasksToRecheck(tasks []*task) []*task {
	if !a.idling {
		return tasks
	}
	for _, t := range a.tasks {
		if !t.idle.since.IsZero() && t.restoring == nil && !slices.Contains(tasks, t) {
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// afterIdling starts listing the unknown lags the waiting tasks need and
// sets idleWake, when the next of their deadlines passes. The caller holds
// tasksMu.
func (a *App) afterIdling() {
	a.idleWake = time.Time{}
	if !a.idling {
		return
	}
	var reqs []lagRequest
	for _, t := range a.tasks {
		if t.idle.since.IsZero() || t.restoring != nil {
			continue
		}
		if w := t.idle.wake; !w.IsZero() && (a.idleWake.IsZero() || w.Before(a.idleWake)) {
			a.idleWake = w
		}
		for _, q := range t.idle.toList {
			if !q.listing {
				q.listing = true
				reqs = append(reqs, lagRequest{q: q, tp: q.tp, epoch: q.epoch, next: q.next.Offset, fetched: q.fetched, readable: q.readable})
			}
		}
	}
	if len(reqs) > 0 {
		ctx, cl := a.sessionCtx, a.kc()
		a.lister.running.Add(1)
		go func() {
			defer a.lister.running.Done()
			a.listLags(ctx, cl, reqs)
		}()
	}
}

// listLags lists where the consumer reads the partitions of reqs from and
// how far it can read, and wakes the processing goroutine with the answer.
// The consumer has handed over nothing of them since their tasks arrived
// or rewound, so it reads from the offset the task resumes at (committed,
// or the group's committed offset, or the log start) and never before the
// log start; that a transaction marker lies there does not matter, since
// the consumer hands markers over.
func (a *App) listLags(ctx context.Context, cl *kgo.Client, reqs []lagRequest) {
	ctx, cancel := context.WithTimeout(ctx, a.brokerTimeout())
	defer cancel()
	topics := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if !slices.Contains(topics, r.tp.Topic) {
			topics = append(topics, r.tp.Topic)
		}
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = a.listChangelogEnds(ctx, adm, topics...)
	}
	committed := cl.CommittedOffsets()
	out := make([]listedLag, 0, len(reqs))
	for _, r := range reqs {
		l := listedLag{lagRequest: r, err: err}
		if err == nil {
			l.position, l.end, l.err = listedPosition(r, starts, ends, committed)
		}
		if l.err != nil {
			l.err = fmt.Errorf("listing the lag of %s: %w", r.tp, l.err)
		}
		out = append(out, l)
	}
	a.lister.mu.Lock()
	a.lister.done = append(a.lister.done, out...)
	a.lister.mu.Unlock()
	a.wakePoll()
}

// listedPosition works out a partition's position and readable end from
// the listed offsets.
func listedPosition(r lagRequest, starts, ends kadm.ListedOffsets, committed map[string]map[int32]kgo.EpochOffset) (position, readable int64, err error) {
	start, ok := starts.Lookup(r.tp.Topic, r.tp.Partition)
	if !ok {
		return 0, 0, fmt.Errorf("no start offset listed")
	}
	end, ok := ends.Lookup(r.tp.Topic, r.tp.Partition)
	if !ok {
		return 0, 0, fmt.Errorf("no end offset listed")
	}
	if start.Err != nil {
		return 0, 0, start.Err
	}
	if end.Err != nil {
		return 0, 0, end.Err
	}
	position = r.next
	if position < 0 {
		position = -1
		if c, ok := committed[r.tp.Topic][r.tp.Partition]; ok {
			position = c.Offset
		}
	}
	return max(position, start.Offset), end.Offset, nil
}

// applyListedLags takes up the listings that ended. An answer for a
// partition the consumer has handed something of since, or rewound, is
// dropped: the fetch knows better. The caller holds tasksMu.
func (a *App) applyListedLags() {
	a.lister.mu.Lock()
	done := a.lister.done
	a.lister.done = nil
	a.lister.mu.Unlock()
	for _, l := range done {
		q := l.q
		if q.epoch != l.epoch {
			continue
		}
		q.listing = false
		switch {
		case l.err != nil:
			// Tried again after the next poll.
			a.log.Debug("idling task: listing a lag failed", "err", l.err)
		case q.fetched != l.fetched:
			// A fetch handed something over meanwhile.
		case l.fetched < 0:
			q.fetched, q.readable = l.position, l.end
		case l.end <= l.readable:
			// Stale: nothing was written since the consumer last
			// handed something over, and it has handed nothing over
			// of what lay before the end for lagStaleAfter.
			a.log.Debug("idling task: a partition that yields nothing is caught up", "partition", q.tp.String(), "from", q.fetched, "to", l.readable)
			q.fetched = max(q.fetched, l.readable)
		default:
			// Records were written since: wait for them afresh.
			q.readable, q.laggingSince = max(q.readable, l.end), time.Time{}
		}
	}
}
