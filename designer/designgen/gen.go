package designgen

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/braidstream/braid/designer"
)

// Generate returns a random design within DesignRunner's subset and
// records for it, the same for the same seed. Designs read topic "in"
// (string keys, JSON values {customer, region, amount, qty}, and ts when
// the source takes its timestamps from the value), pass it
// through up to three stateless operators that keep that shape (filter,
// filter-not, map, map-values, select-key; no filter before a window), sometimes write that stream to
// topic "mid", and then either write it to "out" or aggregate it (count,
// reduce or aggregate, by key or by a field, in tumbling, hopping, sliding
// or session windows with grace and emit on update or final, or not
// windowed) and
// write the table's
// updates to "out". Records come out of order, some past the grace
// period, over a few keys; in designs where no expression reads a value
// before the aggregation, some are tombstones.
//
// Two seeds in three of designs without windows or stream-stream joins
// have two or three partitions per source topic in Braid.
//
// One seed in ten makes a table design instead, one a stream-table join,
// one a table-table join, one a stream-stream join, one a flat-map
// (gen_tables.go, gen_joins.go, gen_flatmap.go).
//
// It avoids the shapes of session and sliding windows where Braid
// differs on purpose (docs/differences.md): see aggregation.
func Generate(seed uint64, opts Options) Case {
	c := generate(seed, opts)
	// Source topics of one, two or three partitions in Braid: only where
	// no stream time decides what comes out (no windows, no stream-stream
	// joins), since each of Braid's tasks keeps its own and
	// TopologyTestDriver's one task one for all keys.
	parts := 1 + rand.New(rand.NewPCG(seed, 0x7061727473)).IntN(3)
	for _, n := range c.Design.Nodes {
		if n.Kind == designer.KindWindowedBy || n.Kind == designer.KindStreamJoin {
			if !opts.PartitionedWindows {
				parts = 1
			}
		}
	}
	if parts > 1 {
		c.Partitions = parts
		c.Name += fmt.Sprintf(" (%d partitions)", parts)
	}
	return c
}

func generate(seed uint64, opts Options) Case {
	r := rand.New(rand.NewPCG(seed, 0x62726169640a))
	g := &gen{r: r, opts: opts}
	// The shape comes from a generator of its own, so that a seed that
	// makes a stream design makes the same one whatever shapes are added.
	switch shape := rand.New(rand.NewPCG(seed, 0x7368617065)).IntN(10); shape {
	case 0:
		g.table()
		return Case{Name: fmt.Sprintf("seed %d (table)", seed), Design: g.d, Input: g.records()}
	case 1:
		g.streamTableJoin()
		return Case{Name: fmt.Sprintf("seed %d (stream-table join)", seed), Design: g.d, Input: g.records()}
	case 2:
		g.tableJoin()
		return Case{Name: fmt.Sprintf("seed %d (table join)", seed), Design: g.d, Input: g.records()}
	case 3:
		g.streamJoin()
		return Case{Name: fmt.Sprintf("seed %d (stream join)", seed), Design: g.d, Input: g.records()}
	case 4:
		g.flatMap()
		return Case{Name: fmt.Sprintf("seed %d (flat-map)", seed), Design: g.d, Input: g.records()}
	}
	// Tombstones only where no expression reads a value: a field of nil
	// is an error on both sides.
	g.tombstones = r.IntN(5) == 0
	g.eventTime = !g.tombstones && r.IntN(3) == 0
	if g.eventTime {
		g.add(Node("src", designer.KindSourceStream, "topic", "in", "timestamp", "value.ts"))
	} else {
		g.add(Node("src", designer.KindSourceStream, "topic", "in"))
	}
	agg, windowed := r.IntN(4) > 0, r.IntN(3) > 0
	for range r.IntN(4) * b2i(!g.tombstones) {
		// Before a window no filter: Braid's stream time is the task's, so
		// records filtered out still close windows, unlike in Kafka
		// Streams (docs/differences.md, "Stream time per task";
		// TestDifferentialStreamTimePerTask pins it).
		g.add(g.stateless(!(agg && windowed)))
	}
	if !g.tombstones && !(agg && windowed) && r.IntN(4) == 0 {
		g.branch()
	}
	if !g.tombstones && r.IntN(4) == 0 {
		g.merge(!(agg && windowed))
		// Merged, one input record reaches an aggregation twice. Kafka
		// Streams' TopologyTestDriver commits after each record it reads,
		// those of repartition topics too, Braid's TestDriver at Commit
		// only, after all of them: with caching, Braid would send the
		// second update alone. Without, both send both.
		g.noCache = true
	}
	if r.IntN(3) == 0 {
		g.sink("mid")
	}
	if agg {
		g.aggregation(windowed)
	}
	g.sink("out")
	return Case{Name: fmt.Sprintf("seed %d", seed), Design: g.d, Input: g.records()}
}

// Options widen what Generate makes.
type Options struct {
	// UnmatchedStreamJoins adds left and outer stream-stream joins.
	UnmatchedStreamJoins bool
	// PartitionedWindows gives designs with windows or stream-stream
	// joins several partitions too.
	PartitionedWindows bool
}

