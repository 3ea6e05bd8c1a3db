package e2e

import (
	"testing"

	"github.com/braidstream/braid/runtime/broker/brokertest"
)

// TestMain starts Apache Kafka for the package when BRAID_TEST_KAFKA asks
// (see brokertest); the tests that take their broker from brokertest
// (startServe's `braid serve`) then run against it.
func TestMain(m *testing.M) { brokertest.Main(m) }
