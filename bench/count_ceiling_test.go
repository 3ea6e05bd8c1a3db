package bench

import (
	"context"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker"
)

// TestCachedCount checks the cached count ceiling against counts computed
// from its input: in the output and in the changelog every key appears in
// its input partition, its counts go up from one record to the next and
// end at the number of input records with the key; updates are folded
// (fewer records than the input); and the group committed the input's
// end.
func TestCachedCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(broker.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := b.Addrs()

	const records, keys = 5_000, 70
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
	// A commit interval longer than the run: one commit, at the end, so
	// every key is written exactly once.
	res, err := CachedCount(ctx, brokers, "in", "out", "changelog", "g", records, time.Hour)
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
	for _, topic := range []string{"out", "changelog"} {
		n, err := topicRecords(ctx, adm, topic)
		if err != nil {
			t.Fatal(err)
		}
		if n != keys {
			t.Errorf("%s holds %d records, want one per key, %d", topic, n, keys)
		}
		for _, r := range readAll(ctx, t, brokers, topic, int(n)) {
			k := string(r.Key)
			if r.Partition != partition[k] {
				t.Errorf("%s: key %s in partition %d, its input is in %d", topic, k, r.Partition, partition[k])
			}
		}
		if _, err := checkCounts(ctx, brokers, topic, want, countChecks{increasing: true}); err != nil {
			t.Errorf("%s: %v", topic, err)
		}
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
