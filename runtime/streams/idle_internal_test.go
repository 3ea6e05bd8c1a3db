package streams

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The cases of Kafka Streams' PartitionGroupTest and StreamTaskTest on
// idling, on the merge task of task_internal_test.go: a/0 has records,
// b/0 is empty with its lag unknown, positive or zero.

// idleTask is mergeTask with idling on and maxIdle as Config.MaxTaskIdle.
func idleTask(t *testing.T, maxIdle time.Duration) (*task, *[]string) {
	t.Helper()
	tk, log := mergeTask(t, FailOnError, String)
	tk.app.idling = maxIdle != MaxTaskIdleDisabled
	tk.app.cfg.MaxTaskIdle = maxIdle
	return tk, log
}

// fetched hands q a fetch of recs that saw the high watermark hwm and the
// last stable offset lso, as processFetches does.
func fetched(q *partitionQueue, readCommitted bool, hwm, lso int64, recs ...*kgo.Record) {
	q.push(q.noteFetch(&kgo.FetchPartition{HighWatermark: hwm, LastStableOffset: lso, Records: recs}, readCommitted))
}

// marker is a transaction's commit marker at offset off of topic/0.
func marker(topic string, off int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Offset: off, Attrs: kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})}
}

func clockAt(ms int64) func() time.Time { return func() time.Time { return time.UnixMilli(ms) } }

func TestIdleDisabledNeverWaits(t *testing.T) {
	tk, log := idleTask(t, MaxTaskIdleDisabled)
	fetched(tk.queues[0], false, 102, 102, recs("a", 100, 1, 5)...)
	if err := tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "a5"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v: with idling off b/0 is not waited for", *log, want)
	}
}

func TestIdleReadyWhenAllBuffered(t *testing.T) {
	tk, log := idleTask(t, time.Hour)
	fetched(tk.queues[0], false, 102, 102, recs("a", 100, 1, 5)...)
	fetched(tk.queues[1], false, 2, 2, recs("b", 0, 2, 3)...)
	if !tk.readyToProcess(clockAt(0)) {
		t.Fatal("not ready with every partition buffered")
	}
	if _, err := tk.processUpTo(3); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b2", "b3"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v", *log, want)
	}
	// b/0 is empty now and caught up: an hour's wait begins.
	if _, err := tk.processUpTo(-1); err != nil {
		t.Fatal(err)
	}
	if len(*log) != 3 || !slices.Equal(tk.idle.waitingOn, []TopicPartition{{"b", 0}}) || tk.idle.since.IsZero() {
		t.Errorf("processed %v, waiting on %v since %v; want a5 left, waiting on b/0", *log, tk.idle.waitingOn, tk.idle.since)
	}
}

func TestIdleWaitsWhileLagUnknown(t *testing.T) {
	tk, log := idleTask(t, 0)
	fetched(tk.queues[0], false, 102, 102, recs("a", 100, 1, 5)...)
	if err := tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if len(*log) != 0 {
		t.Fatalf("processed %v while nothing is known of b/0", *log)
	}
	if want := []*partitionQueue{tk.queues[1]}; !slices.Equal(tk.idle.toList, want) {
		t.Errorf("unknown lags %v, want b/0's, to be listed", tk.idle.toList)
	}
	// The listing says b/0 is caught up: with MaxTaskIdle 0 a goes on.
	tk.queues[1].fetched, tk.queues[1].readable = 7, 7
	if err := tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "a5"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v", *log, want)
	}
	if tk.idle.enforced != 2 {
		t.Errorf("enforced processing %d, want 2 (one per record)", tk.idle.enforced)
	}
}

