package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// TestBraidWindowed runs the windowed benchmark with Braid's real sides:
// RunWindowed checks the windowed count's every final result, and the
// plain count's last counts, against the input.
func TestBraidWindowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 500 records a second of event time: 40 s, so several windows close.
	const records, keys = 20_000, 200
	var out bytes.Buffer
	rep, err := RunWindowed(ctx, WindowedOptions{Records: records, Keys: keys, EventRate: 500, Rounds: 2, NoWarmUp: true, Out: &out}, BraidWindowedCount, BraidCount)
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	// About 5% out of order; about one in 50 of those late.
	if rep.OutOfOrder < records*OutOfOrderPercent/100*8/10 || rep.OutOfOrder > records*OutOfOrderPercent/100*12/10 {
		t.Errorf("%d records out of order, want about %d%%", rep.OutOfOrder, OutOfOrderPercent)
	}
	if rep.Late == 0 || rep.Late > rep.OutOfOrder/10 {
		t.Errorf("%d of %d out-of-order records late", rep.Late, rep.OutOfOrder)
	}
	// Windows close 15 s after they start: of the 40 s, at least two
	// windows per key have closed.
	if rep.Windows < 2*keys || rep.Windowed.OutRecords != rep.Windows {
		t.Errorf("%d windows to emit, %d output records", rep.Windows, rep.Windowed.OutRecords)
	}
	if rep.Windowed.Records != records || rep.Count.Records != records || rep.Count.OutRecords < keys || rep.Ratio <= 0 {
		t.Errorf("windowed %+v, count %+v, ratio %v", rep.Windowed, rep.Count, rep.Ratio)
	}
	if rep.Ceiling.Records != records || rep.Ceiling.OutRecords != rep.Windows || rep.VsCeiling <= 0 || len(rep.CeilingRatios) != 2 {
		t.Errorf("ceiling %+v, windowed/ceiling %v %v", rep.Ceiling, rep.VsCeiling, rep.CeilingRatios)
	}
	checkPhases(t, rep.Windowed)
	checkPhases(t, rep.Count)
	checkPhases(t, rep.Ceiling)
	text := out.String()
	for _, re := range []string{
		`(?m)^bench windowed: 20000 records, 200 keys, 4 partitions, 500 records per second of event time, 5% out of order, tumbling 10s windows with 5s grace`,
		`(?m)^braid windowed count \(tumbling, emit final\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ output records\)$`,
		`(?m)^braid groupByKey\.count \(record cache\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ output records\)$`,
		`(?m)^ceiling franz-go windowed count \(map\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ output records\)$`,
		`(?m)^per-round ratios of windowed/count: \d+\.\d{3} \d+\.\d{3} \(target >= 0\.8\)$`,
		`(?m)^per-round ratios of windowed/ceiling: \d+\.\d{3} \d+\.\d{3}$`,
		`RESULT windowed ratio=\d+\.\d{3} windowed=\d+ count=\d+ vs_ceiling=\d+\.\d{3} ceiling=\d+ windowed_startup_ms=\d+ count_startup_ms=\d+ windowed_final_commit_ms=\d+ count_final_commit_ms=\d+ whole_ratio=\d+\.\d{3}\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestWindowedTruth checks the expected results against a hand-made input
// in one partition.
func TestWindowedTruth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const base = 1_700_000_000_000 // a multiple of 10 s
	for _, r := range []struct {
		key string
		at  int64 // ms after base
	}{
		{"a", 1_000}, {"b", 2_000}, {"a", 9_999}, // window 0
		{"a", 10_000}, {"b", 14_000}, // window 1
		{"a", 8_000},  // out of order, window 0 still open (closes at 15 s)
		{"b", 15_000}, // stream time 15 s: window 0 closes
		{"a", 9_000},  // late: window 0 closed
		{"b", 29_000}, // window 2; stream time 29 s closes window 1
		{"a", 21_000}, // out of order, window 2
	} {
		rec := &kgo.Record{Key: []byte(r.key), Value: []byte("v"), Timestamp: time.UnixMilli(base + r.at)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	in, err := windowedTruth(ctx, brokers, "in")
	if err != nil {
		t.Fatal(err)
	}
	wk := func(key string, window int64) string {
		return string(binary.BigEndian.AppendUint64([]byte(key), uint64(base+window*10_000)))
	}
	want := map[string]int64{wk("a", 0): 3, wk("b", 0): 1, wk("a", 1): 1, wk("b", 1): 2}
	if len(in.windows) != len(want) {
		t.Errorf("windows = %d, want %d", len(in.windows), len(want))
	}
	for k, n := range want {
		if in.windows[k] != n {
			t.Errorf("%s: %d, want %d", windowName([]byte(k)), in.windows[k], n)
		}
	}
	if in.outOfOrder != 3 || in.late != 1 || in.perKey["a"] != 6 || in.perKey["b"] != 4 {
		t.Errorf("out of order %d, late %d, per key %v", in.outOfOrder, in.late, in.perKey)
	}
}

// TestRunWindowedCatchesWrongResults: a windowed count that emits every
// window twice, or not at all, fails the run instead of producing a figure.
func TestRunWindowedCatchesWrongResults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const records, keys = 5_000, 50
	for _, tc := range []struct {
		name   string
		copies int
		want   string
	}{
		{"twice", 2, "0 windows missing, 0 with a wrong count, 0 unknown, "},
		{"never", 0, " windows missing, 0 with a wrong count, 0 unknown, 0 emitted more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			liar := func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
				start := time.Now()
				truth, err := windowedTruth(ctx, brokers, in)
				if err != nil {
					return Result{}, err
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(out))
				if err != nil {
					return Result{}, err
				}
				defer cl.Close()
				for range tc.copies {
					for k, n := range truth.windows {
						rec := &kgo.Record{Key: []byte(k), Value: binary.BigEndian.AppendUint64(nil, uint64(n))}
						if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
							return Result{}, err
						}
					}
				}
				return Result{Records: records, Elapsed: time.Since(start)}, nil
			}
			var out bytes.Buffer
			_, err := RunWindowed(ctx, WindowedOptions{Records: records, Keys: keys, EventRate: 100, Rounds: 1, NoWarmUp: true, Out: &out}, liar, BraidCount)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v", err)
			}
			if strings.Contains(out.String(), "RESULT") {
				t.Errorf("output:\n%s", out.String())
			}
		})
	}
}
