package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/clientconfig"
)

// saslBroker starts an embedded broker that takes SCRAM-SHA-256 logins
// of alice with password.
func saslBroker(t *testing.T, password string) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{SASLUser: "alice", SASLPassword: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// clientProperties writes a client config reaching b as alice with
// password. A backslash escapes in
// .properties files too: the JAAS line's \" is \\" there.
func clientProperties(t *testing.T, b *broker.Broker, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	text := "# the embedded broker, as alice\nbootstrap.servers=" + b.Addr() + "\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
		"    username=\"alice\" password=\"" + strings.ReplaceAll(password, `"`, `\\"`) + "\";\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkAuthError: err is the refused login of alice with SCRAM-SHA-256,
// and the password is nowhere in it.
func checkAuthError(t *testing.T, err error, password string) {
	t.Helper()
	var ae *clientconfig.AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v, want a *clientconfig.AuthError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "SCRAM-SHA-256") || !strings.Contains(msg, `user "alice"`) || strings.Contains(msg, password) {
		t.Errorf("error %q: want SCRAM-SHA-256 and user \"alice\" named, and not the password", msg)
	}
}

// TestGenClientConfig: braid gen with --client-config reaches a SASL
// broker (bootstrap.servers in place of --brokers) with the right
// password, and fails at once, naming the mechanism and the user, with
// the wrong one, which $BRAID_KAFKA_SASL_JAAS_CONFIG overrides the file
// with.
func TestGenClientConfig(t *testing.T) {
	const password = `s3cret "horse"`
	b := saslBroker(t, password)
	path := clientProperties(t, b, password)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"gen", "--client-config", path, "--topic", "orders", "--rate", "100", "--duration", "300ms"}, &out, io.Discard); err != nil {
		t.Fatalf("gen with the right password: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `records to "orders"`) {
		t.Errorf("no summary:\n%s", out.String())
	}

	t.Setenv(clientconfig.EnvName("sasl.jaas.config"),
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="wrong horse";`)
	began := time.Now()
	err := run(ctx, []string{"gen", "--client-config", path, "--topic", "orders", "--duration", "1m"}, io.Discard, io.Discard)
	checkAuthError(t, err, "wrong horse")
	if took := time.Since(began); took > clientconfig.CheckTimeout {
		t.Errorf("gen took %v to fail", took)
	}
}

// TestRunClientConfigWrongPassword: braid run, of a design file and of
// a deployment, and braid serve --brokers, with a client config
// ($BRAID_CLIENT_CONFIG) of the wrong password, fail at once naming the
// mechanism and the user.
func TestRunClientConfigWrongPassword(t *testing.T) {
	b := saslBroker(t, "right")
	t.Setenv(clientconfig.FileEnv, clientProperties(t, b, "wr0ng"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	design := filepath.Join("..", "..", "designer", "testdata", "orders-windowed.json")
	for _, args := range [][]string{
		{"run", design, "--instance-id", "p1", "--state-dir", t.TempDir(), "--telemetry-topic", ""},
		{"run", "--deployment", "orders", "--instance-id", "p1", "--state-dir", t.TempDir()},
		{"serve", "--brokers", b.Addr(), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0"},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			err := run(ctx, args, io.Discard, io.Discard)
			checkAuthError(t, err, "wr0ng")
		})
	}
}

// TestClientConfigUnknownProperty: a command refuses a client config
// with an unknown property, naming it with its file and line.
func TestClientConfigUnknownProperty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte("security.protocol=SSL\n\nssl.truststore.location=/ca.pem\nssl.trustore.type=PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"gen", "run"} {
		args := []string{cmd, "--client-config", path, "--topic", "t"}
		if cmd == "run" {
			args = []string{cmd, "--client-config", path, filepath.Join("..", "..", "designer", "testdata", "orders-windowed.json")}
		}
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "ssl.trustore.type ("+path+":4): unknown property") {
			t.Errorf("%s: %v, want ssl.trustore.type named at %s:4", cmd, err, path)
		}
	}
}

// selfSigned makes a self-signed certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T, name string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestGenClientConfigUntrustedBroker: braid gen with security.protocol
// SSL against a TLS cluster whose certificate the truststore does not
// hold fails at once, naming the broker and the truststore; with the
// cluster's certificate in the truststore it produces.
func TestGenClientConfigUntrustedBroker(t *testing.T) {
	cert, certPEM := selfSigned(t, "broker")
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	addr := cluster.ListenAddrs()[0]
	dir := t.TempDir()
	_, otherPEM := selfSigned(t, "another CA")
	for _, tc := range []struct {
		name  string
		trust []byte
		err   string
	}{
		{"untrusted", otherPEM, "connecting to broker " + addr + " over TLS: its certificate is not trusted by ssl.truststore.location " + filepath.Join(dir, "untrusted.pem")},
		{"trusted", certPEM, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truststore := filepath.Join(dir, tc.name+".pem")
			if err := os.WriteFile(truststore, tc.trust, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("BRAID_KAFKA_SECURITY_PROTOCOL", "SSL")
			t.Setenv("BRAID_KAFKA_SSL_TRUSTSTORE_LOCATION", truststore)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run(ctx, []string{"gen", "--brokers", addr, "--topic", "orders", "--duration", "200ms"}, io.Discard, io.Discard)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("gen: %v", err)
				}
				return
			}
			var ce *clientconfig.CertificateError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("gen: %v, want a *clientconfig.CertificateError saying %q", err, tc.err)
			}
		})
	}
}
