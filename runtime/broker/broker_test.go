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
	"github.com/twmb/franz-go/pkg/kmsg"
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
		listen   string
		want     []string
		insecure bool // past the loopback check, to the listen
	}{
		{"nonsense", []string{`broker listen address "nonsense"`, "missing port"}, false},
		{"127.0.0.1:99999", []string{`broker listen address "127.0.0.1:99999"`, `port "99999" is not a number from 0 to 65535`}, false},
		{"127.0.0.1:x", []string{`broker listen address "127.0.0.1:x"`, `port "x" is not a number from 0 to 65535`}, false},
		{"127.0.0.1:-1", []string{`port "-1" is not a number from 0 to 65535`}, false},
		{"127.0.0.1:", []string{`port "" is not a number from 0 to 65535`}, false},
		{"1.2.3.4.5:0", []string{"starting embedded broker on 1.2.3.4.5:0"}, true},
	} {
		t.Run(tt.listen, func(t *testing.T) {
			b, err := broker.Start(broker.Config{Listen: tt.listen, Insecure: tt.insecure})
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

// retained is the number of records the broker holds of topic, from the
// partitions' start and end offsets.
func retained(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(e kadm.ListedOffset) {
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok {
			n += e.Offset - s.Offset
		}
	})
	return n
}

// countRecords reads topic from its start to its end offsets and counts
// the records there (compaction removes records but keeps offsets).
func countRecords(t *testing.T, b *broker.Broker, adm *kadm.Client, topic string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	left := make(map[int32]int64)
	ends.Each(func(e kadm.ListedOffset) { left[e.Partition] = e.Offset })
	n := 0
	for len(left) > 0 {
		for p, end := range left {
			if end == 0 {
				delete(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return n
}

// TestRetentionBoundsTheLog is a soak on a clock the test moves: 40
// seconds of 300 records a second into a delete-policy topic with a 3 s
// retention, and 300 updates a second of 10 keys into a compacted one.
// After every retention pass, the first holds at most the last 3 s or so
// of records, and the compacted one ends with little more than one record
// per key, though 12,000 went into each.
func TestRetentionBoundsTheLog(t *testing.T) {
	const perSecond, seconds, keys = 300, 40, 10
	retention := 3 * time.Second
	b := start(t, broker.Config{Retention: retention, RetentionCheckInterval: time.Hour})
	now := time.Now()
	broker.SetNow(b, func() time.Time { return now })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, b))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "table"); err != nil {
		t.Fatal(err)
	}
	producer := client(t, b, kgo.ProducerLinger(0))
	start := now
	bound := int64(perSecond) * int64(retention/time.Second+1)
	for s := range seconds {
		now = start.Add(time.Duration(s) * time.Second)
		// Batches of 30, so that compaction has whole batches to clean.
		for batch := range perSecond / 30 {
			var recs []*kgo.Record
			for i := range 30 {
				n := batch*30 + i
				recs = append(recs,
					&kgo.Record{Topic: "events", Key: []byte(fmt.Sprint(n)), Value: []byte("v"), Timestamp: now},
					&kgo.Record{Topic: "table", Key: []byte(fmt.Sprint("k", n%keys)), Value: []byte(fmt.Sprint(s, n)), Timestamp: now})
			}
			if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.ApplyRetention(ctx); err != nil {
			t.Fatalf("ApplyRetention at second %d: %v", s, err)
		}
		if n := retained(t, adm, "events"); n > bound {
			t.Fatalf("after second %d the broker holds %d records of events, over %d (%d a second for %v and one more second)", s, n, bound, perSecond, retention)
		}
	}
	if n := countRecords(t, b, adm, "table"); n > keys+2*30 {
		t.Errorf("the compacted topic holds %d records of %d keys after %d updates", n, keys, perSecond*seconds)
	}
}

// TestRetentionRunsOnItsOwn: without ApplyRetention being called, the
// broker's own pass deletes expired records, and Close stops it.
func TestRetentionRunsOnItsOwn(t *testing.T) {
	b := start(t, broker.Config{Retention: time.Minute, RetentionCheckInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, b))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "old"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for range 100 {
		recs = append(recs, &kgo.Record{Topic: "old", Value: []byte("v"), Timestamp: time.Now().Add(-time.Hour)})
	}
	if err := client(t, b).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for retained(t, adm, "old") > 0 {
		if ctx.Err() != nil {
			t.Fatal("the broker kept records an hour old with a minute's retention")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
}

// TestAdvertise: a broker with Config.Advertise names that address in
// its metadata, not the one it listens on, and its own retention pass
// still reaches it when nothing answers at the advertised address.
func TestAdvertise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A port nothing listens on: clients told to go there would fail.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	b := start(t, broker.Config{Advertise: dead, RetentionCheckInterval: time.Hour})
	if b.Addr() != dead {
		t.Errorf("Addr() = %q, want the advertised %q", b.Addr(), dead)
	}
	if b.ListenAddr() == dead || b.ListenAddr() == "" {
		t.Errorf("ListenAddr() = %q, want the address bound, not the advertised %q", b.ListenAddr(), dead)
	}
	// No retries: the request that goes to the advertised address fails
	// at once.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddr()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata from the listen address: %v", err)
	}
	if len(meta.Brokers) != 1 {
		t.Fatalf("metadata lists %d brokers, want 1", len(meta.Brokers))
	}
	if got := net.JoinHostPort(meta.Brokers[0].Host, fmt.Sprint(meta.Brokers[0].Port)); got != dead {
		t.Errorf("metadata names the broker %s, want the advertised %s", got, dead)
	}
	// A request for the broker by its node id goes where metadata said.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("creating a topic = %v, want it to fail dialing the advertised %s", err, dead)
	}
	if err := b.ApplyRetention(ctx); err != nil {
		t.Errorf("ApplyRetention with an unreachable advertised address: %v", err)
	}
}

func TestStartInvalidAdvertise(t *testing.T) {
	for _, tt := range []struct{ advertise, want string }{
		{"nonsense", "missing port"},
		{":9092", "it has no host"},
		{"proxy.example:x", `port "x" is not a number from 1 to 65535`},
		{"proxy.example:0", `port "0" is not a number from 1 to 65535`},
		{"proxy.example:65536", `port "65536" is not a number from 1 to 65535`},
	} {
		b, err := broker.Start(broker.Config{Advertise: tt.advertise})
		if err == nil {
			b.Close()
			t.Errorf("Start(Advertise: %q) succeeded, want an error", tt.advertise)
			continue
		}
		if want := fmt.Sprintf("broker advertised address %q", tt.advertise); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(Advertise: %q) error %q, want it to contain %q and %q", tt.advertise, err, want, tt.want)
		}
	}
}

// TestSync: a broker with Config.Sync starts, and what it acknowledged
// is there after a restart on the same data dir.
func TestSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	first := start(t, broker.Config{DataDir: dir, Sync: true})
	cl := client(t, first, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("synced"))
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to a synced broker: %v", err)
	}
	cl.Close()
	first.Close()
	second := start(t, broker.Config{DataDir: dir, Sync: true})
	ends, err := kadm.NewClient(client(t, second)).ListEndOffsets(ctx, "synced")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(len(recs)) {
		t.Errorf("after a restart the topic holds %d records, want %d", total, len(recs))
	}
}

