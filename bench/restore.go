package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// RestoreChangelogTopic is the changelog RunRestore seeds and both sides
// restore. Its name has the shape of a Braid changelog,
// <application id>-<store>-changelog, for application "bench-restore" and
// store "store".
const RestoreChangelogTopic = "bench-restore-store-changelog"

// RestoreTarget is the ratio braid/raw the restore benchmark must reach.
const RestoreTarget = 1.0

// RestoreOptions configure RunRestore. Zero fields take the defaults.
type RestoreOptions struct {
	Records    int       // records in the changelog; default 3,000,000
	Keys       int       // distinct keys; default 100,000
	Partitions int       // partitions of the changelog; default 4
	Rounds     int       // rounds of each side, each reports its median; default 3
	Out        io.Writer // where the report goes; default os.Stdout
	// NoWarmUp skips the unmeasured raw restore made before the measured
	// runs (see RunPipe for why there is one).
	NoWarmUp bool
}

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.Records == 0 {
		// Enough that the steady span outlasts the start-up by far.
		o.Records = 3_000_000
	}
	if o.Keys == 0 {
		o.Keys = 100_000
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// RestoreFunc runs Braid restoring the key-value store whose changelog is
// topic changelog, all of its partitions (a task per partition), into a
// fresh state directory of its own that it removes before returning. It
// returns the records restored and, in Elapsed, the span from its call until
// every record up to the changelog's end offsets (as they were at the call)
// is written to the stores, committed to pebble without fsync, the point
// RawRestore measures to; closing excluded. After that span, before it
// closes the stores, it calls check with their rows and fails with
// check's error: what the restore left is checked, not only counted.
type RestoreFunc func(ctx context.Context, brokers []string, changelog string, records int, check func(StoreRows) error) (Result, error)

// StoreRows calls fn with every row (key and value) a restore left in its
// stores, each once, and returns the first error fn or the reading
// returns.
type StoreRows func(fn func(key, value []byte) error) error

// RestoreReport is what RunRestore measured.
type RestoreReport struct {
	Records    int
	Keys       int
	Partitions int
	GOMAXPROCS int
	Seed       time.Duration // how long seeding took (not compared)
	// Bytes is the changelog's size: its records' keys and values.
	Bytes  int64
	WarmUp Run // the unmeasured pass; zero with NoWarmUp
	Rounds int
	Raw    Run // the median round of RawRestore, by steady records/s
	Braid  Run // the median round of the RestoreFunc, by steady records/s
	// Ratio is Braid's steady records/s over the raw restore's.
	Ratio float64
	// WholeRatio is Braid's median whole-run records/s over the raw
	// restore's, start-up included: what Ratio was before the phases.
	WholeRatio float64
}

// SeedChangelog creates topic compacted (cleanup.policy=compact,
// replication 1; an existing topic must have partitions partitions) and
// seeds it as Seed does: records records, 10-byte keys over keys distinct
// keys, ~100-byte values, partitioned by key. Nothing compacts it on a
// bench's embedded broker (startBroker), so it holds all records records
// and a restore reads every one of them; the latest value of a key is the
// one of its last record.
func SeedChangelog(ctx context.Context, brokers []string, topic string, partitions, records, keys int) error {
	if partitions <= 0 {
		return fmt.Errorf("seed changelog: partitions %d must be positive", partitions)
	}
	adm, err := newAdmin(brokers)
	if err != nil {
		return fmt.Errorf("seed changelog: %w", err)
	}
	defer adm.Close()
	if err := ensureCompactedTopic(ctx, adm, topic, partitions); err != nil {
		return fmt.Errorf("seed changelog: %w", err)
	}
	return Seed(ctx, brokers, topic, partitions, records, keys)
}

// RawRestore is the hand-written restore baseline: a plain franz-go consumer
// (no group; RawPipe's client options) reads every partition of topic from
// its start to the end offsets listed when it is called and writes the
// records into pebble, one DB per partition under stateDir/<partition>
// (the layout of Braid's per-task stores), sharing a StoreCacheBytes block
// cache. Each poll's records of a partition go in one batch committed
// NoSync (written to pebble's WAL, not fsynced); a record with a nil value
// deletes its key. It stops once every partition's last batch is
// committed: the point Braid's restore reaches when its stores report the
// end of their restores, since Braid writes a store's restored offset in
// the batch of the records it covers and has nothing to flush before
// checkpointing it (Kafka Streams flushes RocksDB there; neither side
// here does).
//
// records is what the changelog is expected to hold between those offsets;
// any other count is an error. It returns the records restored and how long
// that took, from the call until the last batch is committed (split in
// phases, a phaseClock fed after every batch); closing the
// client and the DBs is not included.
func RawRestore(ctx context.Context, brokers []string, topic, stateDir string, records int) (res Result, err error) {
	start := time.Now()
	if records <= 0 {
		return Result{}, fmt.Errorf("raw restore: records %d must be positive", records)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, ClientOptions()...)...)
	if err != nil {
		return Result{}, fmt.Errorf("raw restore: %w", err)
	}
	defer cl.Close()
	st := newStores(stateDir)
	defer func() {
		if cerr := st.close(); cerr != nil && err == nil {
			err = fmt.Errorf("raw restore: %w", cerr)
		}
	}()

	// The consumer starts fetching while the offsets are listed.
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return Result{}, fmt.Errorf("raw restore: listing start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return Result{}, fmt.Errorf("raw restore: listing end offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{} // partition -> end offset, for those not restored to the end
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, o.Partition)
		if o.Offset > s.Offset {
			left[o.Partition] = o.Offset
			total += o.Offset - s.Offset
		}
	})
	if total != int64(records) {
		return Result{}, fmt.Errorf("raw restore: changelog %s holds %d records, want %d", topic, total, records)
	}

	// restorePartition writes one partition's records of one poll.
	restorePartition := func(p int32, end int64, rs []*kgo.Record) (int, error) {
		db, err := st.db(p)
		if err != nil {
			return 0, err
		}
		batch := db.NewBatch()
		defer batch.Close()
		n := 0
		for _, r := range rs {
			if r.Offset >= end {
				break
			}
			if r.Value == nil {
				err = batch.Delete(r.Key, nil)
			} else {
				err = batch.Set(r.Key, r.Value, nil)
			}
			if err != nil {
				return 0, fmt.Errorf("writing key %q to the store of partition %d: %w", r.Key, p, err)
			}
			n++
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			return 0, fmt.Errorf("committing the store batch of partition %d: %w", p, err)
		}
		return n, nil
	}

	restored := 0
	clock := newPhaseClock(start, records)
	for len(left) > 0 {
		fetches := cl.PollRecords(ctx, 0)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("raw restore: after %d of %d records: %w", restored, records, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fe := errs[0]
			return Result{}, fmt.Errorf("raw restore: fetching %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var perr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			end, ok := left[p.Partition]
			if perr != nil || !ok || len(p.Records) == 0 {
				return
			}
			var n int
			if n, perr = restorePartition(p.Partition, end, p.Records); perr != nil {
				return
			}
			restored += n
			clock.observe(time.Now(), restored)
			if p.Records[len(p.Records)-1].Offset+1 >= end {
				delete(left, p.Partition)
			}
		})
		if perr != nil {
			return Result{}, fmt.Errorf("raw restore: %w", perr)
		}
	}
	end := time.Now()
	return Result{Records: restored, Elapsed: end.Sub(start), Phases: clock.phases(end)}, nil
}

