package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SnapshotTarget is the ratio (changelog restore time over snapshot
// restore time) the snapshot benchmark must reach.
const SnapshotTarget = 5.0

// SnapshotOptions configure RunSnapshot. Zero fields take the defaults.
type SnapshotOptions struct {
	Keys int       // keys in the store, one changelog record each; default 1,000,000 (about 100 MB)
	Tail int       // changelog records written after the snapshot; default 10,000
	Out  io.Writer // where the report goes; default os.Stdout
}

func (o SnapshotOptions) withDefaults() SnapshotOptions {
	if o.Keys == 0 {
		o.Keys = 1_000_000
	}
	if o.Tail == 0 {
		o.Tail = 10_000
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// SnapshotReport is what RunSnapshot measured.
type SnapshotReport struct {
	Keys, Tail int
	// Changelog and Snapshot are the restores' times, from the task's
	// assignment to the end of its store's restore.
	Changelog, Snapshot time.Duration
	// SnapshotBytes is the snapshot's size; Took how long taking and
	// uploading it took.
	SnapshotBytes int64
	Took          time.Duration
	// Ratio is Changelog over Snapshot.
	Ratio float64
}

// The snapshot benchmark's application and store: its changelog is
// snapshotApp-snapshotStore-changelog.
const (
	snapshotApp   = "bench-snapshot"
	snapshotStore = "store"
)

// RunSnapshot measures a restore from a snapshot against one from the
// changelog: it seeds a key-value store's changelog with Keys records of
// as many keys, lets an App restore it and snapshot it into a blob store
// (a directory, file://), appends Tail records, then restores the store
// on fresh state directories twice, from the changelog alone and from the
// snapshot plus the tail, and checks both against the changelog's latest
// values.
func RunSnapshot(ctx context.Context, opts SnapshotOptions) (SnapshotReport, error) {
	opts = opts.withDefaults()
	rep := SnapshotReport{Keys: opts.Keys, Tail: opts.Tail}
	if opts.Keys < 0 || opts.Tail < 0 {
		return rep, errors.New("bench snapshot: keys and tail must not be negative")
	}
	b, err := startBroker(broker.Config{Partitions: 1})
	if err != nil {
		return rep, fmt.Errorf("bench snapshot: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()
	blobDir, err := os.MkdirTemp("", "braid-bench-snapshots-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(blobDir)
	blob := "file://" + filepath.ToSlash(blobDir)
	changelog := snapshotApp + "-" + snapshotStore + "-changelog"

	w := opts.Out
	fmt.Fprintf(w, "bench snapshot: a key-value store of %d keys, a snapshot in a directory (file://), then %d more changelog records; embedded broker\n", opts.Keys, opts.Tail)
	if err := SeedChangelog(ctx, brokers, changelog, 1, opts.Keys, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench snapshot: %w", err)
	}
	taken, err := takeSnapshot(ctx, brokers, blob)
	if err != nil {
		return rep, fmt.Errorf("bench snapshot: %w", err)
	}
	rep.SnapshotBytes, rep.Took = taken.Bytes, taken.Took
	fmt.Fprintf(w, "  snapshot %s: %.1f MB in %d files, taken and uploaded in %v\n", taken.ID, mb(taken.Bytes), taken.Files, taken.Took.Round(time.Millisecond))
	if err := Seed(ctx, brokers, changelog, 1, opts.Tail, opts.Keys); err != nil {
		return rep, fmt.Errorf("bench snapshot: seeding the tail: %w", err)
	}
	want := restoredState{}
	if _, err := readTopic(ctx, brokers, changelog, func(r *kgo.Record) error { want.apply(r); return nil }); err != nil {
		return rep, fmt.Errorf("bench snapshot: %w", err)
	}

	full, err := timedRestore(ctx, brokers, streams.SnapshotConfig{}, want)
	if err != nil {
		return rep, fmt.Errorf("bench snapshot: restoring from the changelog: %w", err)
	}
	fmt.Fprintf(w, "  changelog restore:           %6d ms  (%d records)\n", full.took.Milliseconds(), full.end.Restored)
	snap, err := timedRestore(ctx, brokers, streams.SnapshotConfig{URL: blob, Records: -1, Interval: time.Hour}, want)
	if err != nil {
		return rep, fmt.Errorf("bench snapshot: restoring from the snapshot: %w", err)
	}
	if snap.start.Snapshot == nil {
		return rep, fmt.Errorf("bench snapshot: the restore did not use the snapshot (skipped: %+v)", snap.start.Skipped)
	}
	if snap.end.Restored != int64(opts.Tail) {
		return rep, fmt.Errorf("bench snapshot: after the snapshot the restore replayed %d records, want the tail's %d", snap.end.Restored, opts.Tail)
	}
	fmt.Fprintf(w, "  snapshot + tail restore:     %6d ms  (%.1f MB loaded in %d ms, then %d records)\n",
		snap.took.Milliseconds(), mb(snap.start.Snapshot.Bytes), snap.start.Snapshot.Took.Milliseconds(), snap.end.Restored)
	rep.Changelog, rep.Snapshot = full.took, snap.took
	rep.Ratio = full.took.Seconds() / snap.took.Seconds()
	fmt.Fprintf(w, "changelog time / snapshot time: %.2f (target >= %.0f)\n", rep.Ratio, SnapshotTarget)
	fmt.Fprintf(w, "RESULT snapshot ratio=%.2f changelog_ms=%d snapshot_ms=%d snapshot_mb=%.1f\n",
		rep.Ratio, full.took.Milliseconds(), snap.took.Milliseconds(), mb(rep.SnapshotBytes))
	return rep, nil
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// snapshotTopology is the benchmark's App: a key-value store of the
// latest value of each key, whose input stays empty; only its restore
// runs.
func snapshotTopology() (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.Stream([]string{snapshotApp + "-in"}, streams.WithSerdes(streams.Bytes, streams.Bytes)).
		GroupByKey().
		Reduce(func(_, v any) (any, error) { return v, nil }, streams.Materialized(streams.StoreOptions{Name: snapshotStore, ValueSerde: streams.Bytes}))
	return b.Build()
}

// snapshotWatch is the benchmark's hook: when the task was assigned, its
// store's restore start and end, and the snapshots taken.
type snapshotWatch struct {
	mu         sync.Mutex
	assigned   time.Time
	start, end streams.RestoreEvent
	ended      chan time.Time
	taken      chan streams.SnapshotEvent
}

func newSnapshotWatch() *snapshotWatch {
	return &snapshotWatch{ended: make(chan time.Time, 1), taken: make(chan streams.SnapshotEvent, 16)}
}

func (s *snapshotWatch) OnTaskAssigned(streams.TaskEvent) {
	s.mu.Lock()
	if s.assigned.IsZero() {
		s.assigned = time.Now()
	}
	s.mu.Unlock()
}

func (s *snapshotWatch) OnRestoreStart(e streams.RestoreEvent) {
	s.mu.Lock()
	s.start = e
	s.mu.Unlock()
}

func (s *snapshotWatch) OnRestoreProgress(streams.RestoreEvent) {}

func (s *snapshotWatch) OnRestoreEnd(e streams.RestoreEvent) {
	now := time.Now()
	s.mu.Lock()
	s.end = e
	s.mu.Unlock()
	select {
	case s.ended <- now:
	default:
	}
}

func (s *snapshotWatch) OnSnapshotTaken(e streams.SnapshotEvent) {
	select {
	case s.taken <- e:
	default:
	}
}

// runSnapshotApp runs the benchmark's App on a fresh state dir with snaps
// until until returns, and then closes it.
func runSnapshotApp(ctx context.Context, brokers []string, snaps streams.SnapshotConfig, watch *snapshotWatch, until func(*streams.App, <-chan error) error) error {
	if _, err := ensureEmptyInput(ctx, brokers, snapshotApp+"-"+snapshotStore+"-changelog", snapshotApp+"-in"); err != nil {
		return err
	}
	topo, err := snapshotTopology()
	if err != nil {
		return err
	}
	stateDir, err := os.MkdirTemp("", "braid-bench-snapshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	a, err := streams.New(topo, streams.Config{
		ApplicationID: snapshotApp, Brokers: brokers, StateDir: stateDir,
		CommitInterval: 100 * time.Millisecond, ClientOptions: ClientOptions(),
		Snapshots: snaps, Hooks: []streams.Hook{watch},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	err = until(a, runErr)
	a.Close()
	if rerr := <-runErr; rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// takeSnapshot restores the store (unmeasured) with snapshots on, due at
// the first commit, and returns the first snapshot taken.
func takeSnapshot(ctx context.Context, brokers []string, blob string) (streams.SnapshotEvent, error) {
	watch := newSnapshotWatch()
	var taken streams.SnapshotEvent
	err := runSnapshotApp(ctx, brokers, streams.SnapshotConfig{URL: blob, Records: 1, Interval: time.Hour, BytesPerSecond: -1}, watch,
		func(_ *streams.App, runErr <-chan error) error {
			select {
			case taken = <-watch.taken:
				return taken.Err
			case err := <-runErr:
				return fmt.Errorf("taking a snapshot: Run returned early: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	return taken, err
}

// restoreTiming is one measured restore.
type restoreTiming struct {
	took       time.Duration
	start, end streams.RestoreEvent
}

// timedRestore restores the store on a fresh state dir with snaps and
// returns how long it took from the task's assignment to the end of the
// restore; then, not timed, it checks the store against want.
func timedRestore(ctx context.Context, brokers []string, snaps streams.SnapshotConfig, want restoredState) (restoreTiming, error) {
	watch := newSnapshotWatch()
	var rt restoreTiming
	err := runSnapshotApp(ctx, brokers, snaps, watch, func(a *streams.App, runErr <-chan error) error {
		select {
		case end := <-watch.ended:
			watch.mu.Lock()
			rt = restoreTiming{took: end.Sub(watch.assigned), start: watch.start, end: watch.end}
			watch.mu.Unlock()
		case err := <-runErr:
			return fmt.Errorf("Run returned early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
		return want.checkRows(func(fn func(key, value []byte) error) error { return rangeRestored(ctx, a, snapshotStore, fn) })
	})
	return rt, err
}
