package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/clientconfig"
)

// kafkaPassword is alice's SCRAM password on the secured cluster: a quote
// and spaces, which the JAAS line must escape and no error may show.
const kafkaPassword = `it's "a secret"`

// TestClientConfigSASLSSLOnKafka: braid gen and braid run reach an Apache
// Kafka broker over SASL_SSL with SCRAM-SHA-512 (a CA and a broker
// certificate the test makes, alice's password quoted in sasl.jaas.config)
// and the design's counts come out of its sink; with the wrong password
// the commands fail on Kafka's SASL_AUTHENTICATION_FAILED naming the
// mechanism and the user, and with another CA in the truststore naming
// the broker and the truststore.
func TestClientConfigSASLSSLOnKafka(t *testing.T) {
	if !brokertest.OnKafka() {
		t.Skipf("needs Apache Kafka with a SASL_SSL listener, which the test starts itself: set %s (make test-kafka does)", brokertest.EnvKafka)
	}
	dir := t.TempDir()
	ca := newTestCA(t, "braid test CA")
	brokerCert, brokerKey := ca.issue(t, "broker")
	other := newTestCA(t, "another CA")
	truststore := writeTestFile(t, dir, "ca.pem", ca.certPEM)
	untrusted := writeTestFile(t, dir, "other-ca.pem", other.certPEM)
	keystore := writeTestFile(t, dir, "broker.pem", brokerKey, brokerCert, ca.certPEM)

	port, err := brokertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	secured := "127.0.0.1:" + strconv.Itoa(port)
	began := time.Now()
	k, err := brokertest.StartKafkaWith(brokertest.KafkaOptions{ExtraConfig: strings.Join([]string{
		"listeners=PLAINTEXT://127.0.0.1:@PORT@,CONTROLLER://127.0.0.1:@CONTROLLER_PORT@,SASL_SSL://" + secured,
		"advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,SASL_SSL://" + secured,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_ssl.ssl.keystore.type=PEM",
		"listener.name.sasl_ssl.ssl.keystore.location=" + keystore,
	}, "\n")})
	if err != nil {
		t.Fatalf("starting Kafka with a SASL_SSL listener: %v", err)
	}
	t.Cleanup(func() { k.Stop() })
	t.Logf("Kafka with SASL_SSL on %s started in %v", secured, time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Over the PLAINTEXT listener: alice, and the test's own reads and
	// writes.
	plain := newClient(t, kgo.SeedBrokers(k.Addrs...))
	adm := kadm.NewClient(plain)
	upserted, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: kafkaPassword}})
	if err == nil {
		err = upserted.Error()
	}
	if err != nil {
		t.Fatalf("creating alice's SCRAM-SHA-512 credentials: %v", err)
	}
	props := func(name, password, truststore string) string {
		return writeTestFile(t, dir, name, []byte("bootstrap.servers="+secured+"\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"+
			"    username=\"alice\" password=\""+strings.ReplaceAll(password, `"`, `\\"`)+"\";\n"+
			"ssl.truststore.location="+truststore+"\n"))
	}
	right := props("right.properties", kafkaPassword, truststore)
	waitForLogin(ctx, t, right)

	// braid gen over SASL_SSL produces one customer's orders to the source
	// topic, created here with its partitions' leaders elected: gen stops
	// after its --duration, and would count none of the records it had
	// to retry meanwhile on a topic it just created.
	demo := readDemoTopics(t)
	createRunTopic(t, adm, demo.source, 2)
	waitForLeaders(ctx, t, adm, demo.source)
	var out bytes.Buffer
	if err := run(ctx, []string{"gen", "--client-config", right, "--topic", demo.source, "--create=false",
		"--keys", "1", "--key-prefix", "c", "--rate", "100", "--duration", "1s"}, &out, io.Discard); err != nil {
		t.Fatalf("braid gen over SASL_SSL: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(\d+) records to "` + regexp.QuoteMeta(demo.source) + `"`).FindStringSubmatch(out.String())
	if m == nil || m[1] == "0" {
		t.Fatalf("braid gen did not say it produced records:\n%s", out.String())
	}
	produced, _ := strconv.Atoi(m[1])
	// The counts braid run must reach: the orders of 50 or more in each
	// 10 s window.
	big := bigOrders(ctx, t, k.Addrs, demo.source, produced)
	if len(big) == 0 {
		t.Fatalf("braid gen produced no order of 50 or more")
	}
	// A big order 30 s on closes their windows (grace 5 s).
	closing, err := json.Marshal(map[string]any{"customer": "c-0", "amount": 500, "ts": time.Now().Add(30 * time.Second).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: demo.source, Key: []byte("c-0"), Value: closing}).FirstErr(); err != nil {
		t.Fatalf("producing the closing order: %v", err)
	}

	// braid run over SASL_SSL: bootstrap.servers from the client config.
	p := startProcess(t, "run", "orders-demo.json", "--client-config", right, "--instance-id", "i1",
		"--state-dir", t.TempDir(), "--commit-interval", "200ms")
	waitForCounts(ctx, t, k.Addrs, demo.sink, big)
	t.Logf("braid run counted %v over SASL_SSL", big)
	p.terminate(t)

	// The wrong password: Kafka answers SASL_AUTHENTICATION_FAILED.
	wrong := props("wrong.properties", `not "it"`, truststore)
	for _, args := range [][]string{
		{"gen", "--client-config", wrong, "--topic", demo.source, "--duration", "1m"},
		{"run", "orders-demo.json", "--client-config", wrong, "--instance-id", "i2", "--state-dir", t.TempDir()},
	} {
		err := run(ctx, args, io.Discard, io.Discard)
		t.Logf("braid %s with the wrong password: %v", args[0], err)
		var ae *clientconfig.AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("braid %s with the wrong password: %v, want a *clientconfig.AuthError", args[0], err)
		}
		if msg := err.Error(); !strings.Contains(msg, "SCRAM-SHA-512") || !strings.Contains(msg, `user "alice"`) || strings.Contains(msg, `not "it"`) || strings.Contains(msg, `not \"it\"`) {
			t.Errorf("braid %s with the wrong password: %q: want SCRAM-SHA-512 and user \"alice\" named, and not the password", args[0], msg)
		}
	}

	// Another CA in the truststore.
	err = run(ctx, []string{"gen", "--client-config", props("untrusted.properties", kafkaPassword, untrusted), "--topic", demo.source, "--duration", "1m"}, io.Discard, io.Discard)
	t.Logf("braid gen trusting another CA: %v", err)
	want := "connecting to broker " + secured + " over TLS: its certificate is not trusted by ssl.truststore.location " + untrusted
	var ce *clientconfig.CertificateError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
		t.Fatalf("braid gen trusting another CA: %v, want a *clientconfig.CertificateError saying %q", err, want)
	}
}

