package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	embedded "github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// echoServer echoes every line back until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func startProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := StartProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends a line through conn and reads it back.
func roundTrip(conn net.Conn, r *bufio.Reader, line string) error {
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(conn, line); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return fmt.Errorf("echoed %q, want %q", got, line)
	}
	return nil
}

func dialEcho(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// echoOnce round-trips a line on a new connection to addr.
func echoOnce(addr, line string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	return roundTrip(c, bufio.NewReader(c), line)
}

// TestProxyCutRestore: the proxy forwards; Cut breaks the open
// connection and refuses new ones; Restore lets new ones through again.
func TestProxyCutRestore(t *testing.T) {
	p := startProxy(t)
	if err := echoOnce(p.Addr(), "before the target is set"); err == nil {
		t.Fatal("the proxy forwarded a connection before it had a target")
	}
	p.SetTarget(echoServer(t))
	open, r := dialEcho(t, p.Addr())
	if err := roundTrip(open, r, "hello"); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if err := roundTrip(open, r, "after the cut"); err == nil {
		t.Error("a connection open at the cut still works")
	}
	if err := echoOnce(p.Addr(), "during the cut"); err == nil {
		t.Error("a connection made during the cut works")
	}
	p.Restore()
	if err := echoOnce(p.Addr(), "after the restore"); err != nil {
		t.Errorf("a connection made after the restore: %v", err)
	}
	if got := p.Accepted(); got != 2 {
		t.Errorf("Accepted() = %d, want 2 (before the cut and after the restore)", got)
	}
}

// TestProxyAdvertisedBroker: a broker advertising the proxy's address has
// a client bootstrapped at the proxy see that address in metadata and
// produce and consume through it; a cut stops the client and a restore
// lets it go on.
func TestProxyAdvertisedBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startProxy(t)
	b, err := embedded.Start(embedded.Config{Advertise: p.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p.SetTarget(b.ListenAddr())

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic("through"), kgo.ConsumeTopics("through"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, fmt.Sprint(meta.Brokers[0].Port)) != p.Addr() {
		t.Fatalf("metadata brokers %+v, want the proxy %s", meta.Brokers, p.Addr())
	}
	produceOne := func(ctx context.Context, v string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
	}
	if err := produceOne(ctx, "one"); err != nil {
		t.Fatalf("producing through the proxy: %v", err)
	}

	// A record produced during the cut waits in the client, which
	// retries, and goes once the proxy is restored.
	p.Cut()
	delivered := make(chan error, 1)
	cl.Produce(ctx, &kgo.Record{Value: []byte("two")}, func(_ *kgo.Record, err error) { delivered <- err })
	select {
	case err := <-delivered:
		t.Fatalf("a produce during the cut completed: %v", err)
	case <-time.After(2 * time.Second):
	}
	p.Restore()
	if err := <-delivered; err != nil {
		t.Fatalf("the produce of the cut after the restore: %v", err)
	}
	if err := produceOne(ctx, "three"); err != nil {
		t.Fatalf("producing after the restore: %v", err)
	}
	var got []string
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %q through the proxy before the timeout, want one, two, three", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[one two three]" {
		t.Errorf("consumed %q, want [one two three]", got)
	}
	if p.Accepted() < 2 {
		t.Errorf("the proxy forwarded %d connections, want the ones before the cut and after", p.Accepted())
	}
}
