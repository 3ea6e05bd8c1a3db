package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

func TestRunPipe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const records = 20_000
	var out bytes.Buffer
	rep, err := RunPipe(ctx, PipeOptions{Records: records, CommitInterval: 200 * time.Millisecond, Rounds: 2, Out: &out}, BraidVariants())
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}

	if rep.Records != records || rep.Keys != 10_000 || rep.Partitions != 4 || rep.GOMAXPROCS < 1 {
		t.Errorf("report header = %+v", rep)
	}
	runs := append([]Run{rep.Raw}, rep.Variants...)
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	for _, r := range runs {
		if r.Records != records || r.Elapsed <= 0 || r.PerSecond() <= 0 || r.Wall < r.Elapsed {
			t.Errorf("%s: %d records in %v (wall %v), %.0f rec/s", r.Name, r.Records, r.Elapsed, r.Wall, r.PerSecond())
		}
		if r.OutRecords != records {
			t.Errorf("%s: output topic %s holds %d records, want %d", r.Name, r.Out, r.OutRecords, records)
		}
	}
	if rep.Rounds != 2 {
		t.Errorf("report has %d rounds, want 2", rep.Rounds)
	}
	if g := rep.Gated(); g.Name != "braid filter+mapValues (bytes serde)" || g.Out != BraidOutputTopic {
		t.Errorf("gated run = %s writing to %s", g.Name, g.Out)
	}
	if rep.Variants[1].Out != BraidOutputTopic+"-json" {
		t.Errorf("second variant writes to %s", rep.Variants[1].Out)
	}
	if rep.WarmUp.Records != records || rep.WarmUp.OutRecords != records {
		t.Errorf("warm-up: %d records processed, %d in its output", rep.WarmUp.Records, rep.WarmUp.OutRecords)
	}
	if rep.Ratio <= 0 {
		t.Errorf("ratio = %v", rep.Ratio)
	}

	text := out.String()
	for _, re := range []string{
		`(?m)^bench pipe: 20000 records, 10000 keys, 4 partitions, commit every 200ms, GOMAXPROCS=\d+`,
		`(?m)^warm-up \(raw pipe\) +20000 records +\d+\.\d\ds +\(not measured\)$`,
		`(?m)^raw franz-go pipe +20000 records +\d+\.\d\ds +[\d,]+ rec/s$`,
		`(?m)^braid filter\+mapValues \(bytes serde\) +20000 records`,
		`(?m)^braid filter\+mapValues \(json serde\) +20000 records`,
		`(?m)^medians of 2 rounds:$`,
		`RESULT pipe ratio=\d+\.\d{3} braid=\d+ raw=\d+\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestSeedAndRawPipe checks what the pipe's figures rest on: the seeded
// records have the promised shape, and the raw pipe copies every one of them
// with key, value and timestamp and commits the input's end.
func TestSeedAndRawPipe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()

	const records, keys = 5_000, 100
	if err := Seed(ctx, brokers, "in", 3, records, keys); err != nil {
		t.Fatal(err)
	}
	// A second seed into the existing topic is fine; a partition count
	// other than the topic's is not.
	if err := Seed(ctx, brokers, "in", 3, 0, keys); err != nil {
		t.Errorf("seeding an existing topic: %v", err)
	}
	if err := Seed(ctx, brokers, "in", 5, 0, keys); err == nil || !strings.Contains(err.Error(), "exists with 3 partitions") {
		t.Errorf("seeding with the wrong partition count: err = %v", err)
	}

	adm, err := newAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := EnsureTopic(ctx, adm, "out", 3); err != nil {
		t.Fatal(err)
	}
	res, err := RawPipe(ctx, brokers, "in", "out", "g", records, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != records || res.Elapsed <= 0 {
		t.Errorf("result = %+v", res)
	}

	in := readAll(ctx, t, brokers, "in", records)
	out := readAll(ctx, t, brokers, "out", records)
	type rec struct {
		partition int32
		ts        int64
	}
	seen := map[string]rec{}
	keySet := map[string]bool{}
	var lastTS [3]int64
	for _, r := range in {
		if len(r.Key) != KeyBytes {
			t.Fatalf("key %q is %d bytes", r.Key, len(r.Key))
		}
		if n := len(r.Value); n < ValueBytes-5 || n > ValueBytes+5 {
			t.Fatalf("value %s is %d bytes", r.Value, n)
		}
		var v struct {
			ID       *int     `json:"id"`
			Customer string   `json:"customer"`
			Amount   *float64 `json:"amount"`
			TS       *int64   `json:"ts"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("value %s: %v", r.Value, err)
		}
		if v.ID == nil || v.Amount == nil || v.TS == nil || v.Customer != string(r.Key) || *v.TS != r.Timestamp.UnixMilli() {
			t.Fatalf("value %s of record with key %s, timestamp %d", r.Value, r.Key, r.Timestamp.UnixMilli())
		}
		ts := r.Timestamp.UnixMilli()
		if ts <= lastTS[r.Partition] {
			t.Fatalf("timestamps do not increase in partition %d: %d after %d", r.Partition, ts, lastTS[r.Partition])
		}
		lastTS[r.Partition] = ts
		if p, ok := seen[string(r.Key)]; ok && p.partition != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p.partition, r.Partition)
		}
		seen[string(r.Key)] = rec{r.Partition, ts}
		keySet[string(r.Key)] = true
		seen[string(r.Value)] = rec{r.Partition, ts}
	}
	if len(keySet) != keys {
		t.Errorf("%d distinct keys, want %d", len(keySet), keys)
	}
	for _, r := range out {
		want, ok := seen[string(r.Value)]
		if !ok || want.ts != r.Timestamp.UnixMilli() || seen[string(r.Key)].partition != r.Partition {
			t.Fatalf("output record %s=%s at %d in partition %d is not an input record", r.Key, r.Value, r.Timestamp.UnixMilli(), r.Partition)
		}
		delete(seen, string(r.Value))
	}

	committed, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		end, _ := ends.Lookup("in", p)
		c, ok := committed.Lookup("in", p)
		if !ok || c.At != end.Offset {
			t.Errorf("partition %d: committed %d, end %d", p, c.At, end.Offset)
		}
	}
}

// readAll reads the first n records of topic without a group.
func readAll(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for len(rs) < n {
		f := cl.PollFetches(ctx)
		if err := f.Err0(); err != nil {
			t.Fatalf("reading %s after %d records: %v", topic, len(rs), err)
		}
		rs = append(rs, f.Records()...)
	}
	if len(rs) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(rs), n)
	}
	return rs
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 812345.4: "812,345", 1234567: "1,234,567", 100000: "100,000"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestRunPipeCatchesLostRecords: a variant that claims its records but
// writes none fails the run instead of producing a figure.
func TestRunPipeCatchesLostRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	liar := func(ctx context.Context, _ []string, _, _ string, records int) (Result, error) {
		time.Sleep(5 * time.Millisecond)
		return Result{Records: records, Elapsed: time.Millisecond}, nil
	}
	var out bytes.Buffer
	_, err := RunPipe(ctx, PipeOptions{Records: 1000, NoWarmUp: true, Out: &out}, []Variant{{Name: "liar", Run: liar}})
	if err == nil || !strings.Contains(err.Error(), "holds 0 records, want at least 1000") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(out.String(), "RESULT") || strings.Contains(out.String(), "warm-up") {
		t.Errorf("output:\n%s", out.String())
	}
}