// TestRetentionKeepsRecordsBeforeALateOne: a record stamped long ago,
// alone in its batch, between records of now must not take the records
// before it with it. Kafka deletes by time only from a log's start, the
// segments whose newest record is past retention; kfake's own pass,
// which compacting runs for every topic, dropped everything up to any
// batch past retention (a chaos run lost the first 1,762 records of its
// output so, after the late record it sends to make its workers commit).
func TestRetentionKeepsRecordsBeforeALateOne(t *testing.T) {
	b := start(t, broker.Config{RetentionCheckInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, b))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	// A compacted topic, so that the pass compacts too.
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "table"); err != nil {
		t.Fatal(err)
	}
	producer := client(t, b, kgo.ProducerLinger(0))
	batch := func(ts time.Time, n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Topic: "events", Value: []byte("v"), Timestamp: ts})
		}
		recs = append(recs, &kgo.Record{Topic: "table", Key: []byte("k"), Value: []byte("v"), Timestamp: ts})
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	batch(time.Now(), 5)
	batch(time.UnixMilli(1), 1)
	batch(time.Now(), 5)
	if err := b.ApplyRetention(ctx); err != nil {
		t.Fatal(err)
	}
	if n := retained(t, adm, "events"); n != 11 {
		t.Fatalf("the broker holds %d records of events after a retention pass, want all 11", n)
	}
}

