package difftest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/braidstream/braid/designer"
)

// TestDifferentialPartitions runs designs whose source topics have three
// partitions in Braid (one in TopologyTestDriver): records of different
// keys in different tasks, repartitioned by a new key, joined per
// partition, counted.
func TestDifferentialPartitions(t *testing.T) {
	var in []Input
	for i := range 24 {
		in = append(in, rec("orders", fmt.Sprintf("c%d", i%7), fmt.Sprintf(`{"amount":%d,"region":"r%d"}`, i*3, i%3), int64(1000+i*700-(i%4)*900)))
		if i%3 == 0 {
			in = append(in, rec("customers", fmt.Sprintf("c%d", i%5), fmt.Sprintf(`{"name":"n%d"}`, i), int64(1000+i*700)))
		}
	}
	cases := []Case{
		{Name: "pipe", Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("sink", "sink", "topic", "out"))},
		{Name: "count by key", Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("g", "group-by-key"),
			n("c", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "sum by region", Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("g", "group-by", "key", "value.region"),
			n("r", "reduce", "reducer", "{amount: aggregate.amount + value.amount, region: value.region}", "caching", "off"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		{Name: "stream-table join", Design: graph([]designer.Node{
			n("orders", "source-stream", "topic", "orders"),
			n("customers", "source-table", "topic", "customers"),
			n("j", "stream-table-join", "type", "left"),
			n("sink", "sink", "topic", "out"),
		}, "orders>j.stream", "customers>j.table", "j>sink")},
	}
	for i := range cases {
		reads := sourceTopics(cases[i].Design)
		for _, r := range in {
			if slices.Contains(reads, r.Topic) {
				cases[i].Input = append(cases[i].Input, r)
			}
		}
		cases[i].Partitions = 3
	}
	runBoth(t, cases)
}

// TestDifferentialPartitionedWindows pins what docs/differences.md, "One
// partition in TopologyTestDriver", says: with two partitions, k1 and k3
// lie in different ones, so in Braid k3's record at 15 s advances only its
// partition's stream time, and k1's record at 2 s still counts in k1's
// window [0 s, 10 s); in TopologyTestDriver's one partition it is late and
// dropped. Kafka Streams running on two partitions keeps a stream time
// per task as Braid does.
func TestDifferentialPartitionedWindows(t *testing.T) {
	cp := peerClasspath(t)
	c := Case{Name: "windowed count, two partitions", Partitions: 2, Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("g", "group-by-key"),
		n("w", "windowed-by", "type", "tumbling", "size", "10s"),
		n("c", "count", "caching", "off"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k1", `{}`, 1000),
			rec("in", "k3", `{}`, 15000),
			rec("in", "k1", `{}`, 2000), // late in TopologyTestDriver only
		}}
	peer, braid := bothSides(t, cp, c)
	count := func(c byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, c} }
	k1 := append([]byte("k1"), 0, 0, 0, 0, 0, 0, 0, 0)
	k3 := append([]byte("k3"), 0, 0, 0, 0, 0, 0, 0x27, 0x10)
	wantPeer := []Output{{Topic: "out", Key: k1, Value: count(1), Timestamp: 1000}, {Topic: "out", Key: k3, Value: count(1), Timestamp: 15000}}
	if d := Diff(peer[0], wantPeer); d != "" {
		t.Errorf("Kafka Streams:\n%s", d)
	}
	if d := Diff(braid, append(wantPeer, Output{Topic: "out", Key: k1, Value: count(2), Timestamp: 2000})); d != "" {
		t.Errorf("Braid:\n%s", d)
	}
}
