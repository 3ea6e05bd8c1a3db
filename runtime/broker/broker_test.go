package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func start(t *testing.T, cfg broker.Config) *broker.Broker {
	t.Helper()
	b, err := broker.Start(cfg)
	if err != nil {
		t.Fatalf("Start(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func client(t *testing.T, b *broker.Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestRecordsSurviveRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const topic, n = "persisted", 100

	first := start(t, broker.Config{Listen: "127.0.0.1:0", DataDir: dir})
	adm := kadm.NewClient(client(t, first))
	resp, err := adm.CreateTopic(ctx, 2, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	want := make(map[string]string, n)
	var recs []*kgo.Record
	for i := range n {
		k, v := fmt.Sprintf("key-%03d", i), fmt.Sprintf("value-%d", i)
		want[k] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
	}
	producer := client(t, first, kgo.ProducerLinger(0))
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	// Where each key went, to check that partitioning survives too.
	partitionOf := make(map[string]int32, n)
	for _, r := range recs {
		partitionOf[string(r.Key)] = r.Partition
	}
	producer.Close()
	// A committed offset survives too: the group picks up where it was.
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 17, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: 3, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "readers", offsets); err != nil {
		t.Fatalf("committing offsets: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	second := start(t, broker.Config{Listen: "127.0.0.1:0", DataDir: dir})
	details, err := kadm.NewClient(client(t, second)).ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("listing topics after restart: %v", err)
	}
	if d := details[topic]; d.Err != nil || len(d.Partitions) != 2 {
		t.Fatalf("after restart topic %q has %d partitions (err %v), want 2", topic, len(d.Partitions), d.Err)
	}

	committed, err := kadm.NewClient(client(t, second)).FetchOffsets(ctx, "readers")
	if err != nil {
		t.Fatalf("fetching committed offsets after restart: %v", err)
	}
	for p, want := range map[int32]int64{0: 17, 1: 3} {
		if o, ok := committed.Lookup(topic, p); !ok || o.Err != nil || o.At != want {
			t.Errorf("after restart, committed offset of %s/%d = %+v (found %v), want %d", topic, p, o, ok, want)
		}
	}

	consumer := client(t, second, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := make(map[string]string, n)
	for len(got) < n {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after restart, read %d of %d records before the timeout", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consuming %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if _, dup := got[k]; dup {
				t.Errorf("record %s read twice", k)
			}
			got[k] = string(r.Value)
			if r.Partition != partitionOf[k] {
				t.Errorf("record %s in partition %d after restart, was in %d", k, r.Partition, partitionOf[k])
			}
		})
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("record %s = %q after restart, want %q", k, got[k], v)
		}
	}
}

func TestStartInvalidListen(t *testing.T) {
	for _, tt := range []struct {
		listen string
		want   []string
	}{
		{"nonsense", []string{`broker listen address "nonsense"`, "missing port"}},
		{"127.0.0.1:99999", []string{`broker listen address "127.0.0.1:99999"`, `port "99999" is not a number from 0 to 65535`}},
		{"127.0.0.1:x", []string{`broker listen address "127.0.0.1:x"`, `port "x" is not a number from 0 to 65535`}},
		{"127.0.0.1:-1", []string{`port "-1" is not a number from 0 to 65535`}},
		{"127.0.0.1:", []string{`port "" is not a number from 0 to 65535`}},
		{"1.2.3.4.5:0", []string{"starting embedded broker on 1.2.3.4.5:0"}},
	} {
		t.Run(tt.listen, func(t *testing.T) {
			b, err := broker.Start(broker.Config{Listen: tt.listen})
			if err == nil {
				b.Close()
				t.Fatalf("Start(Listen: %q) succeeded on %s, want an error", tt.listen, b.Addr())
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Start(Listen: %q) error %q does not mention %q", tt.listen, err, want)
				}
			}
		})
	}
}

