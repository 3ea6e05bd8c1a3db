package bench

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBraidJoin runs the join benchmark small: with 5,000 keys a key
// recurs every 5 s on each side, so a left record meets the right record
// 1 s after it and, from the second recurrence on, the one 4 s before it
// too; RunJoin checks every left record's results, Braid's and the
// hand-written ceiling's, against that, and the ceiling's changelogs.
func TestBraidJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records, keys = 20_000, 5_000
	var out bytes.Buffer
	rep, err := RunJoin(ctx, JoinOptions{Records: records, Keys: keys, Rounds: 2, NoWarmUp: true, Out: &out})
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(records/2 + records/2 - keys); rep.Pairs != want || rep.Join.OutRecords != want || rep.Ceiling.OutRecords != want {
		t.Errorf("%d pairs to emit, %d emitted by Braid, %d by the ceiling; want %d", rep.Pairs, rep.Join.OutRecords, rep.Ceiling.OutRecords, want)
	}
	if rep.Join.Records != records || rep.Ceiling.Records != records || rep.Count.Records != records || rep.Ratio <= 0 || rep.VsCount <= 0 {
		t.Errorf("join %+v, ceiling %+v, count %+v, ratio %v, vs count %v", rep.Join, rep.Ceiling, rep.Count, rep.Ratio, rep.VsCount)
	}
	for _, r := range []Run{rep.Join, rep.Ceiling, rep.Count} {
		checkPhases(t, r)
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^bench join: 20000 records \(10000 a side\), 5000 keys, 4 partitions, inner join within 5s`,
		`(?m)^braid stream-stream join +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(15000 output records\)$`,
		`(?m)^hand-written join \(ceiling\) +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(15000 output records\)$`,
		`(?m)^per-round steady ratios of join/ceiling: \d+\.\d{3} \d+\.\d{3}$`,
		`(?m)^per-round steady ratios of join/count: \d+\.\d{3} \d+\.\d{3}$`,
		`RESULT join ratio=\d+\.\d{3} join=\d+ ceiling=\d+ vs_count=\d+\.\d{3} join_startup_ms=\d+ ceiling_startup_ms=\d+ join_final_commit_ms=\d+ ceiling_final_commit_ms=\d+ whole_ratio=\d+\.\d{3}\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestJoinPairs checks the join benchmark's truth on a case worked out by
// hand: 12 records a side over 4 keys, so a key recurs every 4 ms, well
// within the 5 s windows: left record i meets every right record of its
// key, 3 each.
func TestJoinPairs(t *testing.T) {
	for i, n := range joinPairs(12, 4) {
		if n != 3 {
			t.Errorf("left record %d meets %d right records, want 3", i, n)
		}
	}
	if got, ok := recordID(appendValue(nil, 42, Key(1, 4), 7)); !ok || got != 42 {
		t.Errorf("recordID = %d, %v; want 42", got, ok)
	}
}
