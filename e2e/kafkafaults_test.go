package e2e

import (
	"testing"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
)

// The short runs of `make chaos CHAOS_ARGS=--kafka`: its broker faults on
// a three-node Apache Kafka cluster under exactly-once, each checked as
// the embedded broker's faults are. TestChaosKafkaBrokerStop stops one
// node with SIGSTOP for 15 s (every worker stalls until its requests time
// out, then goes on); the real-Kafka pass of make test runs it
// (kafka/tests.txt). TestChaosKafkaLeaderKill kills the node leading the
// most input, changelog and sink partitions (the others must take over
// while it is down); it runs by hand until the start-up shortfall
// docs/testing.md tells of is found.

func TestChaosKafkaBrokerStop(t *testing.T) { runKafkaFaults(t, "stop-15s") }

func TestChaosKafkaLeaderKill(t *testing.T) { runKafkaFaults(t, "leader-kill-20s") }

// runKafkaFaults runs each fault under exactly-once on a three-node
// cluster of the test's own, whatever cluster the package shares: one the
// test may kill.
func runKafkaFaults(t *testing.T, faults ...string) {
	skipShort(t, "waits out Kafka's broker session timeout")
	if !brokertest.OnKafka() {
		t.Skipf("needs Apache Kafka: set %s (make test-kafka sets it); the test starts a three-node cluster of its own", brokertest.EnvKafka)
	}
	k, err := brokertest.StartKafka(3)
	if err != nil {
		t.Fatalf("starting a three-node Apache Kafka: %v", err)
	}
	t.Cleanup(func() { k.Stop() })
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) { runBrokerFaultOn(t, k, fault, streams.ExactlyOnce) })
	}
}
