package process

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/clientconfig"
)

// TestClientConfigFlag: --client-config gives the process its brokers
// (bootstrap.servers, without --brokers) and SASL login; a wrong password
// ends Run at once with a *clientconfig.AuthError naming the mechanism
// and the user, not the password.
func TestClientConfigFlag(t *testing.T) {
	b, err := broker.Start(broker.Config{SASLUser: "alice", SASLPassword: "right"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte("bootstrap.servers="+b.Addr()+"\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.username=alice\nsasl.password=wr0ng\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	flags := DefineFlags(fs, "copy", "")
	if err := fs.Parse([]string{"--client-config", path, "--instance-id", "i1", "--state-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	cfg, err := flags.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Runner.Config.Brokers; len(got) != 1 || got[0] != b.Addr() {
		t.Errorf("brokers %q, want bootstrap.servers %s", got, b.Addr())
	}
	if len(cfg.Runner.Config.ClientOptions) == 0 {
		t.Error("no client options")
	}
	p, err := New(copyTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background())
	var ae *clientconfig.AuthError
	if !errors.As(err, &ae) || ae.User != "alice" || ae.Mechanism != "SCRAM-SHA-256" || strings.Contains(err.Error(), "wr0ng") {
		t.Fatalf("Run: %v, want an *AuthError for alice with SCRAM-SHA-256, without the password", err)
	}

	// An unknown property is an error of Config, naming the file's line.
	if err := os.WriteFile(path, []byte("security.protocol=SSL\nssl.truststore.locaton=/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := flags.Config(); err == nil || !strings.Contains(err.Error(), "ssl.truststore.locaton ("+path+":2): unknown property") {
		t.Errorf("Config: %v, want the unknown property named with %s:2", err, path)
	}
}