// TestCompactionWaitsForOpenTransactions keeps a key's committed value
// through a retention pass while a transaction that wrote the key again
// is open, and after it aborts: kfake compacts undecided batches too, so
// the open transaction's record would supersede the committed one and,
// aborted, leave the key with no value at all.
func TestCompactionWaitsForOpenTransactions(t *testing.T) {
	b, ctx, plain := compactedTable(t)
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("k"), Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn := client(t, b, kgo.ProducerLinger(0), kgo.TransactionalID("compaction-test"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("k"), Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A last batch after the transaction's, which compaction never
	// touches, so that the transaction's is cleanable.
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("other"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyRetention(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyRetention(ctx); err != nil {
		t.Fatal(err)
	}
	checkCommittedValue(ctx, t, b, "other")
}

// TestCompactionHoldsTransactionsThatBeginMeanwhile begins a transaction
// between a retention pass's check for open transactions and its
// compaction: its records must wait for the compaction to end, for
// compacted while open they would supersede the committed value of their
// key, and the abort that follows would leave the key with none.
func TestCompactionHoldsTransactionsThatBeginMeanwhile(t *testing.T) {
	b, ctx, plain := compactedTable(t)
	for _, v := range []string{"old", "committed"} {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("k"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn := client(t, b, kgo.ProducerLinger(0), kgo.TransactionalID("compaction-race"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}, 16)
	produced := make(chan error, 1)
	wasHeld := false
	broker.SetCompactionHooks(b, func() {
		// The transaction writes k, then another key, so that its
		// record of k is not in the last batch, which kfake never
		// compacts.
		go func() {
			err := txn.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("k"), Value: []byte("aborted")}).FirstErr()
			if err == nil {
				err = txn.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("other"), Value: []byte("aborted")}).FirstErr()
			}
			produced <- err
		}()
		select {
		case <-held:
			wasHeld = true
		case err := <-produced:
			produced <- err
		}
	}, func() { held <- struct{}{} })
	if err := b.ApplyRetention(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-produced; err != nil {
		t.Fatalf("producing in the transaction: %v", err)
	}
	if !wasHeld {
		t.Error("the transaction's produce request was not held during the compaction")
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "table", Key: []byte("last"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkCommittedValue(ctx, t, b, "last")
}

// checkCommittedValue reads topic table read-committed, up to key last,
// and fails unless key k has the value "committed".
func checkCommittedValue(ctx context.Context, t *testing.T, b *broker.Broker, last string) {
	t.Helper()
	reader := client(t, b, kgo.ConsumeTopics("table"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	values := make(map[string]string)
	for values[last] == "" {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading table: %v (read %v)", ctx.Err(), values)
		}
		fs.EachRecord(func(r *kgo.Record) { values[string(r.Key)] = string(r.Value) })
	}
	if values["k"] != "committed" {
		t.Fatalf("read committed, key k is %q after the pass and the abort, want %q (all: %v)", values["k"], "committed", values)
	}
}

// compactedTable starts a broker whose retention pass runs only when the
// test calls ApplyRetention, with a compacted topic "table" of one
// partition, and returns it, the test's context and a client that
// produces at once.
func compactedTable(t *testing.T) (*broker.Broker, context.Context, *kgo.Client) {
	t.Helper()
	b := start(t, broker.Config{RetentionCheckInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	adm := kadm.NewClient(client(t, b))
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "table"); err != nil {
		t.Fatal(err)
	}
	return b, ctx, client(t, b, kgo.ProducerLinger(0))
}
