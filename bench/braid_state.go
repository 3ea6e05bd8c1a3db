package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// braidCounts numbers the counts BraidCountWith runs, for their
// application ids.
var braidCounts atomic.Int64

// BraidCount is the Braid side of the count benchmark:
// GroupByKey().Count() with the record cache on, written to out as 8-byte
// big-endian counts, at-least-once, committing every second. It measures
// what HandwrittenCount measures: from the call until every record is
// processed and committed, the state and its changelog included.
func BraidCount(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
	return braidCount(streams.AtLeastOnce, time.Second, false)(ctx, brokers, in, out, records)
}

// BraidCountWith returns BraidCount's count run under guarantee g,
// committing every commitInterval: what the eos benchmark compares, the
// same topology under each guarantee. It measures from the first record
// processed to the commit of the last: the span where the guarantees
// differ, without the start-up both pay once (creating clients and
// stores, joining the group), which dominates short runs and made their
// ratios noise. Each call is a new application, so that it reads the
// input from the start.
func BraidCountWith(g streams.Guarantee, commitInterval time.Duration) CountFunc {
	return braidCount(g, commitInterval, true)
}

// braidCount is BraidCount's count under guarantee g, measured from the
// call or, with fromFirstRecord, from the first record processed.
func braidCount(g streams.Guarantee, commitInterval time.Duration, fromFirstRecord bool) CountFunc {
	return func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
		start := time.Now()
		topo, err := countTopology(in, out)
		if err != nil {
			return Result{}, err
		}
		stateDir, err := os.MkdirTemp("", "braid-bench-count-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(stateDir)
		prefix := "bench-count-braid"
		if g == streams.ExactlyOnce {
			prefix += "-eos"
		}
		id := fmt.Sprintf("%s-%d", prefix, braidCounts.Add(1))
		cfg := streams.Config{
			ApplicationID:       id,
			Brokers:             brokers,
			StateDir:            stateDir,
			CommitInterval:      commitInterval,
			ProcessingGuarantee: g,
			ClientOptions:       ClientOptions(),
		}
		if !fromFirstRecord {
			return runUntilCommitted(ctx, start, topo, cfg, records)
		}
		first := &firstRecord{}
		cfg.Hooks = []streams.Hook{first}
		res, err := runUntilCommitted(ctx, start, topo, cfg, records)
		if err == nil {
			res.Elapsed -= first.at().Sub(start)
		}
		return res, err
	}
}

// countTopology is the count benchmark's topology: GroupByKey().Count()
// of in on the bytes serde, store "counts" (record cache on), written to out
// as 8-byte big-endian counts.
func countTopology(in, out string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.Stream([]string{in}, streams.WithSerdes(streams.Bytes, streams.Bytes)).
		GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		To(out, streams.WithSerdes(streams.Bytes, streams.Int64))
	return b.Build()
}

