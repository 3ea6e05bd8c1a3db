package compiler

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// Stand-ins for the functions of the hand-built topologies: Describe does
// not show them.
var (
	pred   = func(_, _ any) (bool, error) { return true, nil }
	keyFn  = func(k, _ any) (any, error) { return k, nil }
	joinFn = func(_, l, _ any) (any, error) { return l, nil }
	kvFn   = func(k, v any) (any, any, error) { return k, v, nil }
	valFn  = func(v any) (any, error) { return v, nil }
	fmFn   = func(_, _ any) ([]streams.KeyValue, error) { return nil, nil }
	fmvFn  = func(_ any) ([]any, error) { return nil, nil }
	tsFn   = func(_, _ any, ts int64) (int64, error) { return ts, nil }
	init0  = func() (any, error) { return 0, nil }
	aggFn  = func(_, _, a any) (any, error) { return a, nil }
	redFn  = func(a, _ any) (any, error) { return a, nil }
	mrgFn  = func(_, a, _ any) (any, error) { return a, nil }
	peek   = func(_, _ any) {}
)

// branchOf returns the stream of the branch whose full name ends in name.
func branchOf(t *testing.T, bs map[string]*streams.Stream, name string) *streams.Stream {
	for full, s := range bs {
		if strings.HasSuffix(full, name) {
			return s
		}
	}
	t.Fatalf("no branch %q in %v", name, bs)
	return nil
}