type gen struct {
	opts Options
	r    *rand.Rand
	d    *designer.Design
	last string // the node the next one reads
	ids  int
	// eventTime: the source takes timestamps from the value's ts field.
	eventTime bool
	// noCache: the aggregation's store has caching off.
	noCache bool
	// tombstones: some records have a null value.
	tombstones bool
	// sessionFinal: a session window emits on close; records stay
	// below a minute (see records).
	sessionFinal bool
	// topics are the topics records go to, at random; nil means "in".
	// nullable are those of them (but "in") whose records may be
	// tombstones.
	topics   []string
	nullable map[string]bool
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *gen) add(node designer.Node) {
	if g.d == nil {
		g.d = &designer.Design{ID: "gen", Name: "gen", Version: designer.FormatVersion}
	}
	g.ids++
	node.ID = fmt.Sprintf("%s%d", node.ID, g.ids)
	node.Position = designer.Position{X: float64(200 * g.ids)}
	if g.last != "" {
		g.d.Edges = append(g.d.Edges, designer.Edge{From: g.last, FromPort: "out", To: node.ID, ToPort: "in"})
	}
	g.d.Nodes = append(g.d.Nodes, node)
	g.last = node.ID
}

// sink writes the current stream to topic; the next node reads the same
// stream.
func (g *gen) sink(topic string) {
	last := g.last
	g.add(Node("sink", designer.KindSink, "topic", topic))
	g.last = last
}

// branch splits the current stream in two branches, the second the
// default or with a predicate of its own; the second goes to topic
// "side", the next node reads the first.
func (g *gen) branch() {
	second := map[string]any{"name": "second"}
	if g.r.IntN(2) == 0 {
		second["predicate"] = g.predicate()
	}
	node := Node("branch", designer.KindBranch)
	node.Params = map[string]any{"branches": []any{map[string]any{"name": "first", "predicate": g.predicate()}, second}}
	g.add(node)
	b := g.last
	g.add(Node("sink", designer.KindSink, "topic", "side"))
	g.d.Edges[len(g.d.Edges)-1].FromPort = "second"
	g.last = ""
	g.add(Node("peek", designer.KindPeek))
	g.d.Edges = append(g.d.Edges, designer.Edge{From: b, FromPort: "first", To: g.last, ToPort: "in"})
}

// merge sends the current stream through two stateless operators and
// merges them again: one record reaches the merge twice, one path after
// the other.
func (g *gen) merge(filters bool) {
	from := g.last
	g.add(g.stateless(filters))
	left := g.last
	g.last = from
	g.add(g.stateless(filters))
	right := g.last
	g.last = ""
	g.add(Node("merge", designer.KindMerge))
	g.d.Edges = append(g.d.Edges,
		designer.Edge{From: left, FromPort: "out", To: g.last, ToPort: "in"},
		designer.Edge{From: right, FromPort: "out", To: g.last, ToPort: "in"})
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) predicate() string {
	return g.pick(
		fmt.Sprintf("value.amount >= %d", g.r.IntN(100)),
		`value.region == "eu"`,
		fmt.Sprintf("value.qty < %d && value.amount > %d", 1+g.r.IntN(5), g.r.IntN(60)),
		`key != "k1"`,
		`value.customer + value.region == "aeu" || value.qty * 2 > 7`,
		`!(value.amount - value.qty < 20)`,
	)
}

// shape is a value expression that keeps the record's fields.
func (g *gen) shape() string {
	return g.pick(
		"{customer: value.customer, region: value.region, amount: value.amount * 2, qty: value.qty}",
		"{customer: value.customer, region: value.region, amount: value.amount - value.qty, qty: value.qty + 1}",
		`{customer: value.customer + "x", region: value.region, amount: value.amount + 0.5, qty: 3}`,
	)
}

func (g *gen) keyExpr() string {
	return g.pick("value.customer", "value.region", `value.customer + "-" + value.region`, `key + "."`)
}

func (g *gen) stateless(filters bool) designer.Node {
	k := g.r.IntN(5)
	if !filters {
		k = 2 + g.r.IntN(3)
	}
	switch k {
	case 0:
		return Node("filter", designer.KindFilter, "predicate", g.predicate())
	case 1:
		return Node("filterNot", designer.KindFilterNot, "predicate", g.predicate())
	case 2:
		return Node("map", designer.KindMap, "key", g.keyExpr(), "value", g.shape())
	case 3:
		return Node("mapValues", designer.KindMapValues, "value", g.shape())
	default:
		return Node("selectKey", designer.KindSelectKey, "key", g.keyExpr())
	}
}

