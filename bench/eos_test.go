package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBraidEOS runs the eos benchmark with Braid's real sides: RunEOS
// reads both outputs read-committed and checks every key's last count
// against the input, and that the exactly-once output never repeats or
// lowers a count.
func TestBraidEOS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records, keys = 20_000, 1_000
	var out bytes.Buffer
	rep, err := RunEOS(ctx, EOSOptions{Records: records, Keys: keys, Rounds: 1, NoWarmUp: true, Out: &out})
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Run{rep.ExactlyOnce, rep.AtLeastOnce} {
		// The record cache folds a key's updates between commits: at
		// least one output record per key, at most one per input record.
		if r.Records != records || r.Elapsed <= 0 || r.OutRecords < keys || r.OutRecords > records {
			t.Errorf("%s: %d records in %v, %d output records", r.Name, r.Records, r.Elapsed, r.OutRecords)
		}
	}
	if rep.Rounds != 1 || len(rep.Ratios) != 1 || rep.Ratio != rep.Ratios[0] || rep.Ratio <= 0 {
		t.Errorf("rounds %d, ratios %v, ratio %v", rep.Rounds, rep.Ratios, rep.Ratio)
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^bench eos: 20000 records, 1000 keys, 4 partitions, at-least-once committing every 100ms against exactly-once committing every 100ms, GOMAXPROCS=\d+`,
		`(?m)^braid count exactly-once \(commit 100ms\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(\d+ output records\)$`,
		`(?m)^braid count at-least-once \(commit 100ms\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(\d+ output records\)$`,
		`(?m)^medians of 1 rounds:$`,
		`(?m)^per-round ratios of exactly-once/at-least-once: \d+\.\d{3}$`,
		`\nRESULT eos ratio=\d+\.\d{3} eos=\d+ alos=\d+\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestRunEOSChecks runs RunEOS with stand-in exactly-once counts that
// write the right last counts, or not, in transactions: the checks read
// what a read-committed consumer reads, so an aborted transaction's wrong
// counts do not count, and a count written twice, or a transaction left
// open, fails the run.
func TestRunEOSChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records, keys = 3_000, 70
	var transactions atomic.Int64 // numbers the stand-ins' transactional ids
	for _, tc := range []struct {
		name   string
		copies int  // of the right counts, in one transaction
		open   bool // leaves that transaction open
		// aborted then writes every key's count as 1 in a transaction
		// that is aborted: last in the log, but never read committed.
		aborted bool
		want    string
	}{
		{name: "committed", copies: 1},
		{name: "then an aborted transaction", copies: 1, aborted: true},
		{name: "twice", copies: 2, want: "0 keys missing, 0 with a wrong last count, 0 unknown, 70 counts not above their key's previous one"},
		{name: "only aborted", aborted: true, want: "70 keys missing, 0 with a wrong last count"},
		{name: "open transaction", copies: 1, open: true, want: "has a transaction open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eos := func(ctx context.Context, brokers []string, in, out string, records int) (Result, error) {
				start := time.Now()
				want := map[string]int64{}
				if _, err := readTopic(ctx, brokers, in, func(r *kgo.Record) error { want[string(r.Key)]++; return nil }); err != nil {
					return Result{}, err
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(out),
					kgo.TransactionalID(fmt.Sprintf("eos-stand-in-%d", transactions.Add(1))))
				if err != nil {
					return Result{}, err
				}
				defer cl.Close()
				// write writes counts copies times in one transaction, and
				// ends it with end unless open.
				write := func(counts map[string]int64, copies int, end kgo.TransactionEndTry, open bool) error {
					if err := cl.BeginTransaction(); err != nil {
						return err
					}
					for range copies {
						for k, c := range counts {
							cl.Produce(ctx, &kgo.Record{Key: []byte(k), Value: binary.BigEndian.AppendUint64(nil, uint64(c))}, nil)
						}
					}
					if err := cl.Flush(ctx); err != nil || open {
						return err
					}
					return cl.EndTransaction(ctx, end)
				}
				if tc.copies > 0 {
					if err := write(want, tc.copies, kgo.TryCommit, tc.open); err != nil {
						return Result{}, err
					}
				}
				if tc.aborted {
					ones := map[string]int64{}
					for k := range want {
						ones[k] = 1
					}
					if err := write(ones, 1, kgo.TryAbort, false); err != nil {
						return Result{}, err
					}
				}
				return Result{Records: records, Elapsed: time.Since(start)}, nil
			}
			var out bytes.Buffer
			rep, err := RunEOS(ctx, EOSOptions{Records: records, Keys: keys, Rounds: 1, NoWarmUp: true, Out: &out,
				ExactlyOnce: eos, AtLeastOnce: standInCount(t)})
			if tc.want == "" {
				if err != nil || rep.ExactlyOnce.OutRecords != keys || !strings.Contains(out.String(), "RESULT eos ratio=") {
					t.Errorf("err = %v, %d output records; output:\n%s", err, rep.ExactlyOnce.OutRecords, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(out.String(), "RESULT") {
				t.Errorf("output:\n%s", out.String())
			}
		})
	}
}