// handBuilt builds, with the runtime's DSL, the topology each design
// under testdata stands for, in the order the compiler makes its calls.
var handBuilt = map[string]func(t *testing.T, b *streams.Builder){
	"compile/stateless.json": func(t *testing.T, b *streams.Builder) {
		s := b.Stream([]string{"orders"}, streams.WithTimestamps(tsFn))
		big := s.Filter(pred, streams.Named("big"))
		nt := big.FilterNot(pred)
		rk := nt.SelectKey(keyFn)
		rp := rk.Repartition(streams.Named("by-customer"), streams.WithPartitions(4))
		pk := rp.Peek(peek)
		items := big.FlatMap(fmFn)
		qty := items.MapValues(valFn)
		pairs := qty.Map(kvFn)
		split := pairs.FlatMapValues(fmvFn, streams.Named("explode"))
		pk.To("big-orders-by-customer")
		split.To("items", streams.Named("items-sink"))
	},
	"compile/grouped.json": func(t *testing.T, b *streams.Builder) {
		v := b.Stream([]string{"page-views"})
		cs := v.GroupByKey().Count(streams.Materialized(streams.StoreOptions{Name: "views-per-page"})).ToStream()
		cs.To("view-counts")
		g := v.Map(kvFn).GroupByKey()
		longest := g.Reduce(redFn)
		pages := g.Aggregate(init0, aggFn, streams.Named("pages"), streams.Materialized(streams.StoreOptions{LoggingDisabled: true, CachingDisabled: true}))
		longest.ToStream().To("longest")
		pages.ToStream(streams.Named("pages-stream")).To("pages")
	},
	"compile/tables.json": func(t *testing.T, b *streams.Builder) {
		cust := b.Table("customers")
		cust.Filter(pred).MapValues(valFn).ToStream().To("customer-names")
		cust.GroupBy(kvFn).Count().ToStream().To("customers-per-country")
		acc := b.Table("accounts", streams.Named("accounts-table"), streams.Materialized(streams.StoreOptions{Name: "accounts", LoggingDisabled: true}))
		acc.GroupBy(kvFn, streams.Named("by-tier")).
			Aggregate(init0, aggFn, aggFn, streams.Materialized(streams.StoreOptions{Name: "balance-per-tier"})).
			ToStream().To("balance-per-tier")
	},
	"compile/windows.json": func(t *testing.T, b *streams.Builder) {
		r := b.Stream([]string{"readings"}, streams.WithTimestamps(tsFn))
		g := r.GroupByKey()
		sum := g.WindowedBy(streams.Hopping(time.Minute, 10*time.Second, 5*time.Second)).
			Reduce(redFn, streams.Materialized(streams.StoreOptions{Retention: 2 * time.Hour}))
		mx := g.WindowedBy(streams.Sliding(30*time.Second, 0)).Emit(streams.EmitOnWindowClose).
			Aggregate(init0, aggFn, streams.Materialized(streams.StoreOptions{Name: "max-30s"}))
		so := sum.ToStream()
		so.To("sum-1m")
		mo := mx.ToStream()
		mo.To("max-30s")
		r.SelectKey(keyFn).GroupByKey(streams.Named("by-level")).WindowedBy(streams.Sessions(5*time.Minute, 0)).
			Count().ToStream().To("level-sessions")
	},
	"compile/merge.json": func(t *testing.T, b *streams.Builder) {
		a := b.Stream([]string{"a"})
		bb := b.Stream([]string{"b"})
		c := b.Stream([]string{"c"})
		a.Merge(bb).Merge(c, streams.Named("all")).To("all")
		a.Filter(pred).To("a-big")
	},
	"compile/joins.json": func(t *testing.T, b *streams.Builder) {
		json := streams.WithSerdes(streams.String, streams.JSON)
		clicks := b.Stream([]string{"clicks"})
		views := b.Stream([]string{"views"})
		users := b.Table("users")
		profiles := b.Table("profiles", streams.Materialized(streams.StoreOptions{Name: "profiles"}))
		both := clicks.SelectKey(keyFn).OuterJoin(views, joinFn, streams.JoinWindows{Before: time.Minute, After: 30 * time.Second, Grace: 10 * time.Second}, streams.Named("both"), json)
		both.To("clicks-and-views")
		views.SelectKey(keyFn).JoinTable(users, joinFn, json).To("views-with-users")
		users.LeftJoin(profiles, joinFn, streams.Named("user-profiles"), json).ToStream().To("user-profiles")
	},
	"compile/derived-tables.json": func(t *testing.T, b *streams.Builder) {
		json := streams.WithSerdes(streams.String, streams.JSON)
		customers := b.Table("customers")
		orders := b.Stream([]string{"orders"})
		accounts := b.Table("accounts", streams.Materialized(streams.StoreOptions{Name: "accounts"}))
		active := customers.Filter(pred, streams.Materialized(streams.StoreOptions{Name: "active-customers"}))
		tiers := accounts.MapValues(valFn, streams.Named("tiers"), streams.Materialized(streams.StoreOptions{Name: "account-tiers"}))
		orders.JoinTable(active, joinFn, json).To("active-orders")
		active.LeftJoin(tiers, joinFn, json).ToStream().To("active-customer-tiers")
	},
	"orders-joined.json": func(t *testing.T, b *streams.Builder) {
		json := streams.WithSerdes(streams.String, streams.JSON)
		orders := b.Stream([]string{"orders"})
		payments := b.Stream([]string{"payments"})
		customers := b.Table("customers", streams.Materialized(streams.StoreOptions{Name: "customers"}))
		accounts := b.Table("accounts")
		paid := orders.Join(payments, joinFn, streams.JoinTimeDifference(10*time.Minute, time.Minute), json)
		paid.LeftJoinTable(customers, joinFn, json).To("paid-orders")
		customers.OuterJoin(accounts, joinFn, json, streams.Materialized(streams.StoreOptions{Name: "customer-accounts"})).
			ToStream().To("customer-accounts")
	},
	"orders-windowed.json": func(t *testing.T, b *streams.Builder) {
		b.Stream([]string{"orders"}, streams.WithTimestamps(tsFn)).
			Filter(pred).
			GroupBy(keyFn).
			WindowedBy(streams.Tumbling(10*time.Second, 5*time.Second)).Emit(streams.EmitOnWindowClose).
			Count(streams.Materialized(streams.StoreOptions{Name: "big-orders-per-10s"})).
			ToStream().
			To("big-orders-per-10s", streams.WithSerdes(streams.WindowedJSON(streams.String), streams.Int64))
	},
	"click-sessions.json": func(t *testing.T, b *streams.Builder) {
		b.Stream([]string{"clicks"}, streams.WithTimestamps(tsFn)).
			SelectKey(keyFn).
			GroupByKey(streams.Named("by-user")).
			WindowedBy(streams.Sessions(30*time.Minute, time.Minute)).Emit(streams.EmitOnWindowClose).
			MergeSessionsWith(mrgFn).
			Aggregate(init0, aggFn, streams.Materialized(streams.StoreOptions{Name: "sessions", Retention: 2 * time.Hour})).
			ToStream().
			To("click-sessions")
	},
	"credit-per-country.json": func(t *testing.T, b *streams.Builder) {
		b.Table("customers", streams.Materialized(streams.StoreOptions{Name: "customers"})).
			GroupBy(kvFn, streams.Named("by-country")).
			Reduce(redFn, redFn, streams.Materialized(streams.StoreOptions{Name: "credit-per-country"})).
			ToStream().
			To("credit-per-country")
	},
	"payments-branches.json": func(t *testing.T, b *streams.Builder) {
		bs := b.Stream([]string{"payments"}).Branch([]streams.Branch{{Name: "big", Predicate: pred}, {Name: "small", Predicate: pred}, {Name: "rest"}})
		flag := branchOf(t, bs, "big").MapValues(valFn)
		m := branchOf(t, bs, "rest").Merge(flag)
		branchOf(t, bs, "small").To("small-payments")
		m.To("checked-payments")
	},
}