func TestStartInvalidPartitions(t *testing.T) {
	b, err := broker.Start(broker.Config{Partitions: -1})
	if err == nil {
		b.Close()
		t.Fatal("Start(Partitions: -1) succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "-1 is negative") {
		t.Errorf("Start(Partitions: -1) error %q does not say what is wrong", err)
	}
}

func TestAddr(t *testing.T) {
	for _, tt := range []struct {
		name   string
		listen string
	}{
		{"empty", ""},
		{"port zero", "127.0.0.1:0"},
		{"host omitted", ":0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := start(t, broker.Config{Listen: tt.listen})
			host, port, err := net.SplitHostPort(b.Addr())
			if err != nil {
				t.Fatalf("Addr() = %q is not host:port: %v", b.Addr(), err)
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				t.Errorf("Addr() host %q is not a loopback address", host)
			}
			if port == "0" || port == "" {
				t.Errorf("Addr() port %q, want the port actually picked", port)
			}
			if got := b.Addrs(); len(got) != 1 || got[0] != b.Addr() {
				t.Errorf("Addrs() = %q, want [%q]", got, b.Addr())
			}
			conn, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
			if err != nil {
				t.Fatalf("dialing Addr(): %v", err)
			}
			conn.Close()
		})
	}
}

// TestAutoCreatedPartitions checks Config.Partitions: a produce to an
// unknown topic creates it with that many partitions (default 4).
func TestAutoCreatedPartitions(t *testing.T) {
	for _, tt := range []struct {
		partitions int
		want       int
	}{
		{0, 4},
		{1, 1},
		{7, 7},
	} {
		t.Run(fmt.Sprint(tt.partitions), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := start(t, broker.Config{Partitions: tt.partitions})
			cl := client(t, b, kgo.AllowAutoTopicCreation())
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("producing to a new topic: %v", err)
			}
			details, err := kadm.NewClient(cl).ListTopics(ctx, "auto")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(details["auto"].Partitions); got != tt.want {
				t.Errorf("auto-created topic has %d partitions, want %d", got, tt.want)
			}
		})
	}
}

func TestRunClosesOnCancel(t *testing.T) {
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was canceled")
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("the broker still accepts connections on %s after Run returned", addr)
	}
}

// TestRefusesUnauthenticatedExposure: off loopback the broker needs SASL
// credentials or Insecure; on loopback it needs neither.
func TestRefusesUnauthenticatedExposure(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		b, err := broker.Start(broker.Config{Listen: listen})
		var ue *broker.UnauthenticatedError
		if !errors.As(err, &ue) || ue.Listen != listen || !strings.Contains(err.Error(), fmt.Sprintf("%q is not loopback", listen)) {
			t.Errorf("Start on %s without SASL = %v, want an UnauthenticatedError naming it", listen, err)
		}
		if b != nil {
			b.Close()
		}
	}
	if _, err := broker.Start(broker.Config{SASLUser: "u"}); err == nil || !strings.Contains(err.Error(), "both a user and a password") {
		t.Errorf("Start with a user and no password = %v", err)
	}
	start(t, broker.Config{Listen: "0.0.0.0:0", Insecure: true})
	start(t, broker.Config{Listen: "localhost:0"})
}

// TestSASL: a broker with credentials answers clients that authenticate
// with them (ClientOptions), and no one else.
func TestSASL(t *testing.T) {
	b := start(t, broker.Config{Listen: "0.0.0.0:0", SASLUser: "braid", SASLPassword: "secret"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(client(t, b, b.ClientOptions()...)).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatalf("creating a topic with the credentials: %v", err)
	}
	for name, opts := range map[string][]kgo.Opt{
		"no credentials":   nil,
		"a wrong password": broker.SASLClientOptions("braid", "guess"),
	} {
		cl := client(t, b, append(opts, kgo.RequestRetries(0))...)
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kadm.NewClient(cl).ListTopics(pctx)
		pcancel()
		if err == nil {
			t.Errorf("a client with %s listed the topics", name)
		}
	}
}
