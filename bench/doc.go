// Package bench measures Braid against baselines measured in the same run,
// on the same machine, over the same records. Absolute throughput on a
// shared machine varies by ±15% from run to run; the ratio of Braid to a
// hand-written franz-go program measured minutes apart in one process does
// not, so ratios are what Braid's targets are stated in.
//
// It backs `braid bench`. RunPipe is `braid bench pipe`: it starts an
// embedded broker, seeds an input topic once (Seed), runs the raw franz-go
// consume-and-produce pipe (RawPipe) and then each Braid variant over the
// same input, checks every output topic holds the records, and prints
// records per second for each and a final line
//
//	RESULT pipe ratio=<braid/raw> braid=<rec/s> raw=<rec/s>
//
// for the gated variant.
//
// The other benchmarks run the same way, each on its own embedded broker,
// and end in a RESULT line of their own, with their target beside them:
//
//   - RunCount, `braid bench count`: Braid's GroupByKey().Count() against
//     its ceiling, CachedCount (franz-go, counts in a map, each changed
//     key written once per commit: CountTarget), and against the naive
//     HandwrittenCount (franz-go + pebble, an output and a changelog
//     record per input record), reported beside it.
//   - RunRestore, `braid bench restore`: a plain consumer writing pebble
//     batches against Braid restoring a store from its changelog, both
//     measured until every record is committed to pebble and both stores
//     checked (RestoreTarget).
//   - RunWindowed, `braid bench windowed`: Braid's tumbling-window count
//     against its plain count (WindowedTarget), and against its ceiling,
//     WindowedCeiling (franz-go, each key's open windows in a map).
//   - RunFailover, `braid bench failover`: one of several instances of a
//     count crashed, with a standby and without: detection, recovery and
//     downtime per task (FailoverTarget).
//   - RunEOS, `braid bench eos`: Braid's count exactly-once, a
//     transaction every 100 ms, against the same count at-least-once,
//     outputs read back read-committed (EOSTarget).
//   - RunJoin, `braid bench join`: Braid's stream-stream join against a
//     hand-written franz-go join doing the least durable work a join
//     must (HandwrittenJoin: in-memory buffers, every result and a
//     changelog record per buffered record produced), with a Braid count
//     of the same records beside them (JoinTarget).
//
// Count, restore, windowed and join compare steady state, 3,000,000
// records by default: every Result carries its run's Phases (start-up to
// the first record, the steady span from 10% to 90% of the records, final
// commit from the last record to the end), measured by a phaseClock that
// each side feeds as it processes. Their per-round ratios, medians and
// RESULT ratio= and rate keys are of steady rates; beside them the RESULT
// line carries each compared side's start-up and final commit in ms
// (<side>_startup_ms, <side>_final_commit_ms) and whole_ratio, the ratio
// of whole runs that ratio= was before. Pipe and eos compare whole runs.
package bench
