package e2e

import (
	"testing"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
)

// The short run of `make chaos CHAOS_ARGS=--kafka`: two of its broker
// faults on a three-node Apache Kafka cluster under exactly-once, the
// node leading the most input, changelog and sink partitions killed (the
// others must take over while it is down) and one node stopped with
// SIGSTOP, each checked as the embedded broker's faults are. The real-
// Kafka pass of make test runs it (kafka/tests.txt).

func TestChaosKafkaBrokerFaults(t *testing.T) {
	skipShort(t, "waits out Kafka's broker session timeout")
	if !brokertest.OnKafka() {
		t.Skipf("needs Apache Kafka: set %s (make test-kafka sets it); the test starts a three-node cluster of its own", brokertest.EnvKafka)
	}
	// A cluster of its own whatever the package shares: three nodes, and
	// one the test may kill.
	k, err := brokertest.StartKafka(3)
	if err != nil {
		t.Fatalf("starting a three-node Apache Kafka: %v", err)
	}
	t.Cleanup(func() { k.Stop() })
	for _, fault := range []string{"leader-kill-20s", "stop-15s"} {
		t.Run(fault, func(t *testing.T) { runBrokerFaultOn(t, k, fault, streams.ExactlyOnce) })
	}
}
