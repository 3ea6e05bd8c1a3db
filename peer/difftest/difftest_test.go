package difftest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/designer/designgen"
)

// peerClasspath builds the peer (scripts/peer.sh, a no-op once built) and
// returns its classpath. It skips the test, saying why, in -short mode and
// when java or mvn are missing (make test installs them).
func peerClasspath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("differential tests run Kafka Streams in a JVM: not in -short mode")
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("differential tests need %s (scripts/install-deps.sh installs it)", tool)
		}
	}
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "peer.sh"), "classpath").Output()
	if err != nil {
		t.Fatalf("scripts/peer.sh classpath: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// runBoth runs every case on both sides and fails each whose outputs
// differ.
func runBoth(t *testing.T, cases []Case) {
	t.Helper()
	cp := peerClasspath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peer, err := RunPeer(ctx, cp, t.TempDir(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		braid, err := RunBraid(c)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		t.Logf("%s: %d records on each side", c.Name, len(braid))
		p := peer[i]
		if c.Partitions > 1 {
			braid, p = ByKey(braid), ByKey(p)
		}
		if d := Diff(braid, p); d != "" {
			t.Errorf("%s: outputs differ:\n%s", c.Name, d)
		}
	}
}

// TestDifferentialDesigns runs hand-written designs, one per supported
// shape, on both sides.
func TestDifferentialDesigns(t *testing.T) {
	orders := []Input{
		rec("orders", "o1", `{"customer":"alice","amount":60,"region":"eu"}`, 1000),
		rec("orders", "o2", `{"customer":"bob","amount":10,"region":"us"}`, 1500),
		rec("orders", "o3", `{"customer":"alice","amount":70.5,"region":"us"}`, 12000),
		rec("orders", "o4", `{"customer":"bob","amount":90,"region":"eu"}`, 3000),
		rec("orders", "o5", `{"customer":"carol","amount":55,"region":"eu"}`, 26000),
		rec("orders", "o6", `{"customer":"alice","amount":65,"region":"eu"}`, 2000),
		rec("orders", "o7", `{"customer":"bob","amount":75,"region":"us"}`, 14000),
		rec("orders", "o8", `{"customer":"carol","amount":80,"region":"us"}`, 40000),
	}
	cases := []Case{
		{Name: "pipe", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("sink", "sink", "topic", "out"))},
		{Name: "filter+map", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("big", "filter", "predicate", `value.amount >= 50 && value.region == "eu"`),
			n("m", "map", "key", `value.customer + "-" + value.region`, "value", `{id: key, double: value.amount * 2, less: value.amount - 1}`),
			n("sink", "sink", "topic", "out"))},
		{Name: "filter-not+select-key+map-values", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("small", "filter-not", "predicate", `value.amount < 50 || !(value.region != "us")`),
			n("k", "select-key", "key", "value.customer"),
			n("v", "map-values", "value", "value.amount + 0.25"),
			n("sink", "sink", "topic", "out"))},
		{Name: "count by key", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("group", "group-by", "key", "value.customer"),
			n("count", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "counts"))},
		{Name: "reduce by key", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("k", "select-key", "key", "value.region"),
			n("v", "map-values", "value", "value.amount"),
			n("group", "group-by-key"),
			n("sum", "reduce", "reducer", "aggregate + value"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "sums"))},
		{Name: "windowed count, grace, emit on update", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("group", "group-by", "key", "value.customer"),
			n("w", "windowed-by", "type", "tumbling", "size", "10s", "grace", "5s"),
			n("count", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "counts"))},
		{Name: "windowed count, grace, emit final", Input: orders, Design: chain(
			n("src", "source-stream", "topic", "orders"),
			n("group", "group-by", "key", "value.customer"),
			n("w", "windowed-by", "type", "tumbling", "size", "10s", "grace", "5s", "emit", "on-window-close"),
			n("count", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "counts"))},
		{Name: "hopping aggregate, timestamp from the value", Input: withTS(orders), Design: chain(
			n("src", "source-stream", "topic", "orders", "timestamp", "value.ts"),
			n("group", "group-by", "key", "value.region"),
			n("w", "windowed-by", "type", "hopping", "size", "10s", "advance", "5s", "grace", "3s"),
			n("agg", "aggregate", "initializer", "{n: 0, total: 0}", "aggregator", `{n: aggregate.n + 1, total: aggregate.total + value.amount, last: key + ":" + value.customer}`),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "totals", "keySerde", "windowed-json"))},
	}
	tombstones := []Input{
		rec("in", "k1", `{"customer":"a","amount":5}`, 1000),
		rec("in", "k1", "", 2000),
		rec("in", "k2", `{"customer":"b","amount":7}`, 3000),
		rec("in", "k1", "", 4000),
		rec("in", "k1", `{"customer":"a","amount":9}`, 5000),
	}
	cases = append(cases,
		Case{Name: "tombstones piped", Input: tombstones, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("sink", "sink", "topic", "out"))},
		Case{Name: "tombstones counted", Input: tombstones, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("g", "group-by-key"),
			n("c", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		Case{Name: "tombstones counted in windows", Input: tombstones, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("g", "group-by-key"),
			n("w", "windowed-by", "type", "tumbling", "size", "10s"),
			n("c", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
		Case{Name: "tombstones reduced", Input: tombstones, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("g", "group-by-key"),
			n("r", "reduce", "reducer", "{customer: value.customer, amount: aggregate.amount + value.amount}"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
	)
	for _, path := range []string{"../../cmd/braid/orders-demo.json", "../../designer/testdata/orders-windowed.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := designer.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		cases = append(cases, Case{Name: path, Design: d, Input: withTS(orders)})
	}
	runBoth(t, cases)
}

// withTS gives each record's value a field ts, its timestamp shifted so
// that the order of event times differs from that of record times.
func withTS(in []Input) []Input {
	var out []Input
	for i, r := range in {
		v := strings.TrimSuffix(*r.Value, "}") + fmt.Sprintf(`,"ts":%d}`, r.Timestamp+int64(i%3)*4000)
		r.Value = &v
		r.Timestamp = int64(i)
		out = append(out, r)
	}
	return out
}

// Diff tells equal outputs from different ones: JSON alike whatever its
// spelling, and a different key, value, timestamp, topic or count apart.
func TestDiff(t *testing.T) {
	a := []Output{{Topic: "t", Key: []byte("k"), Value: []byte(`{"a":1,"b":2.5}`), Timestamp: 1}}
	if d := Diff(a, []Output{{Topic: "t", Key: []byte("k"), Value: []byte(`{"b":2.5, "a":1.0}`), Timestamp: 1}}); d != "" {
		t.Errorf("the same JSON differs:\n%s", d)
	}
	for name, b := range map[string][]Output{
		"value":     {{Topic: "t", Key: []byte("k"), Value: []byte(`{"a":2,"b":2.5}`), Timestamp: 1}},
		"key":       {{Topic: "t", Key: []byte("j"), Value: a[0].Value, Timestamp: 1}},
		"null key":  {{Topic: "t", Value: a[0].Value, Timestamp: 1}},
		"timestamp": {{Topic: "t", Key: []byte("k"), Value: a[0].Value, Timestamp: 2}},
		"topic":     {{Topic: "u", Key: []byte("k"), Value: a[0].Value, Timestamp: 1}},
		"count":     append(append([]Output{}, a...), a...),
	} {
		if d := Diff(a, b); !strings.Contains(d, "first difference at record") {
			t.Errorf("%s: no difference found in %v", name, b)
		}
	}
}

var (
	seeds = flag.Int("seeds", 200, "TestDifferentialSeeds: how many seeds of Generate to run (1..seeds)")
	outer = flag.Bool("unmatched-joins", false, "TestDifferentialSeeds: generate left and outer stream-stream joins too (they differ: docs/differences.md)")
	pwin  = flag.Bool("partitioned-windows", false, "TestDifferentialSeeds: give designs with windows or stream-stream joins several partitions too (they differ: docs/testing.md)")
)

// TestDifferentialSeeds runs designs from Generate, seeds 1 to -seeds, on
// both sides.
func TestDifferentialSeeds(t *testing.T) {
	var cases []Case
	for seed := range uint64(*seeds) {
		cases = append(cases, designgen.Generate(seed+1, designgen.Options{UnmatchedStreamJoins: *outer, PartitionedWindows: *pwin}))
	}
	runBoth(t, cases)
}

// Designs and expressions outside DesignRunner's subset are refused with a
// message naming the node (and the expression).
func TestPeerRefuses(t *testing.T) {
	cp := peerClasspath(t)
	for want, d := range map[string]*designer.Design{
		"node r (repartition): kind not supported by the peer": chain(
			n("src", "source-stream", "topic", "in"),
			n("r", "repartition", "partitions", "2"),
			n("sink", "sink", "topic", "out")),
		`node f (filter), parameter predicate: expression "value.amount / 2 > 1"`: chain(
			n("src", "source-stream", "topic", "in"),
			n("f", "filter", "predicate", "value.amount / 2 > 1"),
			n("sink", "sink", "topic", "out")),
		`node m (map-values), parameter value: expression "upper(value.name)"`: chain(
			n("src", "source-stream", "topic", "in"),
			n("m", "map-values", "value", "upper(value.name)"),
			n("sink", "sink", "topic", "out")),
		"node j (table-join): a joiner that reads key is not supported by the peer": graph([]designer.Node{
			n("l", "source-table", "topic", "l"),
			n("r", "source-table", "topic", "r"),
			n("j", "table-join", "type", "inner", "joiner", "{k: key, l: left}"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"),
		}, "l>j.left", "r>j.right", "j>ts", "ts>sink"),
		"node c (aggregate): session windows need a merger": chain(
			n("src", "source-stream", "topic", "in"),
			n("g", "group-by-key"),
			n("w", "windowed-by", "type", "session", "gap", "5s"),
			n("c", "aggregate", "initializer", "0", "aggregator", "aggregate + 1", "merger", "agg1 + agg2"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out")),
	} {
		_, err := RunPeer(context.Background(), cp, t.TempDir(), []Case{{Name: want, Design: d}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error saying %q", err, want)
		}
	}
}

// TestDifferentialStreamTimePerTask pins the difference named in
// docs/differences.md, "Stream time per task": a record a filter drops
// still advances Braid's stream time (the task's), so a later record of an
// earlier window is late in Braid and on time in Kafka Streams, whose
// window aggregation keeps its own stream time of the records reaching it.
func TestDifferentialStreamTimePerTask(t *testing.T) {
	cp := peerClasspath(t)
	c := Case{Name: "filtered record closes a window", Design: chain(
		n("src", "source-stream", "topic", "in"),
		n("eu", "filter", "predicate", `value.region == "eu"`),
		n("group", "group-by-key"),
		n("w", "windowed-by", "type", "tumbling", "size", "10s", "grace", "0s"),
		n("count", "count"),
		n("ts", "to-stream"),
		n("sink", "sink", "topic", "out")),
		Input: []Input{
			rec("in", "k1", `{"region":"eu"}`, 1000),
			rec("in", "k2", `{"region":"us"}`, 15000), // filtered out
			rec("in", "k1", `{"region":"eu"}`, 2000),  // late in Braid only
		}}
	peer, braid := bothSides(t, cp, c)
	// k1's window at 0, count 1 and then 2 in Kafka Streams.
	key := append([]byte("k1"), 0, 0, 0, 0, 0, 0, 0, 0)
	count := func(c byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, c} }
	wantPeer := []Output{{Topic: "out", Key: key, Value: count(1), Timestamp: 1000}, {Topic: "out", Key: key, Value: count(2), Timestamp: 2000}}
	if d := Diff(peer[0], wantPeer); d != "" {
		t.Errorf("Kafka Streams:\n%s", d)
	}
	if d := Diff(braid, wantPeer[:1]); d != "" {
		t.Errorf("Braid:\n%s", d)
	}
}

// bothSides runs c in the peer (its classpath cp) and in Braid, failing t
// if either cannot.
func bothSides(t *testing.T, cp string, c Case) (peer [][]Output, braid []Output) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peer, err := RunPeer(ctx, cp, t.TempDir(), []Case{c})
	if err != nil {
		t.Fatal(err)
	}
	if braid, err = RunBraid(c); err != nil {
		t.Fatal(err)
	}
	return peer, braid
}