// runStateful runs a stateful topo as application id with
// runUntilCommitted: at-least-once, committing every second, on a state
// dir of its own that it removes afterwards.
func runStateful(ctx context.Context, start time.Time, topo *streams.Topology, brokers []string, id string, records int) (Result, error) {
	stateDir, err := os.MkdirTemp("", id+"-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(stateDir)
	return runUntilCommitted(ctx, start, topo, streams.Config{
		ApplicationID:  id,
		Brokers:        brokers,
		StateDir:       stateDir,
		CommitInterval: time.Second,
		ClientOptions:  ClientOptions(),
	}, records)
}

// runUntilCommitted runs topo until records input records are processed,
// closes the App (which commits at once) and returns the time from start
// to that commit, split in phases by a phaseClock fed from the same
// millisecond poll of the App's processed count (so each phase bound is
// up to a millisecond late), and from the time the first record began to
// be processed (see firstRecordWatcher).
func runUntilCommitted(ctx context.Context, start time.Time, topo *streams.Topology, cfg streams.Config, records int) (Result, error) {
	done := &commitWatcher{want: int64(records), done: make(chan time.Time, 1)}
	first := &firstRecordWatcher{}
	cfg.Hooks = append(cfg.Hooks, done, first)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := streams.New(topo, cfg)
	if err != nil {
		return Result{}, err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	clock := newPhaseClock(start, records)
	for {
		n := processed(app)
		if n > 0 && clock.first.n == 0 {
			if at := first.first(); !at.IsZero() {
				clock.observe(at, 1)
			}
		}
		clock.observe(time.Now(), int(n))
		if n >= int64(records) {
			break
		}
		select {
		case err := <-runErr:
			return Result{}, fmt.Errorf("braid: Run returned early: %w", err)
		case <-ctx.Done():
			app.Close()
			return Result{}, ctx.Err()
		case <-tick.C:
		}
	}
	app.Close()
	if err := <-runErr; err != nil {
		return Result{}, fmt.Errorf("braid: %w", err)
	}
	select {
	case end := <-done.done:
		return Result{Records: records, Elapsed: end.Sub(start), Phases: clock.phases(end)}, nil
	default:
		return Result{}, errors.New("braid: the App closed without committing every record")
	}
}

// BraidRestore is the Braid side of the restore benchmark: an App of
// application "bench-restore" whose store "store" has the seeded changelog,
// started on an empty state dir, restores it before it processes. It
// measures from the call until every store reported the end of its
// restore (every restored batch committed to pebble, not fsynced), split
// in phases by the restore events (see restoreWatcher), then,
// not timed, reads the store back through the App (App.Range, the
// committed rows) for check.
func BraidRestore(ctx context.Context, brokers []string, changelog string, records int, check func(StoreRows) error) (Result, error) {
	start := time.Now()
	const app, store, input = "bench-restore", "store", "bench-restore-in"
	if want := app + "-" + store + "-changelog"; changelog != want {
		return Result{}, fmt.Errorf("braid restore: changelog %q, want %q", changelog, want)
	}
	partitions, err := ensureEmptyInput(ctx, brokers, changelog, input)
	if err != nil {
		return Result{}, err
	}
	b := streams.NewBuilder()
	b.Stream([]string{input}, streams.WithSerdes(streams.Bytes, streams.Bytes)).
		GroupByKey().
		Reduce(func(_, v any) (any, error) { return v, nil }, streams.Materialized(streams.StoreOptions{Name: store, ValueSerde: streams.Bytes}))
	topo, err := b.Build()
	if err != nil {
		return Result{}, err
	}
	stateDir, err := os.MkdirTemp("", "braid-bench-restore-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(stateDir)
	watch := &restoreWatcher{stores: partitions, done: make(chan struct{}), clock: newPhaseClock(start, records)}
	a, err := streams.New(topo, streams.Config{
		ApplicationID: app,
		Brokers:       brokers,
		StateDir:      stateDir,
		ClientOptions: ClientOptions(),
		Hooks:         []streams.Hook{watch},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return Result{}, err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	select {
	case <-watch.done:
	case err := <-runErr:
		return Result{}, fmt.Errorf("braid restore: Run returned early: %w", err)
	case <-ctx.Done():
		a.Close()
		return Result{}, ctx.Err()
	}
	end := time.Now()
	checkErr := check(func(fn func(key, value []byte) error) error { return rangeRestored(ctx, a, store, fn) })
	a.Close()
	if err := <-runErr; err != nil {
		return Result{}, fmt.Errorf("braid restore: %w", err)
	}
	if checkErr != nil {
		return Result{}, fmt.Errorf("braid restore: %w", checkErr)
	}
	if n := watch.restored.Load(); n != int64(records) {
		return Result{}, fmt.Errorf("braid restore: restored %d records, want %d", n, records)
	}
	return Result{Records: records, Elapsed: end.Sub(start), Phases: watch.phases(end)}, nil
}

// rangeRestored calls fn with every row of store in a, as []byte key and
// value. The last store's end is reported a moment before its task stops
// restoring, and until then the App answers StoreNotReadyError: it scans
// without fn until a scan gets through every task (none restores again:
// one instance never rebalances), then once with fn, so that fn sees
// every row once.
func rangeRestored(ctx context.Context, a *streams.App, store string, fn func(key, value []byte) error) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		err := a.Range(store, nil, nil, func(any, any) bool { return true })
		var notReady *streams.StoreNotReadyError
		if err == nil {
			break
		}
		if !errors.As(err, &notReady) {
			return fmt.Errorf("reading store %q back: %w", store, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reading store %q back: %w", store, ctx.Err())
		case <-tick.C:
		}
	}
	var fnErr error
	err := a.Range(store, nil, nil, func(k, v any) bool {
		kb, kok := k.([]byte)
		vb, vok := v.([]byte)
		if !kok || !vok {
			fnErr = fmt.Errorf("store %q holds a %T key and a %T value, want []byte", store, k, v)
			return false
		}
		fnErr = fn(kb, vb)
		return fnErr == nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("reading store %q back: %w", store, err)
	}
	return nil
}

// ensureEmptyInput creates the restore App's (empty) input topic with the
// changelog's partition count and returns that count.
func ensureEmptyInput(ctx context.Context, brokers []string, changelog, input string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, changelog)
	if err != nil {
		return 0, fmt.Errorf("braid restore: describing %s: %w", changelog, err)
	}
	n := len(details[changelog].Partitions)
	if n == 0 {
		return 0, fmt.Errorf("braid restore: changelog %s has no partitions", changelog)
	}
	if err := EnsureTopic(ctx, adm, input, n); err != nil {
		return 0, err
	}
	return n, nil
}

// restoreWatcher closes done when stores restores have ended and, if
// clock is set, feeds it the records restored so far by every store: each
// event, sent after a batch is committed to pebble, carries its store's
// count.
type restoreWatcher struct {
	stores   int
	restored atomic.Int64
	mu       sync.Mutex
	ended    int
	done     chan struct{}
	clock    *phaseClock             // guarded by mu
	byStore  map[restoredStore]int64 // guarded by mu
	total    int64                   // the sum of byStore, guarded by mu
}

// restoredStore is one store of one task, whose restore events count its
// records.
type restoredStore struct {
	task  streams.TaskID
	store string
}

func (w *restoreWatcher) OnRestoreStart(streams.RestoreEvent) {}

func (w *restoreWatcher) OnRestoreProgress(e streams.RestoreEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observe(e)
}

func (w *restoreWatcher) OnRestoreEnd(e streams.RestoreEvent) {
	w.restored.Add(e.Restored)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observe(e)
	w.ended++
	if w.ended == w.stores {
		close(w.done)
	}
}

// observe feeds the clock the total after e; call it with mu held.
func (w *restoreWatcher) observe(e streams.RestoreEvent) {
	if w.clock == nil {
		return
	}
	now := time.Now()
	if w.byStore == nil {
		w.byStore = make(map[restoredStore]int64)
	}
	k := restoredStore{task: e.Task, store: e.Store}
	w.total += e.Restored - w.byStore[k]
	w.byStore[k] = e.Restored
	w.clock.observe(now, int(w.total))
}

// phases returns the restore's phases for a restore that ended at end.
func (w *restoreWatcher) phases(end time.Time) Phases {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock.phases(end)
}

// firstRecord keeps when a task's stream time first moved: when the App
// processed its first record.
type firstRecord struct {
	mu    sync.Mutex
	first time.Time
}

func (f *firstRecord) OnStreamTime(streams.StreamTimeEvent) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first.IsZero() {
		f.first = now
	}
}

func (f *firstRecord) at() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}
