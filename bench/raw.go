package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
//
// Phases split the same span (see Phases); a run that leaves them zero
// (a test's stand-in) compares by its whole rate.
type Result struct {
	Records int
	Elapsed time.Duration
	Phases  Phases
}

// PerSecond returns records per second, 0 when nothing was measured.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// phasesText is how a run line shows the phases: "start-up 88 ms, steady
// 1,234,567 rec/s, final commit 240 ms", the steady rate marked "(whole
// run)" when it fell back to the whole run's.
func (r Result) phasesText() string {
	whole := ""
	if r.Phases.perSecond() == 0 {
		whole = " (whole run)"
	}
	return fmt.Sprintf("start-up %d ms, steady %s rec/s%s, final commit %d ms",
		r.Phases.StartUp.Milliseconds(), thousands(r.SteadyPerSecond()), whole, r.Phases.FinalCommit.Milliseconds())
}

// SteadyPerSecond returns the steady-state records per second (see
// Phases), or PerSecond when the run was too short to measure one.
func (r Result) SteadyPerSecond() float64 {
	if v := r.Phases.perSecond(); v > 0 {
		return v
	}
	return r.PerSecond()
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

	c, err := newALOSConsumer("raw pipe", brokers, in, group)
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	// One promise func for every record: a method value built per record
	// would allocate per record.
	cl, promise := c.cl, c.promise
	return c.run(ctx, start, records, commitInterval, func(_ int32, rs []*kgo.Record) error {
		for _, r := range rs {
			cl.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}, promise)
		}
		return nil
	})
}
