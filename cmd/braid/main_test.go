package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"},
		{"broker", "--help"},
		{"demo", "--help"},
		{"serve", "--help"},
		{"run", "--help"},
		{"compile", "--help"},
		{"import", "--help"},
		{"export", "--help"},
		{"bench", "--help"},
		{"bench", "pipe", "--help"},
		{"bench", "windowed", "--help"},
		{"bench", "failover", "--help"},
		{"bench", "eos", "--help"},
		{"bench", "join", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), args, &out, io.Discard)
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("run: %v", err)
			}
			if !strings.Contains(out.String(), "Usage: braid") {
				t.Errorf("help output lacks a usage line:\n%s", out.String())
			}
		})
	}
}

func TestBadInvocations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"bench", "nope"}, `unknown benchmark "nope"`},
		{[]string{"broker", "--listen", "nonsense"}, `"nonsense"`},
		{[]string{"broker", "extra"}, "unexpected arguments"},
		{[]string{"broker", "--listen", "0.0.0.0:0"}, `--listen 0.0.0.0:0: broker listen address "0.0.0.0:0" is not loopback and the broker has no SASL credentials`},
		{[]string{"broker", "--listen", "0.0.0.0:0"}, "give --sasl-user and --sasl-password (or $BRAID_BROKER_PASSWORD), or accept an open broker with --insecure-broker"},
		{[]string{"broker", "--sasl-user", "u", "--sasl-password", ""}, "give both a user and a password"},
		{[]string{"broker", "--sync"}, "--sync needs --data-dir"},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--advertise", "nowhere"}, `broker advertised address "nowhere"`},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--advertise", "proxy:port"}, `port "port" is not a number from 1 to 65535`},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %s", tc.args, err, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBrokerCommand runs `braid broker`, reads the address it prints and
// round-trips a record through it.
func TestBrokerCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"broker", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, out, io.Discard)
	}()

	addrRE := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no address printed; output: %q", out.String())
		}
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", addr, err)
	}
	pollCtx, pollCancel := context.WithTimeout(ctx, 10*time.Second)
	defer pollCancel()
	if recs := cl.PollFetches(pollCtx).Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("consumed %v, want the one record", recs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("broker command returned %v after its context ended", err)
	}
}

// TestMain runs the braid command instead of the tests when
// BRAID_TEST_MAIN is 1, so that tests can run it as a process of its own
// (os.Args[0] is this binary) without building it. Only the test binary
// proper goes on to brokertest.Main, which starts Apache Kafka for the
// package when BRAID_TEST_KAFKA asks: the braid processes it runs inherit
// that variable, and must not start a cluster of their own.
func TestMain(m *testing.M) {
	if os.Getenv("BRAID_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	brokertest.Main(m)
}

// TestBadFlagValue: a bad flag or flag value is said once, as main prints
// the error, with a one-line hint at --help and no usage.
func TestBadFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--topic", "t", "--field", "a=randm(1,2)"}, "unknown generator"},
		{[]string{"broker", "--partitions", "many"}, `invalid value "many" for flag -partitions`},
		{[]string{"demo", "--rate", "fast"}, `invalid value "fast" for flag -rate`},
		{[]string{"serve", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"run", "--instances", "x", "design.json"}, `invalid value "x" for flag -instances`},
		{[]string{"watch", "--every", "soon", "d"}, `invalid value "soon" for flag -every`},
		{[]string{"compile", "--nope", "design.json"}, "flag provided but not defined: -nope"},
		{[]string{"import", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"export", "--revision", "x"}, `invalid value "x" for flag -revision`},
		{[]string{"bench", "pipe", "--nope"}, "flag provided but not defined: -nope"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out, &out)
			if err == nil {
				t.Fatalf("run(%q) succeeded", tc.args)
			}
			out.WriteString("braid: " + err.Error() + "\n") // as main prints it
			got := out.String()
			hint := "Run 'braid " + strings.Join(tc.args[:1], "") + " "
			if tc.args[0] == "bench" {
				hint = "Run 'braid bench pipe "
			}
			if strings.Count(got, tc.want) != 1 || !strings.Contains(got, hint+"--help' for its flags.") ||
				strings.Contains(got, "Usage:") || strings.Count(got, "\n") != 2 {
				t.Errorf("run(%q) printed\n%s\nwant %q once and a hint at --help, in two lines", tc.args, got, tc.want)
			}
		})
	}
}
