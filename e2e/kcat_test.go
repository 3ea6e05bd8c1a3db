package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	kcatIn     = "kcat-in"
	kcatOut    = "kcat-out"
	partitions = 3
	numRecords = 200
	numKeys    = 37 // prime, so keys and amounts do not move in lockstep
	minAmount  = 10 // the filter keeps amount >= minAmount
)

// kcatPath returns the kcat binary. Without it the test skips, unless CI
// is set: there a missing kcat is a broken environment, not a reason to
// pass quietly.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err == nil {
		return p
	}
	msg := "kcat not found in PATH (" + err.Error() + "); run scripts/install-deps.sh"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runKcat runs kcat with args and stdin under a timeout and returns its
// stdout. On failure the error carries kcat's stderr.
func runKcat(ctx context.Context, kcat string, timeout time.Duration, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		return out.Bytes(), errb.Bytes(), fmt.Errorf("kcat %s: %w\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes(), errb.Bytes(), nil
}

// kcatRecord is one line of `kcat -C -f '%k\t%s\t%p\n'`.
type kcatRecord struct {
	key, value string
	partition  int32
}

// consumeAll reads topic from the beginning to its current end with kcat.
func consumeAll(ctx context.Context, t *testing.T, kcat, addr, topic string) ([]kcatRecord, error) {
	t.Helper()
	out, _, err := runKcat(ctx, kcat, 20*time.Second, nil,
		"-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", `%k\t%s\t%p\n`)
	if err != nil {
		return nil, err
	}
	var recs []kcatRecord
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("kcat output line %q: want 3 tab-separated fields", line)
		}
		p, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("kcat output line %q: partition: %v", line, err)
		}
		recs = append(recs, kcatRecord{key: f[0], value: f[1], partition: int32(p)})
	}
	return recs, nil
}

