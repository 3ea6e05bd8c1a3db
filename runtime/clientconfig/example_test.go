package clientconfig_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/clientconfig"
)

// A client configuration in Kafka's property names, one property
// overridden by the environment, turned into franz-go options.
func Example() {
	dir, err := os.MkdirTemp("", "clientconfig")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "client.properties")
	err = os.WriteFile(path, []byte(`# the cluster's SASL login
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" password="p a\\"ss";
`), 0o600)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := clientconfig.Load(path, []string{"BRAID_KAFKA_SASL_MECHANISM=SCRAM-SHA-256"})
	if err != nil {
		log.Fatal(err)
	}
	opts, err := cfg.Opts()
	if err != nil {
		log.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:9092"))...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	fmt.Println(cfg)
	fmt.Println(cfg.User(), "from", cfg.Sources["sasl.mechanism"])
	// Output:
	// sasl.jaas.config=[redacted] sasl.mechanism=SCRAM-SHA-256 security.protocol=SASL_PLAINTEXT
	// alice from environment variable BRAID_KAFKA_SASL_MECHANISM
}