// RunRestore runs the restore benchmark: it starts an embedded broker,
// seeds RestoreChangelogTopic once (SeedChangelog, opts.Partitions
// partitions, opts.Records records over opts.Keys keys), and runs RawRestore
// and braid over it, opts.Rounds times each, interleaved (odd rounds run
// Braid first), after an unmeasured raw warm-up restore. Both sides are
// measured to the same point (every record committed to pebble, not
// fsynced, not flushed) and both sides' state is checked after the run (not
// timed): every raw restore gets a fresh state directory (os.MkdirTemp),
// in which every partition's DB must hold exactly the latest value of each
// of that partition's keys, and is removed; braid is handed the check of
// its stores' rows, which must be exactly the latest value of every key.
// It writes one line per run, the medians, and last
//
//	RESULT restore ratio=<braid/raw> braid=<rec/s> raw=<rec/s>
//	  braid_startup_ms=<ms> raw_startup_ms=<ms> braid_final_commit_ms=<ms> raw_final_commit_ms=<ms> whole_ratio=<braid/raw>
//
// (one line), where the rates are each side's median steady records
// restored a second (see Phases: start-up runs to the first record
// restored, final commit from the last to the end), ratio theirs, and
// whole_ratio the ratio of the median whole-run rates.
//
// It returns an error if a run fails, restores a different number of
// records or leaves wrong state; it does not judge the ratio (see
// RestoreTarget).
func RunRestore(ctx context.Context, opts RestoreOptions, braid RestoreFunc) (RestoreReport, error) {
	opts = opts.withDefaults()
	rep := RestoreReport{
		Records:    opts.Records,
		Keys:       opts.Keys,
		Partitions: opts.Partitions,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if opts.Records < 0 || opts.Keys < 0 || opts.Partitions < 0 || opts.Rounds < 0 {
		return rep, errors.New("bench restore: records, keys, partitions and rounds must not be negative")
	}
	if braid == nil {
		return rep, errors.New("bench restore: no Braid restore to measure")
	}

	b, err := startBroker(broker.Config{Partitions: opts.Partitions})
	if err != nil {
		return rep, fmt.Errorf("bench restore: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()

	w := opts.Out
	fmt.Fprintf(w, "bench restore: %d changelog records, %d keys, %d partitions, GOMAXPROCS=%d, embedded broker\n",
		opts.Records, opts.Keys, opts.Partitions, rep.GOMAXPROCS)
	fmt.Fprintf(w, "  raw:   a plain franz-go consumer writing each poll's records of a partition in one pebble batch\n")
	fmt.Fprintf(w, "  braid: an App restoring its store's changelog, a task per partition, before it processes\n")
	fmt.Fprintf(w, "  both measured until every record is committed to pebble (no fsync, no flush), both stores checked after\n")

	t0 := time.Now()
	if err := SeedChangelog(ctx, brokers, RestoreChangelogTopic, opts.Partitions, opts.Records, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench restore: %w", err)
	}
	rep.Seed = time.Since(t0)

	// The state every restore must leave, read from the changelog as it
	// is in the broker.
	want := restoredState{}
	n, err := readTopic(ctx, brokers, RestoreChangelogTopic, func(r *kgo.Record) error {
		rep.Bytes += int64(len(r.Key) + len(r.Value))
		want.apply(r)
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("bench restore: %w", err)
	}
	if n != int64(opts.Records) {
		return rep, fmt.Errorf("bench restore: changelog %s holds %d records after seeding, want %d", RestoreChangelogTopic, n, opts.Records)
	}

	const (
		rawName   = "raw consumer -> pebble batches"
		braidName = "braid store restore"
		warmName  = "warm-up (raw restore)"
	)
	width := max(len(rawName), len(braidName), len(warmName))

	measure := func(r *Run, fn RestoreFunc, warmUp bool) error {
		t := time.Now()
		res, err := fn(ctx, brokers, RestoreChangelogTopic, opts.Records, want.checkRows)
		r.Wall = time.Since(t)
		if err != nil {
			return fmt.Errorf("bench restore: %s: %w", r.Name, err)
		}
		r.Result = res
		switch {
		case res.Records != opts.Records:
			return fmt.Errorf("bench restore: %s reports %d records restored, want %d", r.Name, res.Records, opts.Records)
		case res.Elapsed <= 0 || res.Elapsed > r.Wall:
			return fmt.Errorf("bench restore: %s reports %v elapsed, but its call took %v", r.Name, res.Elapsed, r.Wall)
		}
		mbps := float64(rep.Bytes) / 1e6 / res.Elapsed.Seconds()
		line := runLine(width, r.Name, res, steadyRate, warmUp)
		if !warmUp {
			line += fmt.Sprintf("  (%.0f MB/s)", mbps)
		}
		fmt.Fprintln(w, line)
		return nil
	}

	// raw restores into a fresh state directory, checks it and removes it.
	raw := func(ctx context.Context, brokers []string, changelog string, records int, _ func(StoreRows) error) (res Result, err error) {
		dir, err := os.MkdirTemp("", "braid-bench-restore-")
		if err != nil {
			return Result{}, err
		}
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = rerr
			}
		}()
		// The check is not timed: the result's span ended inside RawRestore.
		res, err = RawRestore(ctx, brokers, changelog, dir, records)
		if err != nil {
			return Result{}, err
		}
		if err := want.check(dir); err != nil {
			return Result{}, err
		}
		return res, nil
	}

	if !opts.NoWarmUp {
		rep.WarmUp = Run{Name: warmName}
		if err := measure(&rep.WarmUp, raw, true); err != nil {
			return rep, err
		}
	}
	rawRounds := make([]Run, opts.Rounds)
	braidRounds := make([]Run, opts.Rounds)
	for round := range opts.Rounds {
		if round%2 == 0 {
			rawRounds[round] = Run{Name: rawName}
			if err := measure(&rawRounds[round], raw, false); err != nil {
				return rep, err
			}
		}
		braidRounds[round] = Run{Name: braidName, Gated: true}
		if err := measure(&braidRounds[round], braid, false); err != nil {
			return rep, err
		}
		if round%2 == 1 {
			rawRounds[round] = Run{Name: rawName}
			if err := measure(&rawRounds[round], raw, false); err != nil {
				return rep, err
			}
		}
	}
	rep.Rounds = opts.Rounds
	rep.Raw = medianRun(rawRounds, steadyRate)
	rep.Braid = medianRun(braidRounds, steadyRate)
	rep.Ratio = rep.Braid.SteadyPerSecond() / rep.Raw.SteadyPerSecond()
	rep.WholeRatio = medianRun(braidRounds, wholeRate).PerSecond() / medianRun(rawRounds, wholeRate).PerSecond()
	fmt.Fprintf(w, "medians of %d rounds (steady state):\n", opts.Rounds)
	fmt.Fprintf(w, "  %-*s  %9s rec/s\n", width, rep.Raw.Name, thousands(rep.Raw.SteadyPerSecond()))
	fmt.Fprintf(w, "  %-*s  %9s rec/s  (%.3f of raw)\n", width, rep.Braid.Name, thousands(rep.Braid.SteadyPerSecond()), rep.Ratio)
	fmt.Fprintf(w, "RESULT restore ratio=%.3f braid=%.0f raw=%.0f%s whole_ratio=%.3f\n",
		rep.Ratio, rep.Braid.SteadyPerSecond(), rep.Raw.SteadyPerSecond(),
		phaseKeys("braid", rep.Braid, "raw", rep.Raw), rep.WholeRatio)
	return rep, nil
}

// restoredState is the state a restore of a changelog must leave: per
// partition, the latest value of every key.
type restoredState map[int32]map[string][]byte

// apply applies one changelog record (a nil value deletes the key).
func (s restoredState) apply(r *kgo.Record) {
	m := s[r.Partition]
	if m == nil {
		m = map[string][]byte{}
		s[r.Partition] = m
	}
	if r.Value == nil {
		delete(m, string(r.Key))
		return
	}
	m[string(r.Key)] = bytes.Clone(r.Value)
}

// checkRows reports an error unless rows are exactly the latest value of
// every key of every partition, each key once: the check of a restore
// whose stores are read through the App rather than by partition.
func (s restoredState) checkRows(rows StoreRows) error {
	latest := map[string][]byte{}
	for _, m := range s {
		for k, v := range m {
			latest[k] = v
		}
	}
	seen := make(map[string]bool, len(latest))
	err := rows(func(key, value []byte) error {
		v, ok := latest[string(key)]
		switch {
		case !ok:
			return fmt.Errorf("the stores hold key %q, which is not in the changelog's latest state", key)
		case seen[string(key)]:
			return fmt.Errorf("the stores hold key %q twice", key)
		case !bytes.Equal(value, v):
			return fmt.Errorf("key %q holds %q, want its latest value %q", key, value, v)
		}
		seen[string(key)] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("checking the restored stores: %w", err)
	}
	if len(seen) != len(latest) {
		return fmt.Errorf("checking the restored stores: they hold %d keys, want %d", len(seen), len(latest))
	}
	return nil
}

// check opens the DB of every partition under dir, as RawRestore lays them
// out, and reports an error unless each holds exactly the partition's keys
// with their latest values.
func (s restoredState) check(dir string) error {
	for p, want := range s {
		if len(want) == 0 {
			continue
		}
		if err := checkStore(filepath.Join(dir, strconv.Itoa(int(p))), want); err != nil {
			return fmt.Errorf("the store of partition %d: %w", p, err)
		}
	}
	return nil
}

func checkStore(path string, want map[string][]byte) (err error) {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := pebble.Open(path, &pebble.Options{ErrorIfNotExists: true, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	seen := 0
	for it.First(); it.Valid(); it.Next() {
		v, ok := want[string(it.Key())]
		if !ok {
			return fmt.Errorf("holds key %q, which is not in the changelog's latest state", it.Key())
		}
		if !bytes.Equal(it.Value(), v) {
			return fmt.Errorf("key %q holds %q, want its latest value %q", it.Key(), it.Value(), v)
		}
		seen++
	}
	if err := it.Error(); err != nil {
		return err
	}
	if seen != len(want) {
		return fmt.Errorf("holds %d keys, want %d", seen, len(want))
	}
	return nil
}
