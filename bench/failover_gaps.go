package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/streams"
)

// What a failover costs the tasks that do not move, and the readers of
// the output. Both are measured from the outside of the App, as a user
// would see them: gapWatch from the records the topology processes (a
// Peek before the count), readerWatch from what a read-committed consumer
// of the sink receives.

// gapWatch notes, per input partition (one task each), when the topology
// last processed a record of it, and from the start of a window the
// longest time between two such records: the pauses a rebalance imposes.
// The steady input keeps every partition busy (Rate/Partitions records a
// second each), so a gap longer than a few milliseconds is the task not
// processing, not the task having nothing to process.
type gapWatch struct {
	partitioner kgo.TopicPartitioner
	partitions  int

	// mu guards the fields below; note runs on every instance's
	// processing goroutine.
	mu    sync.Mutex
	last  []time.Time
	from  time.Time // zero until the window starts
	until time.Time // zero until it ends
	gaps  []time.Duration
}

func newGapWatch(topic string, partitions int) *gapWatch {
	return &gapWatch{
		// The producers of the input use kgo's default partitioner,
		// which hashes keys as this one does.
		partitioner: kgo.StickyKeyPartitioner(nil).ForTopic(topic),
		partitions:  partitions,
		last:        make([]time.Time, partitions),
		gaps:        make([]time.Duration, partitions),
	}
}

// note is the topology's Peek: the record with key was processed now.
func (g *gapWatch) note(key, _ any) {
	k, _ := key.(string)
	p := g.partitioner.Partition(&kgo.Record{Key: []byte(k)}, g.partitions)
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.from.IsZero() && g.until.IsZero() {
		g.gaps[p] = max(g.gaps[p], now.Sub(later(g.last[p], g.from)))
	}
	g.last[p] = now
}

// start opens a window at, forgetting any earlier one; gaps before it do
// not count, a gap that spans it counts from at.
func (g *gapWatch) start(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.from, g.until = at, time.Time{}
	clear(g.gaps)
}

// stop closes the window at and returns each partition's longest gap in
// it; a partition still waiting for its next record counts the wait
// until at.
func (g *gapWatch) stop(at time.Time) []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.until = at
	out := make([]time.Duration, g.partitions)
	for p := range out {
		out[p] = max(g.gaps[p], at.Sub(later(g.last[p], g.from)))
	}
	return out
}

// readerWatch is a read-committed consumer of the sink that notes, per
// partition, when the first record after a point in time reached it.
// Under exactly-once a crashed instance's open transaction holds back
// the last stable offset of every partition it wrote to, and with it
// every later record there, until the transaction is aborted.
type readerWatch struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	// mu guards since and first, written by the consuming goroutine.
	mu    sync.Mutex
	since time.Time
	first map[int32]time.Time
}

// startReaderWatch consumes topic from its end, read committed, until
// stop.
func startReaderWatch(ctx context.Context, brokers []string, topic string) (*readerWatch, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &readerWatch{cl: cl, cancel: cancel, done: make(chan struct{}), first: make(map[int32]time.Time)}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) {
				// A result carries its input's timestamp, the steady
				// input's clock: one stamped after the mark was
				// processed after it, while an older one may come from
				// a transaction committed just before it.
				if _, seen := r.first[rec.Partition]; !seen && !r.since.IsZero() && rec.Timestamp.After(r.since) {
					r.first[rec.Partition] = now
				}
			})
			r.mu.Unlock()
		}
	}()
	return r, nil
}

// mark starts waiting, per partition, for the first record received
// after at.
func (r *readerWatch) mark(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since, r.first = at, make(map[int32]time.Time)
}

// stall returns, over partitions, the longest time from the mark to the
// first record received there; a partition that received none counts
// until now.
func (r *readerWatch) stall(partitions []int32) time.Duration {
	var longest time.Duration
	for _, d := range r.waits(partitions) {
		longest = max(longest, d)
	}
	return longest
}

// waits returns, for each of partitions, the time from the mark to the
// first record received there; a partition that received none counts
// until now.
func (r *readerWatch) waits(partitions []int32) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(partitions))
	for i, p := range partitions {
		at, ok := r.first[p]
		if !ok {
			at = time.Now()
		}
		out[i] = at.Sub(r.since)
	}
	return out
}

// stop ends the consumer and waits for its goroutine.
func (r *readerWatch) stop() {
	r.cancel()
	<-r.done
	r.cl.Close()
}

// received reports whether every one of partitions received a record
// since the mark.
func (r *readerWatch) received(partitions []int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range partitions {
		if _, ok := r.first[p]; !ok {
			return false
		}
	}
	return true
}

// quietWindow is how long the gaps of the tasks that will stay are
// measured before the crash, with no rebalance: the processing's own
// pauses (commits, flushes, the scheduler of a busy machine) that the
// failover's gaps are to be read against.
const quietWindow = 2 * time.Second

// measureQuiet measures run's QuietGap over quietWindow, before the
// crash.
func (run *FailoverRun) measureQuiet(ctx context.Context, gaps *gapWatch) error {
	gaps.start(time.Now())
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(quietWindow):
	}
	perPartition := gaps.stop(time.Now())
	for _, id := range run.Stayed {
		run.QuietGap = max(run.QuietGap, perPartition[id.Partition])
	}
	return nil
}

// stayedWindow is how long after the last moved task resumed the gaps of
// the tasks that stayed are still counted: under the cooperative
// protocol a follow-up rebalance may come then.
const stayedWindow = time.Second

// measureAfter completes run once every moved task resumed (got holds
// their failover events): the longest gap of the tasks that stayed, up to
// stayedWindow after the last resumption, and under exactly-once, once
// the reader received results on every moved partition, its stall.
// moved returns the tasks some instance took up since the crash: those of
// run.Stayed among them were traded between survivors.
func (run *FailoverRun) measureAfter(ctx context.Context, opts FailoverOptions, got map[streams.TaskID]streams.FailoverEvent, gaps *gapWatch, reader *readerWatch, moved func() map[streams.TaskID]bool) error {
	var last time.Time
	for _, ev := range got {
		last = later(last, ev.ResumedAt)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(last.Add(stayedWindow))):
	}
	perPartition := gaps.stop(time.Now())
	took := moved()
	stayed := run.Stayed[:0]
	for _, id := range run.Stayed {
		if took[id] {
			run.Traded = append(run.Traded, id)
			run.TradedGap = max(run.TradedGap, perPartition[id.Partition])
			continue
		}
		stayed = append(stayed, id)
		run.StayedGap = max(run.StayedGap, perPartition[id.Partition])
	}
	run.Stayed = stayed
	if reader == nil {
		return nil
	}
	partitions := make([]int32, len(run.Moved))
	for i, id := range run.Moved {
		partitions[i] = id.Partition
	}
	if err := waitUntil(ctx, opts.Timeout, 20*time.Millisecond, func() (bool, error) { return reader.received(partitions), nil }); err != nil {
		return fmt.Errorf("waiting for a read-committed reader of the sink to receive new results on partitions %v: %w", partitions, err)
	}
	run.ReaderStall = reader.stall(partitions)
	return nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
