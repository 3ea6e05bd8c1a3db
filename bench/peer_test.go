package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
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