// TestKcatRoundTrip produces with kcat (librdkafka), processes with a
// Braid topology, and reads the result back with kcat, all against the
// embedded broker.
func TestKcatRoundTrip(t *testing.T) {
	kcat := kcatPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatalf("starting broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing broker: %v", err)
		}
	})
	addr := b.Addr()

	// Create both topics explicitly: the broker would auto-create them,
	// but with its default of 4 partitions.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, kcatIn, kcatOut)
	if err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	if err := resps.Error(); err != nil {
		t.Fatalf("creating topics: %v", err)
	}

	// The input: numRecords lines "key:json" for kcat -K :. The value
	// holds colons too; kcat splits at the first one.
	var in bytes.Buffer
	want := map[string][]map[string]any{} // key -> transformed values, in order
	filtered := 0
	for i := range numRecords {
		key := fmt.Sprintf("user-%d", i%numKeys)
		amount := (i * 7) % 25 // 0..24: some below minAmount
		fmt.Fprintf(&in, "%s:{\"n\":%d,\"amount\":%d}\n", key, i, amount)
		if amount < minAmount {
			filtered++
			continue
		}
		want[key] = append(want[key], map[string]any{
			"n": float64(i), "amount": float64(amount), "big": amount >= 20,
		})
	}
	wantCount := numRecords - filtered
	if filtered == 0 || wantCount == 0 {
		t.Fatalf("bad test data: %d of %d records filtered", filtered, numRecords)
	}

	if _, stderr, err := runKcat(ctx, kcat, 30*time.Second, in.Bytes(),
		"-b", addr, "-P", "-t", kcatIn, "-K", ":"); err != nil {
		t.Fatalf("producing: %v", err)
	} else if len(bytes.TrimSpace(stderr)) > 0 {
		t.Logf("kcat producer stderr:\n%s", stderr)
	}

	// kcat -P exits after flushing, but check what landed, and where.
	inRecs, err := consumeAll(ctx, t, kcat, addr, kcatIn)
	if err != nil {
		t.Fatalf("reading back %s: %v", kcatIn, err)
	}
	if len(inRecs) != numRecords {
		t.Fatalf("%s holds %d records, want %d", kcatIn, len(inRecs), numRecords)
	}
	inPartition := partitionsByKey(t, kcatIn, inRecs)

	// The topology: keep amount >= minAmount, add "big".
	sb := streams.NewBuilder()
	sb.Stream([]string{kcatIn}, streams.WithSerdes(streams.String, streams.JSON)).
		Filter(func(_, v any) (bool, error) {
			m, ok := v.(map[string]any)
			if !ok {
				return false, fmt.Errorf("value %T is not a JSON object", v)
			}
			a, ok := m["amount"].(float64)
			if !ok {
				return false, fmt.Errorf("amount %v (%T) is not a number", m["amount"], m["amount"])
			}
			return a >= minAmount, nil
		}).
		MapValues(func(v any) (any, error) {
			m := v.(map[string]any)
			out := make(map[string]any, len(m)+1)
			for k, x := range m {
				out[k] = x
			}
			out["big"] = m["amount"].(float64) >= 20
			return out, nil
		}).
		To(kcatOut, streams.WithSerdes(streams.String, streams.JSON))
	topo, err := sb.Build()
	if err != nil {
		t.Fatalf("building topology: %v", err)
	}
	app, err := streams.New(topo, streams.Config{
		ApplicationID:  "kcat-e2e",
		Brokers:        b.Addrs(),
		StateDir:       t.TempDir(),
		CommitInterval: 200 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("creating app: %v", err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		if err := app.Close(); err != nil {
			return fmt.Errorf("app.Close: %w", err)
		}
		select {
		case err := <-runErr:
			if err != nil {
				return fmt.Errorf("app.Run: %w", err)
			}
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("app.Run did not return 30s after Close")
		}
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()

	// Read the output until it holds every expected record. kcat -e stops
	// at the current end, so poll.
	var outRecs []kcatRecord
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-runErr:
			t.Fatalf("app.Run returned early: %v", err)
		default:
		}
		outRecs, err = consumeAll(ctx, t, kcat, addr, kcatOut)
		if err == nil && len(outRecs) >= wantCount {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s %s holds %d records, want %d (last kcat error: %v)", kcatOut, len(outRecs), wantCount, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Once more after the final commit: nothing extra may appear.
	if outRecs, err = consumeAll(ctx, t, kcat, addr, kcatOut); err != nil {
		t.Fatalf("reading %s after stop: %v", kcatOut, err)
	}
	if len(outRecs) != wantCount {
		t.Errorf("%s holds %d records, want %d (%d of %d filtered)", kcatOut, len(outRecs), wantCount, filtered, numRecords)
	}

	// Key by key: keys preserved, values transformed, per-key order kept,
	// filtered records absent.
	got := map[string][]map[string]any{}
	for _, r := range outRecs {
		var v map[string]any
		if err := json.Unmarshal([]byte(r.value), &v); err != nil {
			t.Fatalf("output value %q of key %q is not a JSON object: %v", r.value, r.key, err)
		}
		got[r.key] = append(got[r.key], v)
	}
	for key, w := range want {
		if g := got[key]; !reflect.DeepEqual(g, w) {
			t.Errorf("key %q:\n got %v\nwant %v", key, g, w)
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected key %q in output: %v", key, g)
		}
	}

	// One output partition per key, and the one a Java client's default
	// partitioner (murmur2) would pick, as Kafka Streams does.
	outPartition := partitionsByKey(t, kcatOut, outRecs)
	javaPart := kgo.StickyKeyPartitioner(nil).ForTopic(kcatOut)
	moved := 0
	for key, p := range outPartition {
		if jp := int32(javaPart.Partition(&kgo.Record{Key: []byte(key)}, partitions)); p != jp {
			t.Errorf("key %q in %s partition %d, want %d (murmur2)", key, kcatOut, p, jp)
		}
		if p != inPartition[key] {
			moved++
		}
	}
	// kcat (librdkafka) partitions by CRC32 by default, Braid by murmur2, so
	// a key may sit in another partition on the way out: fine for Kafka, but
	// worth seeing.
	t.Logf("%d records in, %d out, %d filtered; %d of %d keys in a different partition in %s than in %s",
		numRecords, len(outRecs), filtered, moved, len(outPartition), kcatOut, kcatIn)
}

// partitionsByKey maps each key of recs to its partition and fails the
// test when a key appears in more than one.
func partitionsByKey(t *testing.T, topic string, recs []kcatRecord) map[string]int32 {
	t.Helper()
	m := map[string]int32{}
	for _, r := range recs {
		if p, ok := m[r.key]; ok && p != r.partition {
			t.Errorf("%s: key %q in partitions %d and %d", topic, r.key, p, r.partition)
			continue
		}
		m[r.key] = r.partition
	}
	return m
}
