package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidstream/braid/e2e/chaos"
	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
)

// The short broker-fault runs: the broker killed and restarted, or cut
// off at a proxy, under two workers committing every 200 ms; each worker
// must commit again within chaos.MaxResume of the broker's return, and
// the outputs must pass the chaos checks. `make chaos` runs every fault
// under both guarantees.

func TestBrokerKillRestartExactlyOnce(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	runBrokerFault(t, "kill-restart-5s", streams.ExactlyOnce)
}

func TestBrokerCutAtLeastOnce(t *testing.T) {
	skipShort(t, "waits out broker timeouts")
	runBrokerFault(t, "cut-15s", streams.AtLeastOnce)
}

// runBrokerFault runs one fault with the built binaries, its logs in a
// test dir, and fails naming the fault and the worker that did not
// resume, or the check that did not pass, with the logs' tails.
func runBrokerFault(t *testing.T, fault string, g streams.Guarantee) {
	t.Helper()
	runBrokerFaultOn(t, nil, fault, g)
}

// runBrokerFaultOn is runBrokerFault on an Apache Kafka cluster, or on
// the embedded broker when k is nil.
func runBrokerFaultOn(t *testing.T, k *brokertest.Kafka, fault string, g streams.Guarantee) {
	t.Helper()
	f, err := chaos.ParseFault(fault)
	if err != nil {
		t.Fatal(err)
	}
	o := chaos.FaultOptions{Options: chaos.Options{Guarantee: g, Keys: 40, Kafka: k}, Fault: f}
	if k == nil {
		o.Braid, o.Worker = chaosBinaries(t)
	} else if o.Worker, err = buildChaosWorker(); err != nil {
		t.Fatal(err)
	}
	o.Dir = chaosDir(t)
	o.Progress = logWriter{t}
	// Bounds on a run that does not end, not on how fast it is: a worker
	// that does not resume fails it after ResumeWait (30 s).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := chaos.RunFault(ctx, o)
	if err != nil {
		failWithLogs(t, o.Dir, fmt.Errorf("%s (%s, seed %d) failed: %w", fault, g, rep.Seed, err))
	}
	t.Logf("%s (seed %d, %v)", rep.ResultLine(), rep.Seed, rep.Elapsed.Round(time.Millisecond))
	if err := rep.Err(); err != nil {
		failWithLogs(t, o.Dir, err)
	}
}
