package clientconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSASLSSLCluster: a Kafka-protocol cluster (kfake) listening with
// TLS, requiring the client's certificate and a SCRAM-SHA-512 login,
// is reached with a properties file of SASL_SSL, the truststore and a
// keystore whose key is encrypted: Check passes and a record goes
// through. The wrong password is an *AuthError.
func TestSASLSSLCluster(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "braid test CA")
	serverCert, _, _ := ca.issue(t, "broker", net.ParseIP("127.0.0.1"))
	_, clientPEM, clientKey := ca.issue(t, "client")
	pool := x509.NewCertPool()
	pool.AddCert(ca.caCert)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "secured"), kfake.EnableSASL(), kfake.Superuser(ScramSHA512, "alice", "right"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	truststore := writeBytes(t, dir, "ca.pem", ca.caPEM)
	keystore := writeBytes(t, dir, "client.pem", encryptPKCS8(t, clientKey, "key pw"), clientPEM)
	props := func(password string) string {
		return writeBytes(t, dir, "client.properties", []byte(strings.Join([]string{
			"bootstrap.servers=" + strings.Join(cluster.ListenAddrs(), ","),
			"security.protocol=SASL_SSL",
			"sasl.mechanism=SCRAM-SHA-512",
			"sasl.username=alice",
			"sasl.password=" + password,
			"ssl.truststore.type=PEM",
			"ssl.truststore.location=" + truststore,
			"ssl.keystore.location=" + keystore,
			"ssl.key.password=key pw",
			"client.id=braid-test",
		}, "\n")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := Load(props("right"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(ctx, c.BootstrapServers); err != nil {
		t.Fatalf("Check: %v", err)
	}
	opts, err := c.Opts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.BootstrapServers...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "secured", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("producing over SASL_SSL: %v", err)
	}

	c, err = Load(props("wrong"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Check(ctx, c.BootstrapServers)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Mechanism != ScramSHA512 || ae.User != "alice" {
		t.Fatalf("the wrong password: %v, want an *AuthError for alice with SCRAM-SHA-512", err)
	}
}
