package clientconfig_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/clientconfig"
)

// TestCheckAgainstSASLBroker: the embedded broker with SCRAM-SHA-256
// credentials lets a client with the right password in; with the wrong
// one Check fails with an *AuthError naming the mechanism and the user,
// not the password; a broker that is not there is not Check's concern.
func TestCheckAgainstSASLBroker(t *testing.T) {
	b, err := broker.Start(broker.Config{SASLUser: "alice", SASLPassword: "right horse"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	jaas := func(pw string) string {
		return `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="` + pw + `";`
	}
	ok := clientconfig.Config{SecurityProtocol: clientconfig.SASLPlaintext, SASLMechanism: clientconfig.ScramSHA256, SASLJAASConfig: jaas("right horse")}
	if err := ok.Check(context.Background(), b.Addrs()); err != nil {
		t.Fatalf("the right password: %v", err)
	}
	wrong := ok
	wrong.SASLJAASConfig = jaas("battery staple")
	err = wrong.Check(context.Background(), b.Addrs())
	var ae *clientconfig.AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("the wrong password: %v, want an *AuthError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "SCRAM-SHA-256") || !strings.Contains(msg, `user "alice"`) || strings.Contains(msg, "battery") {
		t.Errorf("error %q: want the mechanism and the user named, and not the password", msg)
	}
	// A broker that does not answer: nil, the command waits for it.
	addr := b.Addrs()[0]
	b.Close()
	if err := wrong.Check(context.Background(), []string{addr}); err != nil {
		t.Errorf("no broker: %v, want nil", err)
	}
}