func TestIdleWaitsForRecordsOnTheBroker(t *testing.T) {
	tk, log := idleTask(t, 0)
	qa, qb := tk.queues[0], tk.queues[1]
	fetched(qa, false, 103, 103, recs("a", 100, 1, 5, 9)...)
	fetched(qb, false, 12, 12, recs("b", 10, 2)...)
	if err := tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b2"}; !slices.Equal(*log, want) {
		t.Fatalf("processed %v, want %v and a wait for b/0's offset 11", *log, want)
	}
	if qb.lag() != 1 || !slices.Equal(tk.idle.waitingOn, []TopicPartition{{"b", 0}}) {
		t.Errorf("b/0 lag %d, waiting on %v; want 1 and b/0", qb.lag(), tk.idle.waitingOn)
	}
	fetched(qb, false, 12, 12, recs("b", 11, 6)...)
	if err := tk.processAvailable(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b2", "a5", "b6", "a9"}; !slices.Equal(*log, want) {
		t.Errorf("processed %v, want %v", *log, want)
	}
	if tk.idle.enforced != 1 || !tk.idle.since.IsZero() {
		t.Errorf("enforced %d, idling since %v; want 1 (a9 after b/0 was caught up) and not idling", tk.idle.enforced, tk.idle.since)
	}
}

// TestIdleTransactionMarkers checks that a partition ending in a commit
// marker is caught up once the marker is fetched, under read_committed
// (the last stable offset) and read_uncommitted (the high watermark) alike.
func TestIdleTransactionMarkers(t *testing.T) {
	for _, readCommitted := range []bool{true, false} {
		tk, log := idleTask(t, 0)
		qa, qb := tk.queues[0], tk.queues[1]
		fetched(qa, readCommitted, 102, 102, recs("a", 100, 1, 5)...)
		fetched(qb, readCommitted, 3, 3, append(recs("b", 0, 2, 3), marker("b", 2))...)
		if qb.lag() != 0 || qb.fetched != 3 {
			t.Errorf("read committed %v: b/0 lag %d, fetched %d; want 0 past the marker", readCommitted, qb.lag(), qb.fetched)
		}
		if err := tk.processAvailable(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a1", "b2", "b3", "a5"}; !slices.Equal(*log, want) {
			t.Errorf("read committed %v: processed %v, want %v", readCommitted, *log, want)
		}
		if qb.next.Offset != 2 {
			t.Errorf("b/0 commits %d, want 2: the marker is not a record", qb.next.Offset)
		}
	}
	// Under read_committed an open transaction's records are not
	// readable: the last stable offset, not the high watermark, counts.
	tk, _ := idleTask(t, 0)
	fetched(tk.queues[1], true, 10, 3, append(recs("b", 0, 2, 3), marker("b", 2))...)
	if lag := tk.queues[1].lag(); lag != 0 {
		t.Errorf("lag %d behind an open transaction, want 0", lag)
	}
}

func TestIdleAsConfiguredWhenCaughtUp(t *testing.T) {
	tk, _ := idleTask(t, time.Millisecond)
	qa, qb := tk.queues[0], tk.queues[1]
	fetched(qa, false, 102, 102, recs("a", 100, 1, 5)...)
	qb.fetched, qb.readable = 0, 0
	if tk.readyToProcess(clockAt(0)) {
		t.Fatal("ready at once, want a wait of 1 ms for b/0")
	}
	if want := time.UnixMilli(1); !tk.idle.wake.Equal(want) || !tk.idle.since.Equal(time.UnixMilli(0)) {
		t.Errorf("wake %v, idling since %v; want the deadline 1 ms and since 0", tk.idle.wake, tk.idle.since)
	}
	if !tk.readyToProcess(clockAt(1)) {
		t.Fatal("not ready at the deadline")
	}
	// The deadline stays while b/0 stays empty: it does not start again.
	if !tk.readyToProcess(clockAt(2)) || tk.idle.enforced != 2 {
		t.Errorf("after the deadline: enforced %d, want 2", tk.idle.enforced)
	}
	// Records end the wait; an empty b/0 later waits again, from then.
	fetched(qb, false, 1, 1, recs("b", 0, 3)...)
	if !tk.readyToProcess(clockAt(3)) || !qb.idleDeadline.IsZero() {
		t.Fatalf("not ready with b/0 buffered, or its deadline %v kept", qb.idleDeadline)
	}
	qb.pop()
	if tk.readyToProcess(clockAt(10)) || !qb.idleDeadline.Equal(time.UnixMilli(11)) {
		t.Errorf("deadline %v once b/0 emptied at 10, want 11", qb.idleDeadline)
	}
}