func (g *gen) aggregation(windowed bool) {
	session := false
	if g.tombstones || g.r.IntN(2) == 0 {
		g.add(Node("group", designer.KindGroupByKey))
	} else {
		g.add(Node("group", designer.KindGroupBy, "key", g.keyExpr()))
	}
	if windowed {
		grace, emit := g.pick("0s", "2s", "5s"), g.pick("on-window-update", "on-window-close")
		kind := g.r.IntN(5) // 0: hopping, 1, 2: tumbling, 3: sliding, 4: session
		if kind == 3 && g.tombstones {
			// Sliding windows skip nulls, which still advance Braid's
			// stream time (docs/differences.md, "Stream time per task";
			// TestDifferentialSlidingSkipsNulls).
			kind = 1
		}
		switch kind {
		case 0:
			size, advance, _ := strings.Cut(g.pick("10s/5s", "6s/2s", "9s/3s"), "/")
			g.add(Node("window", designer.KindWindowedBy, "type", "hopping", "size", size, "advance", advance, "grace", grace, "emit", emit))
		case 3:
			if grace == "0s" && emit == "on-window-close" {
				// The peer's suppress emits a window ending at the stream
				// time at once, and again on each update (docs/differences.md,
				// "Sliding windows close after their end";
				// TestDifferentialSlidingFinalAtGrace).
				grace = "2s"
			}
			g.add(Node("window", designer.KindWindowedBy, "type", "sliding", "size", g.pick("3s", "5s"), "grace", grace, "emit", emit))
		case 4:
			g.add(Node("window", designer.KindWindowedBy, "type", "session", "gap", g.pick("2s", "4s"), "grace", grace, "emit", emit))
			session = true
			g.sessionFinal = emit == "on-window-close"
			// Kafka Streams' record cache holds sessions past the store's
			// retention, which it merges (docs/differences.md, "Sessions
			// merge by the store's retention";
			// TestDifferentialSessionInRecordCache). Its emit on close
			// has no cache.
			g.noCache = g.noCache || emit == "on-window-update"
		default:
			g.add(Node("window", designer.KindWindowedBy, "type", "tumbling", "size", g.pick("5s", "10s"), "grace", grace, "emit", emit))
		}
	}
	k := g.r.IntN(3)
	if g.tombstones {
		k = 0 // windowed aggregations pass nulls to reducers and aggregators
	}
	if session && k == 1 {
		k = 2 // an aggregate of sessions needs a merger, which the peer lacks
	}
	switch k {
	case 0:
		g.add(Node("count", designer.KindCount))
	case 1:
		g.add(Node("aggregate", designer.KindAggregate, "initializer", g.pick("{n: 0, total: 0}", `{n: 1, total: 0.5, who: ""}`),
			"aggregator", g.pick(
				"{n: aggregate.n + 1, total: aggregate.total + value.amount}",
				`{n: aggregate.n * 2, total: aggregate.total - value.qty, who: key + value.customer}`,
			)))
	default:
		g.add(Node("reduce", designer.KindReduce, "reducer", g.pick(
			"{customer: value.customer, region: aggregate.region, amount: aggregate.amount + value.amount, qty: aggregate.qty + 1}",
			"{customer: aggregate.customer + value.customer, region: value.region, amount: value.amount, qty: value.qty * aggregate.qty}",
		)))
	}
	caching := g.pick("on", "off")
	if g.noCache {
		caching = "off"
	}
	agg := &g.d.Nodes[len(g.d.Nodes)-1]
	if agg.Params == nil {
		agg.Params = map[string]any{}
	}
	agg.Params["caching"] = caching
	g.add(Node("toStream", designer.KindToStream))
}

// records makes 10 to 40 records over keys k1..k4: stream time moves on
// by up to 3 s a record, and a record's timestamp lies up to 12 s behind
// it (out of order, some past any grace) or a little ahead.
func (g *gen) records() []Input {
	var out []Input
	now := int64(g.r.IntN(5000))
	for range 10 + g.r.IntN(31) {
		now += int64(g.r.IntN(3000))
		if g.sessionFinal && now+500 > 60_000 {
			// Kafka Streams' session store drops its first segment
			// (a minute) before emitting the sessions ending just
			// before it (docs/differences.md, "Windows closed by a
			// jump"; TestDifferentialSessionLostWithSegment).
			break
		}
		ts := max(0, now-int64(g.r.IntN(12000)))
		if g.r.IntN(2) == 0 {
			ts = now + int64(g.r.IntN(500))
		}
		amount := fmt.Sprint(g.r.IntN(100))
		if g.r.IntN(4) == 0 {
			amount += ".5"
		}
		v := fmt.Sprintf(`{"customer":%q,"region":%q,"amount":%s,"qty":%d`,
			g.pick("a", "b", "c"), g.pick("eu", "us"), amount, 1+g.r.IntN(5))
		if g.eventTime {
			// the event time in the value, the record's own shuffled
			v += fmt.Sprintf(`,"ts":%d`, ts)
			ts = int64(g.r.IntN(100000))
		}
		v += "}"
		topic := "in"
		if len(g.topics) > 0 {
			topic = g.pick(g.topics...)
		}
		if (topic == "in" && g.tombstones || g.nullable[topic]) && g.r.IntN(4) == 0 {
			v = ""
		}
		out = append(out, Record(topic, fmt.Sprintf("k%d", 1+g.r.IntN(4)), v, ts))
	}
	return out
}
