package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// PeerRestore is the peer benchmark's restore: each side's count, filled
// once, restored into fresh state dirs (RunPeer's workload "restore").
const PeerRestore = "restore"

// PeerRestoreResult is what the restore of RunPeer measured.
type PeerRestoreResult struct {
	// Records is the changelog each side restores, of the count store of
	// each side's own count application: as many records as the input
	// has (both sides filled it with their caches off).
	Records int64
	// Braid and KStreams are the median restore times.
	Braid, KStreams time.Duration
	// Ratio is Kafka Streams' time over Braid's.
	Ratio float64
}

// RESULT returns the restore's RESULT line.
func (r PeerRestoreResult) RESULT() string {
	return fmt.Sprintf("RESULT peer-restore ratio=%.3f braid_ms=%d kstreams_ms=%d records=%d",
		r.Ratio, r.Braid.Milliseconds(), r.KStreams.Milliseconds(), r.Records)
}

// restore measures the restore: each side runs the count over the count's
// input once, with its record cache off, so that its changelog gets a
// record per input record (the same number of records and keys on both
// sides, each in its own side's format); then opts.Rounds times, sides
// alternating, a new worker of that side with the same application id and
// an empty state dir restores it: after an unmeasured restore into another
// state dir in the same process (the JVM's warm-up), from just before the
// application is created to the end of every store's restore (Kafka
// Streams' StateRestoreListener.onRestoreEnd, Braid's
// RestoreHook.OnRestoreEnd), as the worker's clock says. It reports the
// median of each side.
func (p *peerBench) restore(ctx context.Context) (PeerRestoreResult, error) {
	var res PeerRestoreResult
	inputs, err := p.input(ctx, PeerCount)
	if err != nil {
		return res, err
	}
	total, err := topicRecords(ctx, p.adm, inputs[0])
	if err != nil {
		return res, fmt.Errorf("bench peer: %w", err)
	}
	res.Records = total
	sides := []struct {
		name  string
		cmd   func([]string) *exec.Cmd
		appID string
		runs  []time.Duration
	}{{name: "braid", cmd: p.opts.Braid}, {name: "kstreams", cmd: p.opts.KStreams}}
	for i := range sides {
		s := &sides[i]
		if s.appID, err = p.fillChangelog(ctx, s.name, s.cmd, inputs, total); err != nil {
			return res, fmt.Errorf("bench peer: restore, %s, filling its changelog: %w", s.name, err)
		}
		defer p.deleteRunTopics(context.WithoutCancel(ctx), s.appID)
	}
	for round := range p.opts.Rounds {
		for k := range sides {
			i := k
			if round%2 == 1 {
				i = 1 - k
			}
			s := &sides[i]
			d, n, err := p.restoreRun(ctx, s.cmd, s.appID, inputs)
			if err != nil {
				return res, fmt.Errorf("bench peer: restore, %s, round %d: %w", s.name, round+1, err)
			}
			if n != total {
				return res, fmt.Errorf("bench peer: restore, %s, round %d: restored %d records, want %d", s.name, round+1, n, total)
			}
			fmt.Fprintf(p.opts.Out, "  %-9s %-8s round %-2d %9d records restored in %8v\n", PeerRestore, s.name, round+1, n, d)
			s.runs = append(s.runs, d)
		}
	}
	return newPeerRestoreResult(total, sides[0].runs, sides[1].runs), nil
}

// newPeerRestoreResult returns the result of records restored in the
// rounds braid and kstreams took: their medians and ratio.
func newPeerRestoreResult(records int64, braid, kstreams []time.Duration) PeerRestoreResult {
	r := PeerRestoreResult{Records: records, Braid: medianDuration(braid), KStreams: medianDuration(kstreams)}
	if r.Braid > 0 {
		r.Ratio = float64(r.KStreams) / float64(r.Braid)
	}
	return r
}

// fillChangelog runs side's count over inputs with its cache off until its
// group committed total records, and checks that its store's changelog
// (<application id>-counts-changelog on both sides) holds total records.
// It returns the application id.
func (p *peerBench) fillChangelog(ctx context.Context, side string, command func([]string) *exec.Cmd, inputs []string, total int64) (string, error) {
	appID := fmt.Sprintf("bench-peer-restore-%s-%d", side, p.runs.Add(1))
	stateDir, err := os.MkdirTemp("", appID+"-")
	if err != nil {
		return appID, err
	}
	defer os.RemoveAll(stateDir)
	if err := EnsureTopic(ctx, p.adm, appID+"-out", p.opts.Partitions); err != nil {
		return appID, err
	}
	w, err := startPeerWorker(command(p.restoreArgs(appID, stateDir, inputs, total, 0).list()))
	if err != nil {
		return appID, err
	}
	defer w.stop()
	// Its group is there once it fetched (as RunPeer's runs wait too).
	if _, err := w.await(ctx, "first"); err != nil {
		return appID, err
	}
	if _, err := p.awaitCommitted(ctx, w, appID, inputs, total); err != nil {
		return appID, err
	}
	if err := w.stop(); err != nil {
		return appID, err
	}
	n, err := topicRecords(ctx, p.adm, appID+"-counts-changelog")
	if err != nil {
		return appID, err
	}
	if n != total {
		return appID, fmt.Errorf("its changelog holds %d records, want %d (one per input record)", n, total)
	}
	return appID, nil
}

