package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
)

// TestPeerWorkerRefusesBadArguments: the Braid worker of bench peer names
// the argument it cannot run with, before it reaches for a broker.
func TestPeerWorkerRefusesBadArguments(t *testing.T) {
	base := peerWorkerArgs{workload: PeerPipe, bootstrap: "127.0.0.1:1", appID: "a", stateDir: t.TempDir(),
		input: "in", output: "out", guarantee: "at_least_once", commitIntervalMs: 1000, cacheMaxBytes: 1, threads: 1}
	for _, tc := range []struct {
		change func(*peerWorkerArgs)
		want   string
	}{
		{func(a *peerWorkerArgs) { a.workload = "sort" }, `--workload "sort": unknown`},
		{func(a *peerWorkerArgs) { a.threads = 2 }, "--threads 2"},
		{func(a *peerWorkerArgs) { a.guarantee = "exactly_once" }, `--guarantee "exactly_once"`},
		{func(a *peerWorkerArgs) { a.workload = PeerJoin }, "the join takes two topics"},
		{func(a *peerWorkerArgs) { a.output = "" }, "--output are required"},
	} {
		a := base
		tc.change(&a)
		var out bytes.Buffer
		err := RunPeerWorker(context.Background(), a.list(), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunPeerWorker(%q) = %v, want an error saying %q", a.list(), err, tc.want)
		}
	}
}

// TestPeakRSS reads this process's peak resident set, which holds at least
// a buffer it has just touched.
func TestPeakRSS(t *testing.T) {
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	n, err := peakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if n < int64(len(b)) {
		t.Errorf("peakRSS = %d bytes, want at least the %d touched", n, len(b))
	}
	if _, err := peakRSS(-1); err == nil {
		t.Error("peakRSS(-1) succeeded")
	}
}

// TestPeerWorkerRestores runs the Braid side of bench peer's restore on the
// embedded broker: the count with --cache-max-bytes 0 (off) writes a
// changelog record per input record, and a worker with --restore-stores
// restores all of them into its empty state dir, after a warm-up restore
// of all of them too, saying "restoring" before "restored".
func TestPeerWorkerRestores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const records, keys, partitions = 2000, 100, 4
	if err := Seed(ctx, b.Addrs(), "in", partitions, records, keys); err != nil {
		t.Fatal(err)
	}
	adm, err := newAdmin(b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := EnsureTopic(ctx, adm, "app-out", partitions); err != nil {
		t.Fatal(err)
	}
	p := &peerBench{opts: PeerOptions{CommitInterval: 100 * time.Millisecond, Partitions: partitions}, brokers: b.Addrs()}
	fill := p.restoreArgs("app", t.TempDir(), []string{"in"}, records, 0)
	fillCtx, stopFill := context.WithCancel(ctx)
	events, fillErr := peerWorkerEvents(fillCtx, fill)
	for e := range events {
		if e.Event == "done" {
			break
		}
	}
	stopFill()
	for range events { // "closed", then the end
	}
	if err := <-fillErr; err != nil {
		t.Fatalf("filling: %v", err)
	}
	if n, err := topicRecords(ctx, adm, "app-counts-changelog"); err != nil || n != records {
		t.Fatalf("the changelog holds %d records (%v), want %d", n, err, records)
	}

	restore := p.restoreArgs("app", t.TempDir(), []string{"in"}, 0, partitions)
	events, restoreErr := peerWorkerEvents(ctx, restore)
	var got []string
	for e := range events {
		s := e.Event
		if e.Processed != nil {
			s += "=" + strconv.FormatInt(*e.Processed, 10)
		}
		got = append(got, s)
	}
	if err := <-restoreErr; err != nil {
		t.Fatalf("restoring: %v", err)
	}
	want := []string{"warm=2000", "restoring", "restored=2000"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// peerWorkerEvents runs RunPeerWorker with a in a goroutine and returns
// its events, closed when it returned, and its error after that.
func peerWorkerEvents(ctx context.Context, a peerWorkerArgs) (<-chan peerEvent, <-chan error) {
	r, w := io.Pipe()
	events, errc := make(chan peerEvent), make(chan error, 1)
	go func() {
		err := RunPeerWorker(ctx, a.list(), w)
		w.Close()
		errc <- err
	}()
	go func() {
		defer close(events)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var e peerEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		io.Copy(io.Discard, r)
	}()
	return events, errc
}

// TestPeerRestoreResult: the restore's line has each side's median round
// and Kafka Streams' time over Braid's.
func TestPeerRestoreResult(t *testing.T) {
	ms := func(ns ...int) (d []time.Duration) {
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	r := newPeerRestoreResult(1000, ms(900, 400, 500), ms(2000, 1000, 1500))
	if got, want := r.RESULT(), "RESULT peer-restore ratio=3.000 braid_ms=500 kstreams_ms=1500 records=1000"; got != want {
		t.Errorf("RESULT() = %q, want %q", got, want)
	}
}
