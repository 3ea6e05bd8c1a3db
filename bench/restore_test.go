package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/braidstream/braid/runtime/broker"
)

// TestSeedChangelogAndRawRestore checks the restore baseline: the seeded
// changelog is compacted and holds every record, and after RawRestore each
// partition's store holds exactly the latest value of each of its keys.
func TestSeedChangelogAndRawRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()

	const records, keys = 20_000, 2_000
	if err := SeedChangelog(ctx, brokers, "cl", 4, records, keys); err != nil {
		t.Fatal(err)
	}
	if err := SeedChangelog(ctx, brokers, "cl", 3, 0, keys); err == nil || !strings.Contains(err.Error(), "exists with 4 partitions") {
		t.Errorf("seeding with the wrong partition count: err = %v", err)
	}
	adm, err := newAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	configs, err := adm.DescribeTopicConfigs(ctx, "cl")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := configs.On("cl", nil); err != nil {
		t.Fatal(err)
	} else if v := configValue(c.Configs, "cleanup.policy"); v != "compact" {
		t.Errorf("changelog cleanup.policy = %q", v)
	}

	// The latest value of every key, and its partition, from the topic.
	latest := map[string][]byte{}
	partition := map[string]int32{}
	for _, r := range readAll(ctx, t, brokers, "cl", records) {
		latest[string(r.Key)] = r.Value
		partition[string(r.Key)] = r.Partition
	}
	if len(latest) != keys {
		t.Fatalf("changelog has %d keys, want %d", len(latest), keys)
	}

	if _, err := RawRestore(ctx, brokers, "cl", t.TempDir(), records-1); err == nil || !strings.Contains(err.Error(), "holds 20000 records, want 19999") {
		t.Errorf("restoring with the wrong record count: err = %v", err)
	}
	dir := t.TempDir()
	res, err := RawRestore(ctx, brokers, "cl", dir, records)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != records || res.Elapsed <= 0 {
		t.Errorf("result = %+v", res)
	}
	for p := range int32(4) {
		db, err := pebble.Open(filepath.Join(dir, strconv.Itoa(int(p))), &pebble.Options{ErrorIfNotExists: true, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range latest {
			if partition[k] != p {
				continue
			}
			n++
			got, closer, err := db.Get([]byte(k))
			if err != nil {
				t.Errorf("store %d: key %s: %v", p, k, err)
				continue
			}
			if !bytes.Equal(got, v) {
				t.Errorf("store %d: key %s = %s, want %s", p, k, got, v)
			}
			closer.Close()
		}
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for it.First(); it.Valid(); it.Next() {
			stored++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if stored != n {
			t.Errorf("store %d holds %d keys, want %d", p, stored, n)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// The check RunRestore makes of every raw restore passes on this
	// store and fails once a value is stale.
	want := restoredState{}
	if _, err := readTopic(ctx, brokers, "cl", func(r *kgo.Record) error { want.apply(r); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := want.check(dir); err != nil {
		t.Errorf("check of a correct restore: %v", err)
	}
	k := string(Key(7, keys))
	db, err := pebble.Open(filepath.Join(dir, strconv.Itoa(int(partition[k]))), &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(k), []byte("stale"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := want.check(dir); err == nil || !strings.Contains(err.Error(), `key "key-000007" holds "stale"`) {
		t.Errorf("check of a stale store: err = %v", err)
	}
}

func TestRunRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const records, keys = 20_000, 2_000
	var calls atomic.Int64
	standIn := func(ctx context.Context, brokers []string, changelog string, records int, check func(StoreRows) error) (Result, error) {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(calls.Add(1)))
		res, err := RawRestore(ctx, brokers, changelog, dir, records)
		if err != nil {
			return res, err
		}
		return res, check(dirRows(dir, 4, nil))
	}
	var out bytes.Buffer
	rep, err := RunRestore(ctx, RestoreOptions{Records: records, Keys: keys, Rounds: 2, Out: &out}, standIn)
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != records || rep.Keys != keys || rep.Partitions != 4 || rep.Rounds != 2 || rep.GOMAXPROCS < 1 {
		t.Errorf("report header = %+v", rep)
	}
	if lo, hi := int64(records*(KeyBytes+ValueBytes-5)), int64(records*(KeyBytes+ValueBytes+5)); rep.Bytes < lo || rep.Bytes > hi {
		t.Errorf("changelog bytes = %d", rep.Bytes)
	}
	for _, r := range []Run{rep.WarmUp, rep.Raw, rep.Braid} {
		if r.Records != records || r.Elapsed <= 0 || r.Wall < r.Elapsed {
			t.Errorf("%s: %d records in %v (wall %v)", r.Name, r.Records, r.Elapsed, r.Wall)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("the stand-in ran %d times, want 2", calls.Load())
	}
	if rep.Ratio <= 0 {
		t.Errorf("ratio = %v", rep.Ratio)
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^bench restore: 20000 changelog records, 2000 keys, 4 partitions, GOMAXPROCS=\d+, embedded broker$`,
		`(?m)^  raw: +a plain franz-go consumer writing each poll's records of a partition in one pebble batch$`,
		`(?m)^  braid: an App restoring its store's changelog, a task per partition, before it processes$`,
		`(?m)^  both measured until every record is committed to pebble \(no fsync, no flush\), both stores checked after$`,
		`(?m)^warm-up \(raw restore\) +20000 records +\d+\.\d\ds +\(not measured\)$`,
		`(?m)^raw consumer -> pebble batches +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ MB/s\)$`,
		`(?m)^braid store restore +20000 records +\d+\.\d\ds +[\d,]+ rec/s  \(start-up \d+ ms, steady [\d,]+ rec/s( \(whole run\))?, final commit \d+ ms\)  \(\d+ MB/s\)$`,
		`(?m)^medians of 2 rounds \(steady state\):$`,
		`RESULT restore ratio=\d+\.\d{3} braid=\d+ raw=\d+ braid_startup_ms=\d+ raw_startup_ms=\d+ braid_final_commit_ms=\d+ raw_final_commit_ms=\d+ whole_ratio=\d+\.\d{3}\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s", re)
		}
	}
	if n := strings.Count(text, "RESULT"); n != 1 {
		t.Errorf("%d RESULT lines", n)
	}
}

// TestRunRestoreCatchesShortRestores: a Braid restore that reports fewer
// records than the changelog holds fails the run.
func TestRunRestoreCatchesShortRestores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	short := func(_ context.Context, _ []string, _ string, records int, _ func(StoreRows) error) (Result, error) {
		time.Sleep(5 * time.Millisecond)
		return Result{Records: records / 2, Elapsed: time.Millisecond}, nil
	}
	var out bytes.Buffer
	_, err := RunRestore(ctx, RestoreOptions{Records: 1_000, Keys: 10, Rounds: 1, NoWarmUp: true, Out: &out}, short)
	if err == nil || !strings.Contains(err.Error(), "reports 500 records restored, want 1000") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(out.String(), "RESULT") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestRunRestoreCatchesWrongState: a Braid restore that restores every
// record but whose stores then hold a stale value fails the run.
func TestRunRestoreCatchesWrongState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stale := func(ctx context.Context, brokers []string, changelog string, records int, check func(StoreRows) error) (Result, error) {
		dir := t.TempDir()
		res, err := RawRestore(ctx, brokers, changelog, dir, records)
		if err != nil {
			return res, err
		}
		return res, check(dirRows(dir, 4, func(key, value []byte) []byte {
			if string(key) == string(Key(3, 10)) {
				return []byte("stale")
			}
			return value
		}))
	}
	var out bytes.Buffer
	_, err := RunRestore(ctx, RestoreOptions{Records: 1_000, Keys: 10, Rounds: 1, NoWarmUp: true, Out: &out}, stale)
	if err == nil || !strings.Contains(err.Error(), `braid store restore: checking the restored stores: key "key-000003" holds "stale"`) {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(out.String(), "RESULT") {
		t.Errorf("output:\n%s", out.String())
	}
}

// dirRows reads the rows RawRestore left under dir, partitions DBs, each
// value passed through edit if it is not nil.
func dirRows(dir string, partitions int, edit func(key, value []byte) []byte) StoreRows {
	return func(fn func(key, value []byte) error) error {
		for p := range partitions {
			if err := dbRows(filepath.Join(dir, strconv.Itoa(p)), edit, fn); err != nil {
				return err
			}
		}
		return nil
	}
}

func dbRows(path string, edit func(key, value []byte) []byte, fn func(key, value []byte) error) (err error) {
	db, err := pebble.Open(path, &pebble.Options{ErrorIfNotExists: true, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		v := it.Value()
		if edit != nil {
			v = edit(it.Key(), v)
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}
