package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/broker/brokertest"
)

// TestBenchPeerOnKafka runs braid bench peer on a tiny input for the pipe:
// Braid's worker and Kafka Streams' each piped every record, and the
// RESULT line parses with both throughputs and peak RSS figures. It needs
// Apache Kafka and the Kafka Streams peer (scripts/peer.sh build, which it
// runs: a no-op once built), so it runs in make test's real-Kafka pass.
func TestBenchPeerOnKafka(t *testing.T) {
	if !brokertest.OnKafka() {
		t.Skip("needs Apache Kafka for Kafka Streams (BRAID_TEST_KAFKA=start)")
	}
	c := brokertest.Start(t, broker.Config{})
	if out, err := exec.Command(filepath.Join("..", "..", "scripts", "peer.sh"), "build").CombinedOutput(); err != nil {
		t.Fatalf("scripts/peer.sh build: %v\n%s", err, out)
	}
	// The Braid worker is this test binary running main.
	t.Setenv("BRAID_TEST_MAIN", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const records = 2000
	var out bytes.Buffer
	err := run(ctx, []string{"bench", "peer", "--brokers", c.Bootstrap(), "--records", strconv.Itoa(records),
		"--keys", "100", "--rounds", "1", "--workloads", "pipe", "--commit-interval", "100ms"}, &out, &out)
	if err != nil {
		t.Fatalf("bench peer: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(?m)^RESULT peer-pipe ratio=([0-9.]+) braid=(\d+) kstreams=(\d+) braid_rss_mb=(\d+) kstreams_rss_mb=(\d+) braid_out=(\d+) kstreams_out=(\d+)$`).
		FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no RESULT peer-pipe line in\n%s", out.String())
	}
	for i, name := range []string{"ratio", "braid", "kstreams", "braid_rss_mb", "kstreams_rss_mb"} {
		if v, err := strconv.ParseFloat(m[i+1], 64); err != nil || v <= 0 {
			t.Errorf("%s=%s, want a positive number", name, m[i+1])
		}
	}
	if m[6] != strconv.Itoa(records) || m[7] != m[6] {
		t.Errorf("braid_out=%s kstreams_out=%s, want %d each\n%s", m[6], m[7], records, out.String())
	}
	if strings.Count(out.String(), " output records") != 2 {
		t.Errorf("want a line for each side's round\n%s", out.String())
	}
}

// TestBenchPeerFailoverOnKafka runs braid bench peer's failover for one
// round with a short steady input: Braid's two worker processes and Kafka
// Streams' two JVMs, one SIGKILLed each, and Braid's two instances under a
// Supervisor in one worker, one crashed; both RESULT lines parse with
// positive downtimes and ratios (reported, not judged).
func TestBenchPeerFailoverOnKafka(t *testing.T) {
	if !brokertest.OnKafka() {
		t.Skip("needs Apache Kafka for Kafka Streams (BRAID_TEST_KAFKA=start)")
	}
	c := brokertest.Start(t, broker.Config{})
	if out, err := exec.Command(filepath.Join("..", "..", "scripts", "peer.sh"), "build").CombinedOutput(); err != nil {
		t.Fatalf("scripts/peer.sh build: %v\n%s", err, out)
	}
	t.Setenv("BRAID_TEST_MAIN", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	// 6 s: the broker's smallest session timeout (group.min.session.timeout.ms).
	err := run(ctx, []string{"bench", "peer", "--brokers", c.Bootstrap(), "--keys", "100", "--rounds", "1",
		"--workloads", "failover", "--commit-interval", "100ms", "--session-timeout", "6s",
		"--failover-rate", "1000", "--failover-warm", "2s"}, &out, &out)
	if err != nil {
		t.Fatalf("bench peer: %v\n%s", err, out.String())
	}
	for _, name := range []string{"peer-failover", "peer-failover-supervised"} {
		m := regexp.MustCompile(`(?m)^RESULT ` + name + ` ratio=([0-9.]+) braid_ms=(\d+) kstreams_ms=(\d+) session_timeout_ms=6000$`).
			FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no RESULT %s line in\n%s", name, out.String())
		}
		for i, field := range []string{"ratio", "braid_ms", "kstreams_ms"} {
			if v, err := strconv.ParseFloat(m[i+1], 64); err != nil || v <= 0 {
				t.Errorf("%s: %s=%s, want a positive number\n%s", name, field, m[i+1], out.String())
			}
		}
	}
	for _, kind := range []string{"braid unseen", "kstreams unseen", "braid supervised"} {
		if !strings.Contains(out.String(), kind) {
			t.Errorf("no line for the %s run\n%s", kind, out.String())
		}
	}
	t.Log(out.String())
}
