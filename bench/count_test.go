package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// TestHandwrittenCount checks the count baseline against counts computed
// from its input: every key's counts in the output and in the changelog run
// 1, 2, 3, ... in the key's input partition and end at the number of input
// records with the key, the stores hold the final counts, and the group
// committed the input's end.
func TestHandwrittenCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()

	const records, keys = 5_000, 70 // 5,000 is not a multiple of 70: counts differ
	if err := Seed(ctx, brokers, "in", 3, records, keys); err != nil {
		t.Fatal(err)
	}
	adm, err := newAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := EnsureTopic(ctx, adm, "out", 3); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := HandwrittenCount(ctx, brokers, "in", "out", "changelog", "g", dir, records, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != records || res.Elapsed <= 0 {
		t.Errorf("result = %+v", res)
	}

	want := map[string]int64{}
	partition := map[string]int32{}
	for _, r := range readAll(ctx, t, brokers, "in", records) {
		want[string(r.Key)]++
		partition[string(r.Key)] = r.Partition
	}
	if len(want) != keys {
		t.Fatalf("input has %d keys, want %d", len(want), keys)
	}
	for _, topic := range []string{"out", "changelog"} {
		last := map[string]int64{}
		for _, r := range readAll(ctx, t, brokers, topic, records) {
			k := string(r.Key)
			if r.Partition != partition[k] {
				t.Fatalf("%s: key %s in partition %d, its input is in %d", topic, k, r.Partition, partition[k])
			}
			if len(r.Value) != 8 {
				t.Fatalf("%s: key %s has a %d-byte value", topic, k, len(r.Value))
			}
			n := int64(binary.BigEndian.Uint64(r.Value))
			if n != last[k]+1 {
				t.Fatalf("%s: key %s counts %d after %d", topic, k, n, last[k])
			}
			last[k] = n
		}
		for k, n := range want {
			if last[k] != n {
				t.Errorf("%s: last count of %s = %d, want %d", topic, k, last[k], n)
			}
		}
	}
	if n, err := checkCounts(ctx, brokers, "out", want, countChecks{increasing: true}); err != nil || n != records {
		t.Errorf("checkCounts = %d, %v", n, err)
	}
	// RunCount's check of a hand-written count holds once the broker's
	// cleaner compacted the changelog: its records are counted by offsets
	// (TestTopicRecordsAfterCompaction). How much the cleaner removes here
	// depends on how the run's writes fell into batches (it keeps the last
	// batch of each partition), so the test does not ask.
	b.Compact()
	cr := &countRunner{opts: CountOptions{Records: records}, brokers: brokers, adm: adm, want: want}
	side := &countSide{name: "handwritten", out: "out", changelog: "changelog", exact: true}
	if n, err := cr.check(ctx, &Run{Out: "out"}, side); err != nil || n != records {
		t.Errorf("check after compaction = %d, %v", n, err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, "changelog")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := configs.On("changelog", nil); err != nil {
		t.Fatal(err)
	} else if v := configValue(c.Configs, "cleanup.policy"); v != "compact" {
		t.Errorf("changelog cleanup.policy = %q", v)
	}

	// The stores hold the final counts, each key in its partition's DB.
	for p := range int32(3) {
		db, err := pebble.Open(filepath.Join(dir, strconv.Itoa(int(p))), &pebble.Options{ErrorIfNotExists: true, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range want {
			v, closer, err := db.Get([]byte(k))
			if partition[k] != p {
				if err == nil {
					closer.Close()
					t.Errorf("store %d holds key %s of partition %d", p, k, partition[k])
				}
				continue
			}
			if err != nil {
				t.Errorf("store %d: key %s: %v", p, k, err)
				continue
			}
			if got := int64(binary.BigEndian.Uint64(v)); got != n {
				t.Errorf("store %d: key %s counts %d, want %d", p, k, got, n)
			}
			closer.Close()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
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

func configValue(cs []kadm.Config, name string) string {
	for _, c := range cs {
		if c.Key == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// standInCount is HandwrittenCount in a fresh group with a fresh changelog
// and state directory per call: the CountFunc the tests pass for Braid's.
func standInCount(t *testing.T) CountFunc {
	var calls atomic.Int64
	return func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
		n := calls.Add(1)
		dir := filepath.Join(t.TempDir(), "state")
		return HandwrittenCount(ctx, brokers, in, out, fmt.Sprintf("standin-%d-changelog", n), fmt.Sprintf("standin-%d", n), dir, records, time.Second)
	}
}

func TestRunCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const records = 20_000
	var out bytes.Buffer
	rep, err := RunCount(ctx, CountOptions{Records: records, CommitInterval: 200 * time.Millisecond, Rounds: 2, Out: &out}, standInCount(t))
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != records || rep.Keys != 10_000 || rep.Partitions != 4 || rep.Rounds != 2 || rep.GOMAXPROCS < 1 {
		t.Errorf("report header = %+v", rep)
	}
	for _, r := range []Run{rep.WarmUp, rep.Handwritten, rep.Braid} {
		if r.Records != records || r.Elapsed <= 0 || r.Wall < r.Elapsed || r.OutRecords != records {
			t.Errorf("%s: %d records in %v (wall %v), %d output records", r.Name, r.Records, r.Elapsed, r.Wall, r.OutRecords)
		}
	}
	// The ceiling writes a key once per commit: with 20,000 records over
	// 10,000 keys, from one record per key to one per input record.
	if r := rep.Ceiling; r.Records != records || r.Elapsed <= 0 || r.Wall < r.Elapsed || r.OutRecords < 10_000 || r.OutRecords > records {
		t.Errorf("%s: %d records in %v (wall %v), %d output records", r.Name, r.Records, r.Elapsed, r.Wall, r.OutRecords)
	}
	if rep.Braid.Out != BraidCountOutputTopic || rep.Handwritten.Out != HandwrittenCountOutputTopic || rep.Ceiling.Out != CachedCountOutputTopic {
		t.Errorf("outputs: braid %s, handwritten %s, ceiling %s", rep.Braid.Out, rep.Handwritten.Out, rep.Ceiling.Out)
	}
	if rep.Ratio <= 0 || rep.NaiveRatio <= 0 || len(rep.Ratios) != 2 || len(rep.NaiveRatios) != 2 {
		t.Errorf("ratio = %v %v, naive ratio = %v %v", rep.Ratio, rep.Ratios, rep.NaiveRatio, rep.NaiveRatios)
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^bench count: 20000 records, 10000 keys, 4 partitions, commit every 200ms, GOMAXPROCS=\d+`,
		`(?m)^  handwritten: franz-go \+ pebble, no cache: .* \(naive\)$`,
		`(?m)^  ceiling: +franz-go, counts in a map: each key changed since the last commit written once to output and changelog per commit$`,
		`(?m)^  braid: +GroupByKey\(\)\.Count\(\), record cache, at-least-once$`,
		`(?m)^  target: braid/ceiling >= 0\.9 `,
		`(?m)^warm-up \(handwritten count\) +20000 records +\d+\.\d\ds +\(not measured\)  \(20000 output records\)$`,
		`(?m)^handwritten franz-go\+pebble count \(naive\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(20000 output records\)$`,
		`(?m)^ceiling franz-go cached count \(map\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ output records\)$`,
		`(?m)^braid groupByKey\.count \(record cache\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)`,
		`(?m)^medians of 2 rounds \(steady state\):$`,
		`(?m)^per-round steady ratios of braid/ceiling: .* \(target >= 0\.9\)$`,
		`(?m)^per-round steady ratios of braid/handwritten: `,
		`RESULT count ratio=\d+\.\d{3} braid=\d+ ceiling=\d+ naive_ratio=\d+\.\d{3} handwritten=\d+ braid_startup_ms=\d+ ceiling_startup_ms=\d+ braid_final_commit_ms=\d+ ceiling_final_commit_ms=\d+ whole_ratio=\d+\.\d{3}\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestRunCountCatchesWrongCounts: a Braid count that writes one record per
// key but wrong counts fails the run instead of producing a figure.
func TestRunCountCatchesWrongCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const records, keys = 2_000, 100
	liar := func(ctx context.Context, brokers []string, _, out string, records int) (Result, error) {
		start := time.Now()
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(out))
		if err != nil {
			return Result{}, err
		}
		defer cl.Close()
		for i := range keys {
			v := binary.BigEndian.AppendUint64(nil, 1)
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: Key(i, keys), Value: v}).FirstErr(); err != nil {
				return Result{}, err
			}
		}
		return Result{Records: records, Elapsed: time.Since(start)}, nil
	}
	var out bytes.Buffer
	_, err := RunCount(ctx, CountOptions{Records: records, Keys: keys, Rounds: 1, NoWarmUp: true, Out: &out}, liar)
	if err == nil || !strings.Contains(err.Error(), "0 keys missing, 100 with a wrong last count, 0 unknown") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(out.String(), "RESULT") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestTopicRecordsAfterCompaction: the record count of a changelog, by
// offsets, is what was written even after the cleaner left only the last
// record of each key. Each record is produced on its own, so each is a
// batch of its own, which the cleaner may remove (it keeps the last).
func TestTopicRecordsAfterCompaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	adm, err := newAdmin(b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := ensureCompactedTopic(ctx, adm, "changelog", 1); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("changelog"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const written = 10
	for i := range written {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.Compact()
	if n, err := readTopic(ctx, b.Addrs(), "changelog", func(*kgo.Record) error { return nil }); err != nil || n >= written {
		t.Fatalf("the compacted changelog reads %d records (%v), want fewer than %d", n, err, written)
	}
	if n, err := topicRecords(ctx, adm, "changelog"); err != nil || n != written {
		t.Errorf("topicRecords = %d, %v; want %d", n, err, written)
	}
}
