package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/e2e/chaos"
	"github.com/braidstream/braid/runtime/streams"
)

// The short chaos runs: the broker and three workers as processes, a
// worker killed with SIGKILL every few seconds, every output checked
// against the inputs. `make chaos` runs long ones.

// buildChaosWorker builds the chaos worker once per test binary run.
var buildChaosWorker = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "braid-e2e-chaos-")
	if err != nil {
		return "", err
	}
	return chaos.BuildWorker(context.Background(), dir)
})

func TestChaosExactlyOnce(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	runChaos(t, chaos.Options{
		Guarantee: streams.ExactlyOnce,
		Records:   3000,
		Keys:      40,
		Duration:  15 * time.Second,
		Kills:     3,
	})
}

func TestChaosAtLeastOnce(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	runChaos(t, chaos.Options{
		Guarantee: streams.AtLeastOnce,
		Records:   2000,
		Keys:      40,
		Duration:  10 * time.Second,
		Kills:     2,
		// The runtime's 30 s default would leave the run waiting for
		// the last commit.
		CommitInterval: 200 * time.Millisecond,
	})
}

// chaosBinaries returns the built braid binary and chaos worker.
func chaosBinaries(t *testing.T) (braid, worker string) {
	t.Helper()
	var err error
	if braid, err = buildBraid(); err != nil {
		t.Fatal(err)
	}
	if worker, err = buildChaosWorker(); err != nil {
		t.Fatal(err)
	}
	return braid, worker
}

// chaosDir is where a chaos run keeps its workers' logs, state and commit
// logs: a test dir, removed after the test, unless BRAID_CHAOS_KEEP names
// a directory, where a failed run's files are left for a person to read
// (the logs' tails in the failure are not always enough).
func chaosDir(t *testing.T) string {
	keep := os.Getenv("BRAID_CHAOS_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(keep, strings.NewReplacer("/", "-").Replace(t.Name())+"-")
	if err != nil {
		t.Fatalf("making a chaos dir under BRAID_CHAOS_KEEP: %v", err)
	}
	t.Logf("the run's files are kept in %s", dir)
	return dir
}

// runChaos runs o with the built binaries, its logs in a test dir, and
// fails with the report's examples and the logs' tails when the guarantee
// did not hold or the run did not complete.
func runChaos(t *testing.T, o chaos.Options) {
	t.Helper()
	o.Braid, o.Worker = chaosBinaries(t)
	o.Dir = chaosDir(t)
	o.Progress = logWriter{t}
	// A worker killed while the group prepares a rebalance holds the
	// group until the rebalance timeout removes it (the runtime asks for
	// its broker timeout plus a session timeout, 13 s here; franz-go's
	// default 60 s held it for a minute, and kept it once for good);
	// nothing is committed meanwhile. The limits are well above that, so
	// that only a run that never completes fails.
	o.CompletionTimeout = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		failWithLogs(t, o.Dir, fmt.Errorf("the run failed before its checks (seed %d): %w", rep.Seed, err))
	}
	t.Logf("%s (seed %d, %v)", rep.ResultLine(), rep.Seed, rep.Elapsed.Round(time.Millisecond))
	if err := rep.Err(); err != nil {
		failWithLogs(t, o.Dir, err)
	}
	if rep.Kills < o.Kills || rep.Inputs != o.Records {
		t.Fatalf("the run made %d kills over %d inputs, want %d over %d", rep.Kills, rep.Inputs, o.Kills, o.Records)
	}
}

// logWriter logs each line written to it.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// skipShort skips a test that takes tens of seconds by design under -short
// (make test-quick); make test runs it.
func skipShort(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (" + why + "): skipped with -short")
	}
}

// failWithLogs fails t with err after the tail of the run's logs, so that
// the error is the failure's last line: a CI log cut to its end still
// shows why the run failed, not only what the workers logged last.
func failWithLogs(t *testing.T, dir string, err error) {
	t.Helper()
	t.Logf("the run's logs (in %s) end:\n%s", dir, chaos.TailLogs(dir, 40))
	t.Fatal(err)
}