func TestIdleNotWhenNothingBuffered(t *testing.T) {
	tk, _ := idleTask(t, time.Hour)
	if tk.readyToProcess(clockAt(0)) || !tk.idle.since.IsZero() || len(tk.idle.toList) != 0 {
		t.Errorf("a task without records: idling since %v, unknown lags %v; want neither", tk.idle.since, tk.idle.toList)
	}
}

func TestIdleRewindForgetsTheLag(t *testing.T) {
	tk, _ := idleTask(t, 0)
	q := tk.queues[1]
	fetched(q, false, 5, 5, recs("b", 0, 2, 3)...)
	epoch := q.epoch
	q.rollBack()
	if q.lag() != -1 || q.epoch == epoch {
		t.Errorf("after a rewind: lag %d, epoch %d (was %d); want unknown and a new epoch", q.lag(), q.epoch, epoch)
	}
}

func TestMaxTaskIdleValidation(t *testing.T) {
	base := Config{ApplicationID: "v", Brokers: []string{"x:1"}}
	for _, ok := range []time.Duration{0, MaxTaskIdleDisabled, time.Second} {
		c := base
		c.MaxTaskIdle = ok
		if err := c.Validate(); err != nil {
			t.Errorf("MaxTaskIdle %v: %v", ok, err)
		}
	}
	c := base
	c.MaxTaskIdle = -time.Millisecond
	if err := c.Validate(); err == nil {
		t.Error("MaxTaskIdle -1ms accepted; only MaxTaskIdleDisabled may be negative")
	}
}

// TestIdleStaleLag checks the way out of a lag no fetch fills (a batch
// that compaction emptied moves the consumer unseen): after lagStaleAfter
// the partition is listed again, and when nothing was written since it is
// caught up; when records were, the task waits for them afresh.
func TestIdleStaleLag(t *testing.T) {
	for _, written := range []bool{false, true} {
		tk, _ := idleTask(t, 0)
		qa, qb := tk.queues[0], tk.queues[1]
		fetched(qa, false, 102, 102, recs("a", 100, 1, 5)...)
		fetched(qb, false, 12, 12, recs("b", 10, 2)...)
		if _, err := tk.processUpTo(-1); err != nil {
			t.Fatal(err)
		}
		start := qb.laggingSince
		if start.IsZero() || len(tk.idle.toList) != 0 {
			t.Fatalf("b/0 lagging since %v, to list %v; want a lag noted and nothing listed yet", start, tk.idle.toList)
		}
		if want := start.Add(lagStaleAfter); !tk.idle.wake.Equal(want) {
			t.Errorf("wake %v, want %v: the poll must end to check the lag", tk.idle.wake, want)
		}
		later := func() time.Time { return start.Add(lagStaleAfter) }
		if tk.readyToProcess(later) || !slices.Equal(tk.idle.toList, []*partitionQueue{qb}) {
			t.Fatalf("after lagStaleAfter: to list %v, want b/0", tk.idle.toList)
		}
		end := int64(12)
		if written {
			end = 14
		}
		tk.app.lister.done = []listedLag{{lagRequest: lagRequest{q: qb, tp: qb.tp, epoch: qb.epoch, fetched: qb.fetched, readable: qb.readable}, end: end}}
		tk.app.applyListedLags()
		if ready := tk.readyToProcess(later); ready == written {
			t.Errorf("written %v: ready %v, lag %d", written, ready, qb.lag())
		}
		if written && (qb.lag() != 3 || !qb.laggingSince.Equal(later())) {
			t.Errorf("records written since: lag %d, lagging since %v; want 3, and the stale clock started again at %v", qb.lag(), qb.laggingSince, later())
		}
	}
}