func readDesign(t *testing.T, path string) *designer.Design {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

// describedNames returns the names of the sources, processors and sinks
// a Describe text lists.
func describedNames(desc string) []string {
	var names []string
	re := regexp.MustCompile(`(?m)^    (?:Source|Processor|Sink): (.*) \((?:topics|stores|topic): `)
	for _, m := range re.FindAllStringSubmatch(desc, -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

func TestCompileMatchesHandBuilt(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/compile/*.json", "../designer/testdata/*.json"} {
		fs, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if len(files) < len(handBuilt) {
		t.Fatalf("found %d designs, want at least %d", len(files), len(handBuilt))
	}
	for _, path := range files {
		key := strings.TrimPrefix(strings.TrimPrefix(path, "testdata/"), "../designer/testdata/")
		t.Run(key, func(t *testing.T) {
			hand, ok := handBuilt[key]
			if !ok {
				t.Skipf("no hand-built topology for %s", path)
			}
			d := readDesign(t, path)
			got, err := Compile(d, Options{})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			b := streams.NewBuilder()
			hand(t, b)
			want, err := b.Build()
			if err != nil {
				t.Fatalf("hand-built: %v", err)
			}
			if g, w := got.Topology.Describe(), want.Describe(); g != w {
				t.Errorf("Describe differs.\ncompiled:\n%s\nhand-built:\n%s", g, w)
			}
			checkNames(t, d, got)
		})
	}
}

// checkNames checks the node-to-operator maps against Describe: every
// operator belongs to exactly one node, each node's main operator and
// output operators are among the operators, and every store belongs to a
// node.
func checkNames(t *testing.T, d *designer.Design, c *Compiled) {
	t.Helper()
	desc := c.Topology.Describe()
	for _, m := range regexp.MustCompile(`\(stores: \[([^\]]+)\]\)`).FindAllStringSubmatch(desc, -1) {
		for _, store := range strings.Split(m[1], ", ") {
			if _, ok := c.StoreNodes[store]; !ok {
				t.Errorf("store %q belongs to no node (StoreNodes %v)", store, c.StoreNodes)
			}
		}
	}
	described := describedNames(desc)
	var parts []string
	owner := map[string]string{}
	for id, ps := range c.Parts {
		for _, p := range ps {
			if other, dup := owner[p]; dup {
				t.Errorf("operator %q belongs to nodes %q and %q", p, other, id)
			}
			owner[p] = id
			parts = append(parts, p)
		}
	}
	sort.Strings(parts)
	if !slices.Equal(parts, described) {
		t.Errorf("the nodes' operators are\n%q\nDescribe lists\n%q", parts, described)
	}
	for _, n := range d.Nodes {
		op, hasOp := c.Operators[n.ID]
		switch n.Kind {
		case "group-by-key", "windowed-by":
			if hasOp {
				t.Errorf("node %q (%s) has operator %q", n.ID, n.Kind, op)
			}
		default:
			if !hasOp || owner[op] != n.ID {
				t.Errorf("node %q: operator %q is not one of its parts %q", n.ID, op, c.Parts[n.ID])
			}
		}
		for _, p := range designer.OutputPorts(n) {
			if n.Kind == "windowed-by" {
				continue
			}
			if name := c.Outputs[n.ID][p.Name]; !slices.Contains(described, name) {
				t.Errorf("node %q port %q: output operator %q is not in Describe", n.ID, p.Name, name)
			}
		}
		if n.Kind == "sink" {
			continue
		}
		if op, ok := c.Operators[n.ID]; ok && designer.OutputPorts(n)[0].Name == "out" && c.Outputs[n.ID]["out"] != op {
			t.Errorf("node %q: output %q, operator %q", n.ID, c.Outputs[n.ID]["out"], op)
		}
	}
}

func TestCompileMaps(t *testing.T) {
	c, err := Compile(readDesign(t, "../designer/testdata/payments-branches.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	split := "KSTREAM-BRANCH-0000000001"
	want := map[string]string{"big": split + "big", "small": split + "small", "rest": split + "rest"}
	if got := c.Outputs["split"]; !mapsEqual(got, want) {
		t.Errorf("branch outputs %v, want %v", got, want)
	}
	if got := c.Operators["split"]; got != split {
		t.Errorf("branch operator %q, want %q", got, split)
	}
	if got := c.Parts["split"]; !slices.Equal(got, []string{split, split + "big", split + "small", split + "rest"}) {
		t.Errorf("branch parts %q", got)
	}

	c, err = Compile(readDesign(t, "../designer/testdata/orders-windowed.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Stores; !mapsEqual(got, map[string]string{"count": "big-orders-per-10s"}) {
		t.Errorf("stores %v", got)
	}
	if got := c.Parts["count"]; !slices.Equal(got, []string{"big-orders-per-10s-repartition-filter", "big-orders-per-10s-repartition-sink", "big-orders-per-10s-repartition-source", "KSTREAM-AGGREGATE-0000000003"}) {
		t.Errorf("count parts %q", got)
	}
	if got := c.Outputs["window"]["out"]; got != "KSTREAM-KEY-SELECT-0000000002" {
		t.Errorf("window output %q, want the group-by's key selector", got)
	}
	stores := c.Topology.Stores()
	if len(stores) != 1 || stores[0].Name != "big-orders-per-10s" || stores[0].Type != "window" || !stores[0].EmitOnClose {
		t.Errorf("Stores() = %+v", stores)
	}

	c, err = Compile(readDesign(t, "testdata/compile/tables.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Stores["customers"]; got != "customers-STATE-STORE-0000000000" {
		t.Errorf("generated table store %q", got)
	}
	if got := c.Parts["customers"]; !slices.Equal(got, []string{"KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002"}) {
		t.Errorf("table source parts %q", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// design builds a small design: nodes in order, each connected from the
// one before (out -> in) unless edges are given.
func design(nodes []designer.Node, edges ...designer.Edge) *designer.Design {
	if edges == nil {
		for i := 1; i < len(nodes); i++ {
			edges = append(edges, designer.Edge{From: nodes[i-1].ID, FromPort: "out", To: nodes[i].ID, ToPort: "in"})
		}
	}
	return &designer.Design{ID: "t", Name: "t", Version: designer.FormatVersion, Nodes: nodes, Edges: edges}
}

func node(id string, kind designer.Kind, params map[string]any) designer.Node {
	return designer.Node{ID: id, Kind: kind, Params: params}
}

func problemsOf(t *testing.T, d *designer.Design) designer.Problems {
	t.Helper()
	c, err := Compile(d, Options{})
	if err == nil {
		t.Fatalf("compiled, want problems:\n%s", c.Topology.Describe())
	}
	var ps designer.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T %v, want designer.Problems", err, err)
	}
	return ps
}

// wantProblem checks that ps holds a problem of node and param whose
// message holds msg.
func wantProblem(t *testing.T, ps designer.Problems, node, param, msg string) {
	t.Helper()
	for _, p := range ps {
		if p.Node == node && p.Param == param && strings.Contains(p.Message, msg) {
			return
		}
	}
	t.Errorf("no problem of node %q, param %q with %q in:\n%s", node, param, msg, ps)
}

func TestCompileExpressionProblems(t *testing.T) {
	d := design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in", "timestamp": "value.ts + int(headers.x)"}),
		node("f", "filter", map[string]any{"predicate": "valu.amount > 1"}),
		node("f2", "filter", map[string]any{"predicate": "1 + 1"}),
		node("split", "branch", map[string]any{"branches": []any{
			map[string]any{"name": "big", "predicate": "value.amount >"},
			map[string]any{"name": "old", "predicate": "timestamp < 5"},
			map[string]any{"name": "rest"},
		}}),
		node("mv", "map-values", map[string]any{"value": "{k: key, v: value}"}),
		node("m", "map", map[string]any{"key": "headers.id", "value": "value"}),
		node("fm", "flat-map", map[string]any{"records": "42"}),
		node("sink", "sink", map[string]any{"topic": "out"}),
		node("old-sink", "sink", map[string]any{"topic": "old"}),
		node("rest-sink", "sink", map[string]any{"topic": "rest"}),
	},
		designer.Edge{From: "src", FromPort: "out", To: "f", ToPort: "in"},
		designer.Edge{From: "f", FromPort: "out", To: "f2", ToPort: "in"},
		designer.Edge{From: "f2", FromPort: "out", To: "split", ToPort: "in"},
		designer.Edge{From: "split", FromPort: "big", To: "mv", ToPort: "in"},
		designer.Edge{From: "mv", FromPort: "out", To: "m", ToPort: "in"},
		designer.Edge{From: "m", FromPort: "out", To: "fm", ToPort: "in"},
		designer.Edge{From: "fm", FromPort: "out", To: "sink", ToPort: "in"},
		designer.Edge{From: "split", FromPort: "old", To: "old-sink", ToPort: "in"},
		designer.Edge{From: "split", FromPort: "rest", To: "rest-sink", ToPort: "in"},
	)
	ps := problemsOf(t, d)
	wantProblem(t, ps, "src", "timestamp", "headers is not available here: the runtime gives this operator only key, value and timestamp")
	wantProblem(t, ps, "f", "predicate", "unknown name valu (1:1)")
	wantProblem(t, ps, "f2", "predicate", "expected bool, but got int")
	wantProblem(t, ps, "split", "branches", `branch "big": predicate: unexpected token EOF (1:14)`)
	wantProblem(t, ps, "split", "branches", `branch "old": predicate: timestamp is not available here`)
	wantProblem(t, ps, "mv", "value", "key is not available here: the runtime gives this operator only value")
	wantProblem(t, ps, "m", "key", "headers is not available here")
	wantProblem(t, ps, "fm", "records", `expected a list of {"key"`)
	if len(ps) != 8 {
		t.Errorf("%d problems, want 8:\n%s", len(ps), ps)
	}
	for _, p := range ps {
		if p.Kind == "" || !strings.Contains(p.Error(), "node \""+p.Node+"\" ("+string(p.Kind)+")") {
			t.Errorf("problem without its kind: %q", p.Error())
		}
	}
	// In design order, and by parameter within a node.
	var order []string
	for _, p := range ps {
		order = append(order, p.Node)
	}
	if want := []string{"src", "f", "f2", "split", "split", "mv", "m", "fm"}; !slices.Equal(order, want) {
		t.Errorf("problems in order %q, want %q", order, want)
	}
}

// Validation problems and expression problems come back together.
func TestCompileAllProblemsAtOnce(t *testing.T) {
	d := design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "bad topic!"}),
		node("f", "filter", map[string]any{"predicate": "value.x >"}),
		node("w", "windowed-by", map[string]any{"type": "tumbling", "size": "1500us"}),
		node("sink", "sink", nil),
	})
	ps := problemsOf(t, d)
	wantProblem(t, ps, "src", "topic", "only letters")
	wantProblem(t, ps, "f", "predicate", "unexpected token EOF")
	wantProblem(t, ps, "sink", "topic", "required")
	wantProblem(t, ps, "w", "size", "not a whole number of milliseconds")
	if ps.ForNode("src") == nil || ps[0].Node != "src" {
		t.Errorf("problems not in design order:\n%s", ps)
	}
}

func TestCompileStructuralProblems(t *testing.T) {
	ps := problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		node("x", "opaque", nil),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	wantProblem(t, ps, "x", "", "replace it")

	ps = problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		node("m", "merge", nil),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	wantProblem(t, ps, "m", "", "merges one stream")

	// Merged streams with different serdes: the serdes to write with are
	// unknown until the sink says.
	merged := func(sinkParams map[string]any) *designer.Design {
		return design([]designer.Node{
			node("a", "source-stream", map[string]any{"topic": "a", "keySerde": "string", "valueSerde": "json"}),
			node("b", "source-stream", map[string]any{"topic": "b", "keySerde": "bytes", "valueSerde": "json"}),
			node("m", "merge", nil),
			node("sink", "sink", sinkParams),
		},
			designer.Edge{From: "a", FromPort: "out", To: "m", ToPort: "in"},
			designer.Edge{From: "b", FromPort: "out", To: "m", ToPort: "in"},
			designer.Edge{From: "m", FromPort: "out", To: "sink", ToPort: "in"},
		)
	}
	ps = problemsOf(t, merged(map[string]any{"topic": "out"}))
	wantProblem(t, ps, "sink", "keySerde", "different key serdes")
	if len(ps) != 1 {
		t.Errorf("want one problem:\n%s", ps)
	}
	if _, err := Compile(merged(map[string]any{"topic": "out", "keySerde": "bytes"}), Options{}); err != nil {
		t.Errorf("with the sink's keySerde set: %v", err)
	}
}

// Names are just names to the runtime; those it refuses (control
// characters) become problems of their node.
func TestCompileHostileNames(t *testing.T) {
	names := []string{`say "hi"`, "back`tick`", "it's", `C:\path`, "<script>alert(1)</script>", "ünïcödé ✓", "{{.Name}}", "%s%d"}
	var nodes []designer.Node
	nodes = append(nodes, designer.Node{ID: "src", Kind: "source-stream", Name: names[0], Params: map[string]any{"topic": "in"}})
	for i, name := range names[1:] {
		nodes = append(nodes, designer.Node{ID: "f" + string(rune('a'+i)), Kind: "filter", Name: name, Params: map[string]any{"predicate": "true"}})
	}
	nodes = append(nodes, designer.Node{ID: "sink", Kind: "sink", Params: map[string]any{"topic": "out", "name": "sink \"quoted\""}})
	c, err := Compile(design(nodes), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := streams.NewBuilder()
	s := b.Stream([]string{"in"}, streams.Named(names[0]))
	for _, name := range names[1:] {
		s = s.Filter(pred, streams.Named(name))
	}
	s.To("out", streams.Named(`sink "quoted"`))
	want, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if g, w := c.Topology.Describe(), want.Describe(); g != w {
		t.Errorf("Describe differs.\ncompiled:\n%s\nhand-built:\n%s", g, w)
	}
	for _, n := range nodes {
		if c.Operators[n.ID] != designer.ParamString(n, "name") && c.Operators[n.ID] != n.Name {
			t.Errorf("node %q: operator %q", n.ID, c.Operators[n.ID])
		}
	}

	for _, bad := range []string{"new\nline", "tab\there", "nul\x00", strings.Repeat("x", 250)} {
		ps := problemsOf(t, design([]designer.Node{
			node("src", "source-stream", map[string]any{"topic": "in"}),
			{ID: "f", Kind: "filter", Name: bad, Params: map[string]any{"predicate": "true"}},
			node("sink", "sink", map[string]any{"topic": "out"}),
		}))
		if len(ps) != 1 || ps[0].Node != "f" || ps[0].Param != "name" || ps[0].Kind != "filter" {
			t.Errorf("name %q: got\n%s\nwant one problem of node f, parameter name", bad, ps)
		}
	}
}

// A Build error is given to the node whose DSL call made it.
func TestCompileBuildErrorsMapToNodes(t *testing.T) {
	// The generated name of the sink collides with the name a filter
	// gives itself.
	ps := problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		{ID: "f", Kind: "filter", Name: "KSTREAM-SINK-0000000002", Params: map[string]any{"predicate": "true"}},
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	if len(ps) != 1 || ps[0].Node != "sink" || !strings.Contains(ps[0].Message, "used twice") {
		t.Errorf("got\n%s\nwant the sink's name used twice", ps)
	}

	// A repartition topic that a source reads already.
	ps = problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "x-repartition"}),
		node("r", "repartition", map[string]any{"name": "x"}),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	if len(ps) != 1 || ps[0].Node != "r" || ps[0].Param != "name" {
		t.Errorf("got\n%s\nwant a problem of node r, parameter name", ps)
	}
}

func TestCompileNil(t *testing.T) {
	if _, err := Compile(nil, Options{}); err == nil {
		t.Error("a nil design compiled")
	}
}

// Peek nodes call Options.Peek.
func TestCompilePeekOption(t *testing.T) {
	var seen []string
	c, err := Compile(design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in", "valueSerde": "string"}),
		node("look", "peek", nil),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}), Options{Peek: func(id string, k, v any) { seen = append(seen, id+":"+k.(string)+"="+v.(string)) }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Pipe("in", []byte("k"), []byte("v"), 1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"look:k=v"}) {
		t.Errorf("peeked %q", seen)
	}
}

// Compiled designs run: records through the broker-less test driver.
func TestCompiledRuns(t *testing.T) {
	run := func(path string, pipe func(d *streams.TestDriver) error, topic string) []string {
		t.Helper()
		c, err := Compile(readDesign(t, path), Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := pipe(d); err != nil {
			t.Fatal(err)
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range d.Output(topic) {
			v := string(r.Value)
			if topic == "big-orders-per-10s" { // int64 counts
				v = strconv.FormatInt(int64(binary.BigEndian.Uint64(r.Value)), 10)
			}
			out = append(out, string(r.Key)+" "+v)
		}
		return out
	}

	got := run("../designer/testdata/orders-windowed.json", func(d *streams.TestDriver) error {
		for _, o := range []struct {
			key, value string
		}{
			{"o1", `{"customer":"alice","amount":60,"ts":1000}`},
			{"o2", `{"customer":"bob","amount":10,"ts":1500}`},
			{"o3", `{"customer":"alice","amount":70,"ts":2000}`},
			{"o4", `{"customer":"bob","amount":99,"ts":9000}`},
			{"o5", `{"customer":"carol","amount":50,"ts":16000}`},
		} {
			if err := d.Pipe("orders", []byte(o.key), []byte(o.value), 0); err != nil {
				return err
			}
		}
		return nil
	}, "big-orders-per-10s")
	slices.Sort(got)
	want := []string{`{"key":"alice","start":0,"end":10000} 2`, `{"key":"bob","start":0,"end":10000} 1`}
	if !slices.Equal(got, want) {
		t.Errorf("orders-windowed wrote %q, want %q", got, want)
	}

	got = run("../designer/testdata/credit-per-country.json", func(d *streams.TestDriver) error {
		for _, c := range []struct{ key, value string }{
			{"c1", `{"country":"NL","credit":10}`},
			{"c2", `{"country":"NL","credit":5.5}`},
			{"c1", `{"country":"DE","credit":10}`},
		} {
			if err := d.Pipe("customers", []byte(c.key), []byte(c.value), 1); err != nil {
				return err
			}
			if err := d.Commit(); err != nil {
				return err
			}
		}
		return nil
	}, "credit-per-country")
	want = []string{"NL 10", "NL 15.5", "NL 5.5", "DE 10"}
	if !slices.Equal(got, want) {
		t.Errorf("credit-per-country wrote %q, want %q", got, want)
	}
}

// An expression failing on a record fails the task with a ProcessingError
// naming the operator, the record's topic, partition and offset, and the
// expression.
func TestCompiledEvalErrors(t *testing.T) {
	c, err := Compile(design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		{ID: "f", Kind: "filter", Name: "big", Params: map[string]any{"predicate": "value.amount > 1"}},
		node("sink", "sink", map[string]any{"topic": "out"}),
	}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Pipe("in", []byte("k"), []byte(`"just a string"`), 1)
	var pe *streams.ProcessingError
	var ee *EvalError
	if !errors.As(err, &pe) || !errors.As(err, &ee) {
		t.Fatalf("Pipe: %v, want a ProcessingError around an EvalError", err)
	}
	if pe.Node != "big" || pe.Topic != "in" || ee.Source != "value.amount > 1" {
		t.Errorf("got %v", err)
	}
	if !strings.Contains(err.Error(), `processor "big" on record in/0@0: node "f": predicate expression "value.amount > 1": `) {
		t.Errorf("message: %v", err)
	}
}

// A blank expression is Validate's problem, reported once.
func TestCompileBlankExpression(t *testing.T) {
	ps := problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		node("f", "filter", map[string]any{"predicate": "  "}),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	if len(ps) != 1 || ps[0].Node != "f" || ps[0].Param != "predicate" {
		t.Errorf("got\n%s\nwant one problem of f's predicate", ps)
	}
}
