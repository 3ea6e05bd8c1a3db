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

// Result is what one pipe run measured.
//
// Elapsed runs from the moment the pipe function is called (before its
// clients exist) until all Records input records have been processed, their
// outputs flushed (acknowledged by the broker) and their input offsets
// committed. It therefore includes creating clients, joining the consumer
// group and the final flush and commit, and excludes closing clients and
// leaving the group. Every pipe measured against the raw baseline, Braid's
// included, must measure exactly this span.
type Result struct {
	Records int
	Elapsed time.Duration
}

// PerSecond returns records per second, 0 when nothing was measured.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// ClientOptions are the kgo tuning options of the raw pipe's one client,
// which both consumes and produces. Braid's runtime must use the same
// options (or ones measured to be no slower) for its ratio to the raw pipe
// to mean anything.
//
// They pin franz-go v1.22.3's own defaults, because on this workload
// (in-process broker, 2 cores) the defaults measured fastest. Memory, not
// round trips, appears to limit the pipe: the slower settings below showed
// several times the page faults and system CPU time of the defaults.
// Measured over 1M records, changing one option at a time (medians of 4 to
// 8 pipes run one after another in one process; single runs vary ±25%):
//
//   - the defaults below: ~1.95M rec/s
//   - ProducerLinger(0): ~1.75M (within the noise, not better)
//   - FetchMaxPartitionBytes 2 MiB / 4 MiB: ~1.5M / ~1.3M; 16 MiB with
//     FetchMaxBytes 64 MiB: ~0.7M (bigger fetches, more memory)
//   - MaxBufferedRecords(250,000): ~1.45M
//   - NoCompression instead of snappy: ~0.9M (the broker keeps batches
//     as produced, so uncompressed ones take more of its memory)
//
// Everything not listed is franz-go's default too, notably the durability
// semantics: idempotent producer and acks=all (kgo.AllISRAcks), the
// default key partitioner (murmur2 on the key, as the Java client), and the
// classic group protocol.
func ClientOptions() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxBytes(50 << 20),         // the default 50 MiB
		kgo.FetchMaxPartitionBytes(1 << 20), // the default 1 MiB
		kgo.FetchMaxWait(5 * time.Second),   // the default; irrelevant while data is waiting
		kgo.ProducerLinger(10 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1_000_012), // the default, Kafka's max.message.bytes
		kgo.MaxBufferedRecords(50_000),       // the default
		kgo.ProducerBatchCompression(kgo.SnappyCompression(), kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default; idempotence requires it
	}
}

// RawPipe is the hand-written baseline: one franz-go client in consumer
// group group reads topic in from the start and, for every record, produces
// a record with the same key, value and timestamp to topic out. It is
// at-least-once: every commitInterval (and once at the end) it flushes the
// producer and then synchronously commits the offsets of the records
// processed so far. Rebalances are held off while a poll is processed
// (BlockRebalanceOnPoll) and allowed between polls.
//
// It stops after records records and returns how long that took (see
// Result). If in holds more, the rest is left unprocessed and uncommitted.
// Cancel ctx to give up.
func RawPipe(ctx context.Context, brokers []string, in, out, group string, records int, commitInterval time.Duration) (Result, error) {
	start := time.Now()
	if records <= 0 {
		return Result{}, fmt.Errorf("raw pipe: records %d must be positive", records)
	}
	if commitInterval <= 0 {
		return Result{}, fmt.Errorf("raw pipe: commit interval %v must be positive", commitInterval)
	}

	var (
		cl         *kgo.Client
		produceErr firstError
		// mu guards next, the offsets to commit: one past the last
		// processed record per partition of in. The poll loop and the
		// group's revoke and lose callbacks share it.
		mu   sync.Mutex
		next = map[int32]kgo.EpochOffset{}
	)
	promise := produceErr.promise
	// commit flushes the producer, then commits the processed offsets.
	commit := func(ctx context.Context) error {
		if err := cl.Flush(ctx); err != nil {
			return fmt.Errorf("raw pipe: flushing: %w", err)
		}
		if err := produceErr.get(); err != nil {
			return fmt.Errorf("raw pipe: producing to %s: %w", out, err)
		}
		mu.Lock()
		offsets := make(map[int32]kgo.EpochOffset, len(next))
		maps.Copy(offsets, next)
		mu.Unlock()
		var cerr error
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{in: offsets},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil {
					cerr = err
					return
				}
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
							cerr = fmt.Errorf("partition %d: %w", p.Partition, err)
						}
					}
				}
			})
		if cerr != nil {
			return fmt.Errorf("raw pipe: committing offsets: %w", cerr)
		}
		return nil
	}
	forget := func(lost map[string][]int32) {
		mu.Lock()
		for _, p := range lost[in] {
			delete(next, p)
		}
		mu.Unlock()
	}

	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		// The usual at-least-once hand-off: commit what was processed
		// before giving partitions up. (One member never rebalances
		// mid-run; this is here so the baseline is a correct program.)
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
			_ = commit(ctx) // on failure the next owner reprocesses: at-least-once
			forget(revoked)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			forget(lost)
		}),
	}, ClientOptions()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Result{}, fmt.Errorf("raw pipe: %w", err)
	}
	defer func() {
		// Leaving the group waits for a blocked poll to be released.
		cl.AllowRebalance()
		cl.Close()
	}()

	processed := 0
	lastCommit := time.Now()
	for {
		fetches := cl.PollRecords(ctx, 0)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("raw pipe: after %d of %d records: %w", processed, records, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fe := errs[0]
			return Result{}, fmt.Errorf("raw pipe: fetching %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			rs := p.Records
			if len(rs) == 0 || processed >= records {
				return
			}
			if n := records - processed; len(rs) > n {
				rs = rs[:n]
			}
			for _, r := range rs {
				cl.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}, promise)
			}
			processed += len(rs)
			last := rs[len(rs)-1]
			mu.Lock()
			next[p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			mu.Unlock()
		})
		if processed >= records {
			// The final flush and commit, still inside the poll so no
			// rebalance slips in before it.
			if err := commit(ctx); err != nil {
				return Result{}, err
			}
			return Result{Records: processed, Elapsed: time.Since(start)}, nil
		}
		if time.Since(lastCommit) >= commitInterval {
			if err := commit(ctx); err != nil {
				return Result{}, err
			}
			lastCommit = time.Now()
		}
		cl.AllowRebalance()
	}
}
