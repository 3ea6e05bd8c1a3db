package bench

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alosConsumer is the at-least-once skeleton both hand-written baselines
// share, written the way a competent franz-go user would: one client in a
// consumer group reads in from the start, rebalances are held off while a
// poll is processed, and every commit flushes what was produced before it
// commits the offsets processed.
type alosConsumer struct {
	name string // for errors: "raw pipe"
	cl   *kgo.Client

	// beforeCommit, if set, is called first by every commit: a baseline
	// that holds writes back (the cached count) produces them there, so
	// that the flush covers them.
	beforeCommit func()

	produceErr firstError
	// mu guards next, one past the last processed record per partition of
	// each input topic: the poll loop and the group's revoke and lose
	// callbacks share it.
	mu   sync.Mutex
	next map[string]map[int32]kgo.EpochOffset
}

// newALOSConsumer creates the client with ClientOptions and extra,
// consuming topic in.
func newALOSConsumer(name string, brokers []string, in, group string, extra ...kgo.Opt) (*alosConsumer, error) {
	return newALOSConsumerOf(name, brokers, []string{in}, group, extra...)
}

// newALOSConsumerOf is newALOSConsumer consuming every topic of ins.
func newALOSConsumerOf(name string, brokers []string, ins []string, group string, extra ...kgo.Opt) (*alosConsumer, error) {
	c := &alosConsumer{name: name, next: make(map[string]map[int32]kgo.EpochOffset)}
	for _, in := range ins {
		c.next[in] = make(map[int32]kgo.EpochOffset)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(ins...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		// The usual at-least-once hand-off: commit what was processed
		// before giving partitions up. (One member never rebalances
		// mid-run; this is here so the baseline is a correct program.)
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
			_ = c.commit(ctx) // on failure the next owner reprocesses: at-least-once
			c.forget(revoked)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			c.forget(lost)
		}),
	}, ClientOptions()...)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.cl = cl
	return c, nil
}

// close leaves the group; leaving waits for a blocked poll to be released.
func (c *alosConsumer) close() {
	c.cl.AllowRebalance()
	c.cl.Close()
}

// promise is the one produce promise of every record.
func (c *alosConsumer) promise(r *kgo.Record, err error) { c.produceErr.promise(r, err) }

// commit flushes the producer, then commits the processed offsets.
func (c *alosConsumer) commit(ctx context.Context) error {
	if c.beforeCommit != nil {
		c.beforeCommit()
	}
	if err := c.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flushing: %w", c.name, err)
	}
	if err := c.produceErr.get(); err != nil {
		return fmt.Errorf("%s: producing: %w", c.name, err)
	}
	c.mu.Lock()
	offsets := make(map[string]map[int32]kgo.EpochOffset, len(c.next))
	for t, ps := range c.next {
		offsets[t] = maps.Clone(ps)
	}
	c.mu.Unlock()
	var cerr error
	c.cl.CommitOffsetsSync(ctx, offsets,
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
						cerr = fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err)
					}
				}
			}
		})
	if cerr != nil {
		return fmt.Errorf("%s: committing offsets: %w", c.name, cerr)
	}
	return nil
}

func (c *alosConsumer) forget(lost map[string][]int32) {
	c.mu.Lock()
	for t, ps := range lost {
		for _, p := range ps {
			delete(c.next[t], p)
		}
	}
	c.mu.Unlock()
}

// run polls, hands each partition's records of a poll to process, and
// commits every commitInterval, until records records are processed; then
// it makes the final flush and commit, still inside the poll so that no
// rebalance slips in before it, and returns the time since start, split
// in phases by a phaseClock fed after every partition's batch.
func (c *alosConsumer) run(ctx context.Context, start time.Time, records int, commitInterval time.Duration, process func(partition int32, rs []*kgo.Record) error) (Result, error) {
	return c.runTopics(ctx, start, records, commitInterval, func(_ string, p int32, rs []*kgo.Record) error { return process(p, rs) })
}

// runTopics is run for a consumer of several topics: process is told
// which topic the records are of.
func (c *alosConsumer) runTopics(ctx context.Context, start time.Time, records int, commitInterval time.Duration, process func(topic string, partition int32, rs []*kgo.Record) error) (Result, error) {
	processed := 0
	clock := newPhaseClock(start, records)
	lastCommit := time.Now()
	for {
		fetches := c.cl.PollRecords(ctx, 0)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("%s: after %d of %d records: %w", c.name, processed, records, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fe := errs[0]
			return Result{}, fmt.Errorf("%s: fetching %s[%d]: %w", c.name, fe.Topic, fe.Partition, fe.Err)
		}
		var perr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			rs := p.Records
			if perr != nil || len(rs) == 0 || processed >= records {
				return
			}
			if n := records - processed; len(rs) > n {
				rs = rs[:n]
			}
			if processed == 0 {
				// The first record begins to be processed now, as
				// Braid's side reports its first (firstRecordWatcher).
				clock.observe(time.Now(), 1)
			}
			if perr = process(p.Topic, p.Partition, rs); perr != nil {
				return
			}
			processed += len(rs)
			clock.observe(time.Now(), processed)
			last := rs[len(rs)-1]
			c.mu.Lock()
			c.next[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			c.mu.Unlock()
		})
		if perr != nil {
			return Result{}, fmt.Errorf("%s: %w", c.name, perr)
		}
		if processed >= records {
			if err := c.commit(ctx); err != nil {
				return Result{}, err
			}
			end := time.Now()
			return Result{Records: processed, Elapsed: end.Sub(start), Phases: clock.phases(end)}, nil
		}
		if time.Since(lastCommit) >= commitInterval {
			if err := c.commit(ctx); err != nil {
				return Result{}, err
			}
			lastCommit = time.Now()
		}
		c.cl.AllowRebalance()
	}
}