// restoreArgs are the worker arguments of the restore's count as appID:
// processing (stop after total) when stores is 0, else restoring stores
// stores after a warm-up restore.
func (p *peerBench) restoreArgs(appID, stateDir string, inputs []string, total int64, stores int) peerWorkerArgs {
	return peerWorkerArgs{workload: PeerCount, bootstrap: strings.Join(p.brokers, ","), appID: appID, stateDir: stateDir,
		input: strings.Join(inputs, ","), output: appID + "-out", guarantee: "at_least_once",
		commitIntervalMs: p.opts.CommitInterval.Milliseconds(), cacheMaxBytes: 0, threads: 1,
		stopAfterRecords: total, restoreStores: stores, restoreWarmUp: stores > 0}
}

// restoreRun runs a worker restoring application appID's count store into
// a fresh state dir and returns how long the measured restore took and
// the records it restored.
func (p *peerBench) restoreRun(ctx context.Context, command func([]string) *exec.Cmd, appID string, inputs []string) (time.Duration, int64, error) {
	stateDir, err := os.MkdirTemp("", appID+"-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(stateDir)
	w, err := startPeerWorker(command(p.restoreArgs(appID, stateDir, inputs, 0, p.opts.Partitions).list()))
	if err != nil {
		return 0, 0, err
	}
	defer w.stop()
	// A worker that does not know --restore-stores (a stale build of the
	// peer) would process instead, never to say "restored".
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start, err := w.await(ctx, "restoring")
	if err != nil {
		return 0, 0, err
	}
	end, err := w.await(ctx, "restored")
	if err != nil {
		return 0, 0, err
	}
	if end.Processed == nil {
		return 0, 0, errors.New("the worker's restored event has no record count")
	}
	return time.Duration(end.AtMs-start.AtMs) * time.Millisecond, *end.Processed, w.stop()
}

// medianDuration returns the median of ds.
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// peerRestore is the Braid worker's restore (--restore-stores N): with
// --restore-warm-up, an unmeasured restore into DIR/warm-up first; then it
// prints "restoring", restores into DIR/run, prints "restored" with the
// records restored once N stores ended their restores, closes the App and
// returns.
func peerRestore(ctx context.Context, a peerWorkerArgs, g streams.Guarantee, ev *peerEvents) error {
	if a.restoreWarmUp {
		n, err := peerRestoreOnce(ctx, a, g, filepath.Join(a.stateDir, "warm-up"), func(int64) {})
		if err != nil {
			ev.print("error", err.Error(), -1)
			return fmt.Errorf("bench peer-worker: warming up: %w", err)
		}
		ev.print("warm", "", n)
	}
	ev.print("restoring", "", -1)
	_, err := peerRestoreOnce(ctx, a, g, filepath.Join(a.stateDir, "run"), func(n int64) { ev.print("restored", "", n) })
	if err != nil {
		ev.print("error", err.Error(), -1)
		return fmt.Errorf("bench peer-worker: %w", err)
	}
	return nil
}

// peerRestoreOnce runs a's App on stateDir until a.restoreStores stores
// restored, calls restored with the records they restored (before closing,
// as Kafka Streams' worker prints its event before it closes), closes the
// App and returns that count.
func peerRestoreOnce(ctx context.Context, a peerWorkerArgs, g streams.Guarantee, stateDir string, restored func(int64)) (int64, error) {
	watch := &restoreWatcher{stores: a.restoreStores, done: make(chan struct{})}
	app, err := newPeerApp(a, g, a.appID, stateDir, a.output, []streams.Hook{watch})
	if err != nil {
		return 0, err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	select {
	case <-watch.done:
	case err := <-runErr:
		app.Close()
		return 0, fmt.Errorf("restoring: Run returned early: %w", err)
	case <-ctx.Done():
		app.Close()
		<-runErr
		return 0, ctx.Err()
	}
	n := watch.restored.Load()
	restored(n)
	app.Close()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return n, err
	}
	return n, nil
}