// waitForLogin waits until the broker takes alice's login with the
// client config at path: her credentials reach the SASL listener through
// the cluster's metadata, a moment after AlterUserSCRAMs answers.
func waitForLogin(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	cfg, err := clientconfig.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		err := cfg.Check(ctx, cfg.BootstrapServers)
		var ae *clientconfig.AuthError
		if !errors.As(err, &ae) {
			if err != nil {
				t.Fatalf("logging in as alice: %v", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alice's login still refused: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitForLeaders waits until every partition of topic has a leader.
func waitForLeaders(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	for {
		details, err := adm.ListTopics(ctx, topic)
		if err == nil {
			d := details[topic]
			if err = d.Err; err == nil {
				led := len(d.Partitions) > 0
				for _, p := range d.Partitions {
					led = led && p.Err == nil && p.Leader >= 0
				}
				if led {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the partitions of %s have no leaders (%v): %v", topic, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bigOrders reads the n orders braid gen produced to topic and counts
// those the demo counts (an amount of 50 or more) by 10 s window start.
func bigOrders(ctx context.Context, t *testing.T, addrs []string, topic string, total int) map[int64]int64 {
	t.Helper()
	cons := newClient(t, kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	counts := map[int64]int64{}
	for n := 0; n < total; {
		fetches := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %d of %d records: %v", topic, n, total, err)
		}
		for _, r := range fetches.Records() {
			n++
			var order struct {
				Amount float64 `json:"amount"`
				TS     int64   `json:"ts"`
			}
			if err := json.Unmarshal(r.Value, &order); err != nil {
				t.Fatalf("an order of braid gen: %v: %s", err, r.Value)
			}
			if order.Amount >= 50 {
				counts[order.TS-order.TS%10_000]++
			}
		}
	}
	return counts
}

// waitForCounts reads the sink until each window's last count is want's.
func waitForCounts(ctx context.Context, t *testing.T, addrs []string, sink string, want map[int64]int64) {
	t.Helper()
	cons := newClient(t, kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(sink), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int64]int64{}
	for ctx.Err() == nil {
		for _, r := range cons.PollFetches(ctx).Records() {
			var key struct {
				Start int64 `json:"start"`
			}
			if err := json.Unmarshal(r.Key, &key); err != nil || len(r.Value) != 8 {
				t.Fatalf("a record of %s: key %s (%v), value %x", sink, r.Key, err, r.Value)
			}
			got[key.Start] = int64(binary.BigEndian.Uint64(r.Value))
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
	t.Fatalf("the counts on %s are %v, want %v", sink, got, want)
}

// testCA is a certificate authority of a test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a server certificate for 127.0.0.1 and localhost signed by
// ca: its PEM and its key's, unencrypted PKCS#8 as Kafka's PEM keystores
// read it.
func (ca *testCA) issue(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// writeTestFile writes the parts one after another to dir/name and
// returns its path.
func writeTestFile(t *testing.T, dir, name string, parts ...[]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, bytes.Join(parts, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
