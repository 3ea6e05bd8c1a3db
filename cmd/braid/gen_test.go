package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// genBroker starts an in-process broker with the topic "orders".
func genBroker(t *testing.T) (addr string, cl *kgo.Client) {
	t.Helper()
	b, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "orders")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Addr(), cl
}

func TestGenCommand(t *testing.T) {
	addr, _ := genBroker(t)
	defer func(d time.Duration) { genReportInterval = d }(genReportInterval)
	genReportInterval = 300 * time.Millisecond

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	began := time.Now()
	err := run(ctx, []string{"gen", "--brokers", addr, "--topic", "orders", "--rate", "200", "--keys", "4", "--key-prefix", "cust",
		"--field", "customer=key", "--field", "amount=random(1, 500)", "--field", "tier=choice(gold, silver)",
		"--field", "note='a=b, c'", "--field", "ts=timestamp",
		"--jitter", "500ms", "--late-fraction", "0.2", "--late-by", "1h", "--duration", "1s", "--seed", "7"}, &out, io.Discard)
	ranFor := time.Since(began)
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	if !regexp.MustCompile(`(?m)^\S+  produced \d+  late \d+  errors 0  [0-9.]+ records/s$`).MatchString(out.String()) {
		t.Errorf("no progress line in the output:\n%s", out.String())
	}
	m := regexp.MustCompile(`braid gen: (\d+) records to "orders" in (\S+): (\d+) late, 0 errors, [0-9.]+ records/s\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no final summary at the end of the output:\n%s", out.String())
	}
	produced, _ := strconv.Atoi(m[1])
	took, err := time.ParseDuration(m[2])
	lateSaid, _ := strconv.Atoi(m[3])
	// --duration 1s stops it no sooner than a second; a slow machine
	// takes longer, never less.
	if err != nil || ranFor < time.Second {
		t.Errorf("gen --duration 1s returned after %v (it says it ran %s: %v)", ranFor, m[2], err)
	}
	// The generator's pacing: the first record at once, then 200 a second
	// at most, over the time it says it ran (rounded to the millisecond).
	if limit := 1 + 200*(took+time.Millisecond).Seconds(); produced < 1 || float64(produced) > limit {
		t.Errorf("%d records in %v at 200/s, want 1 to %.0f", produced, took, limit)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got, late := 0, 0
	for got < produced && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		for _, rec := range fetches.Records() {
			got++
			var v map[string]any
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				t.Fatalf("record value %s: %v", rec.Value, err)
			}
			amount, _ := v["amount"].(float64)
			if len(v) != 5 || v["customer"] != string(rec.Key) || !regexp.MustCompile(`^cust-[0-3]$`).Match(rec.Key) ||
				amount < 1 || amount > 500 || (v["tier"] != "gold" && v["tier"] != "silver") || v["note"] != "a=b, c" ||
				v["ts"] != float64(rec.Timestamp.UnixMilli()) {
				t.Fatalf("record key %s value %s", rec.Key, rec.Value)
			}
			if time.Since(rec.Timestamp) > 30*time.Minute {
				late++
			}
		}
	}
	if got != produced || late != lateSaid || late == 0 {
		t.Errorf("the topic holds %d records, %d late; gen said %d, %d late", got, late, produced, lateSaid)
	}
}

func TestGenMissingTopic(t *testing.T) {
	addr, cl := genBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"gen", "--brokers", addr, "--topic", "nope", "--create=false", "--duration", "1s"}, io.Discard, io.Discard)
	if want := fmt.Sprintf(`gen: topic "nope" does not exist on %s: drop --create=false to have gen create it (--partitions, --replication-factor)`, addr); err == nil || err.Error() != want {
		t.Errorf("gen --create=false to a missing topic = %v, want %s", err, want)
	}
	// Checking did not create it.
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if details.Has("nope") {
		t.Error(`gen --create=false created the topic "nope"`)
	}
}

// TestGenCreatesTopic runs gen on a missing topic, which it creates with
// --partitions and says so, then again on the topic it made, which it
// uses as it is. Each run stops once a record it produced arrives.
func TestGenCreatesTopic(t *testing.T) {
	addr, cl := genBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("fresh"), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	// genUntilRecord runs gen until the consumer reads a record of seq
	// seq (each run numbers its records from its own start).
	genUntilRecord := func(partitions string, start int) string {
		t.Helper()
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- run(runCtx, []string{"gen", "--brokers", addr, "--topic", "fresh", "--partitions", partitions, "--rate", "50",
				"--field", "seq=sequence(" + strconv.Itoa(start) + ")"}, &out, io.Discard)
			stop() // a gen that ends ends the poll too
		}()
		for {
			fetches := consumer.PollFetches(runCtx)
			if ctx.Err() != nil {
				t.Fatalf("no record of gen on the topic: %v", ctx.Err())
			}
			select {
			case err := <-done:
				t.Fatalf("gen ended before a record arrived: %v\n%s", err, out.String())
			default:
			}
			found := false
			for _, rec := range fetches.Records() {
				var v struct{ Seq int }
				if json.Unmarshal(rec.Value, &v) == nil && v.Seq >= start {
					found = true
				}
			}
			if found {
				break
			}
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("gen: %v\n%s", err, out.String())
		}
		return out.String()
	}
	partitions := func() int {
		t.Helper()
		details, err := kadm.NewClient(cl).ListTopics(ctx, "fresh")
		if err != nil {
			t.Fatal(err)
		}
		return len(details["fresh"].Partitions)
	}

	out := genUntilRecord("3", 0)
	if want := fmt.Sprintf("braid gen: created topic %q on %s with 3 partitions, replication factor 1\n", "fresh", addr); !strings.HasPrefix(out, want) {
		t.Errorf("gen on a missing topic: output does not start with %q:\n%s", want, out)
	}
	if n := partitions(); n != 3 {
		t.Errorf("gen --partitions 3 created %d partitions", n)
	}

	out = genUntilRecord("5", 1_000_000)
	if strings.Contains(out, "created") {
		t.Errorf("gen on an existing topic says it created it:\n%s", out)
	}
	if n := partitions(); n != 3 {
		t.Errorf("gen --partitions 5 on the existing topic of 3 partitions: it has %d", n)
	}
}

func TestGenBadInvocations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "gen: --topic is required"},
		{[]string{"--topic", "t", "extra"}, `gen: unexpected arguments ["extra"]`},
		{[]string{"--topic", "t", "--rate", "0"}, "gen: --rate 0: must be > 0"},
		{[]string{"--topic", "t", "--rate", "2e6"}, `gen: datagen spec "t": Rate 2e+06: must be > 0 and <= 1e6 records per second`},
		{[]string{"--topic", "t", "--keys", "0"}, "gen: --keys 0: must be positive"},
		{[]string{"--topic", "t", "--late-fraction", "2"}, `LateFraction 2: must be between 0 and 1`},
		{[]string{"--topic", "t", "--jitter", "2m", "--late-fraction", "0.1"}, `LateBy 1m0s: must exceed Jitter 2m0s`},
		{[]string{"--topic", "t", "--field", "amount=random(5, 1)"}, `Template field "amount": random(5, 1): min is above max`},
		{[]string{"--topic", "t", "--field", "amount"}, `"amount" is not name=generator`},
		{[]string{"--topic", "t", "--field", "=key"}, `"=key" has no field name`},
		{[]string{"--topic", "t", "--field", "a=key", "--field", "a=bool"}, `field "a" given twice`},
		{[]string{"--topic", "bad topic"}, `Topic: "bad topic" has the character ' '`},
		{[]string{"--topic", "t", "--brokers", " , "}, "gen: --brokers is empty"},
		{[]string{"--topic", "t", "--partitions", "0"}, "gen: --partitions 0: must be positive, or -1 for the broker's default"},
		{[]string{"--topic", "t", "--partitions", "-2"}, "gen: --partitions -2: must be positive"},
		{[]string{"--topic", "t", "--replication-factor", "0"}, "gen: --replication-factor 0: must be positive, or -1 for the broker's default"},
		{[]string{"--topic", "t", "--replication-factor", "40000"}, "gen: --replication-factor 40000: must be positive"},
	} {
		err := run(context.Background(), append([]string{"gen"}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gen %q = %v, want an error containing %s", tc.args, err, tc.want)
		}
	}
}

func TestGenHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"gen", "--help"}, &out, io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("gen --help = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: braid gen --topic T", "-field", "-late-fraction", "-duration", "randfloat(min, max)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("gen --help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	run(context.Background(), []string{"--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "  gen ") {
		t.Errorf("braid --help does not list gen:\n%s", out.String())
	}
}
