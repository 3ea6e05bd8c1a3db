package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var listeningRE = regexp.MustCompile(`listening on (\S+) \(`)

// startBrokerProcess runs `braid broker args...` as a process and returns
// it with the address it listens on.
func startBrokerProcess(t *testing.T, args ...string) (*process, string) {
	t.Helper()
	p := startProcess(t, append([]string{"broker"}, args...)...)
	m := listeningRE.FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("braid broker printed no listen address:\n%s", p.out.String())
	}
	return p, m[1]
}

// TestBrokerSurvivesKill: what `braid broker` acknowledged is there after
// the process is killed with SIGKILL and started again on the same data
// dir and port, and so is a committed offset: with --sync, and without it
// too (the page cache outlives the process).
func TestBrokerSurvivesKill(t *testing.T) {
	t.Run("page cache", func(t *testing.T) { testBrokerSurvivesKill(t) })
	t.Run("sync", func(t *testing.T) { testBrokerSurvivesKill(t, "--sync") })
}

func testBrokerSurvivesKill(t *testing.T, flags ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, addr := startBrokerProcess(t, append([]string{"--listen", "127.0.0.1:0", "--data-dir", dir}, flags...)...)
	if synced := strings.Contains(p.out.String(), "fsync on every write"); synced != (len(flags) > 0) {
		t.Errorf("braid broker %q says it syncs: %v:\n%s", flags, synced, p.out.String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kept"))
	if err != nil {
		t.Fatal(err)
	}
	// Created explicitly: kfake records a topic created automatically
	// (by a produce) only at a clean stop, so a kill would lose it.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "kept", Partition: recs[0].Partition, At: 1, LeaderEpoch: -1})
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "readers", offsets); err != nil {
		t.Fatalf("committing an offset: %v", err)
	}
	cl.Close()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done

	_, again := startBrokerProcess(t, append([]string{"--listen", addr, "--data-dir", dir}, flags...)...)
	if again != addr {
		t.Fatalf("restarted on %s, want %s", again, addr)
	}
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(addr)))
	ends, err := adm.ListEndOffsets(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Errorf("after SIGKILL and a restart the topic holds %d records, want %d", total, n)
	}
	committed, err := adm.FetchOffsets(ctx, "readers")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := committed.Lookup("kept", recs[0].Partition); !ok || o.At != 1 {
		t.Errorf("after SIGKILL and a restart the committed offset is %+v (found %v), want 1", o, ok)
	}
}

// TestBrokerKillAbortsOpenTxn: a transaction open when `braid broker` is
// killed is aborted at the restart, and it hides nothing else from
// read_committed readers: the producer that initialises again with the same
// transactional id (and so the same producer id) commits transactions that
// are seen. kfake alone writes no abort marker for it, which hid them all.
func TestBrokerKillAbortsOpenTxn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, addr := startBrokerProcess(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(addr)))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	txn := func(cl *kgo.Client, name string, commit bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", name, i))}).FirstErr(); err != nil {
				t.Fatalf("producing in %s: %v", name, err)
			}
		}
		if commit {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("committing %s: %v", name, err)
			}
		}
	}
	producer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"), kgo.TransactionalID("tx"))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	first := producer()
	txn(first, "txn1", true)
	txn(first, "txn2", false) // open at the kill
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	first.Close()

	p, _ = startBrokerProcess(t, "--listen", addr, "--data-dir", dir)
	second := producer()
	defer second.Close()
	txn(second, "txn3", true)
	// A record outside any transaction, which read_committed never hides,
	// marks the end.
	if err := newClient(t, kgo.SeedBrokers(addr)).ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	readCommitted := func(when string) {
		t.Helper()
		reader, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		var got []string
		for done := false; !done; {
			fs := reader.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: no end record read by read_committed; read %q", when, got)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Value) == "end" {
					done = true
					return
				}
				got = append(got, string(r.Value))
			})
		}
		want := []string{"txn1-0", "txn1-1", "txn1-2", "txn3-0", "txn3-1", "txn3-2"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: read_committed read %q, want %q", when, got, want)
		}
	}
	readCommitted("after a kill with a transaction open")

	// The log as repaired survives another kill: the marker written at
	// the restart is in it, and reloading it changes nothing.
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	startBrokerProcess(t, "--listen", addr, "--data-dir", dir)
	readCommitted("after a second kill")
}

// TestBrokerAdvertise: `braid broker --advertise` prints the address it
// listens on and the one it advertises, and names the advertised one in
// metadata.
func TestBrokerAdvertise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, addr := startBrokerProcess(t, "--listen", "127.0.0.1:0", "--advertise", "broker.example:19092")
	if !strings.Contains(p.out.String(), "advertised as broker.example:19092") {
		t.Errorf("braid broker --advertise does not say what it advertises:\n%s", p.out.String())
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, newClient(t, kgo.SeedBrokers(addr)))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, fmt.Sprint(meta.Brokers[0].Port)) != "broker.example:19092" {
		t.Errorf("metadata brokers %+v, want broker.example:19092", meta.Brokers)
	}
	p.terminate(t)
}

func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
