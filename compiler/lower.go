package compiler

import (
	"strconv"
	"time"

	"github.com/braidstream/braid/designer"
)

// The lowering turns each node, once, into a plan: the runtime DSL calls
// that make it, with typed arguments, and what the compiler tracks of its
// output (serdes, windows, whether a grouping repartitions). Compile
// applies plans to a streams.Builder (apply.go); ExportGo prints them as
// the Go program that makes the same calls (export.go). Every decision —
// which method, which serdes, which store options, when a count keeps
// count()'s names, when a session aggregation merges — is made here, so
// that the program and the compiled topology cannot disagree.

// shape is what the lowering knows of what leaves an output port.
type shape struct {
	typ designer.DataType
	key keyInfo
	// value is the value serde's name; "" when merged streams disagree.
	value string
	// repart says a grouping of this stream repartitions (the key may
	// have changed), as the runtime decides it.
	repart bool
	// groupName names the repartition topic of a grouped stream or
	// table; win describes a windowed stream's windows.
	groupName string
	win       *windowInfo
}

// keyInfo is a key serde: a basic serde's name ("" when merged streams
// disagree), windowed by win after a windowed aggregation.
type keyInfo struct {
	serde string
	win   *windowInfo
}

type windowInfo struct {
	session bool
	// sliding marks sliding windows (whose keys are windowed as time
	// windows' are).
	sliding bool
	// size is the window size (a sliding window's time difference).
	size time.Duration
}

// plan is a node's DSL calls: the first made on input on (the Builder
// when on is -1), each next one on what the one before returned.
type plan struct {
	on    int
	calls []dslCall
	// out is the node's output; nil for a sink and a branch, whose
	// outputs are branches, one stream each by branch name.
	out      *shape
	branches []string
	// keepsStore says the node's table keeps a store of the node's own
	// (Compiled.Stores).
	keepsStore bool
	// problems are what the lowering found wrong with the node (serdes
	// merged streams disagree on); the calls are still made.
	problems []nodeProblem
}

type nodeProblem struct{ param, message string }

// dslCall is one method call of the runtime's DSL.
type dslCall struct {
	method string
	args   []arg
}

func call(method string, args ...arg) dslCall { return dslCall{method: method, args: args} }

// args joins positional arguments and options.
func args(lists ...[]arg) []arg {
	var out []arg
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// lowering lowers the nodes of one design.
type lowering struct {
	c *compilation
}

// expr returns node i's expression parameter param as an argument, nil
// when the node does not set it and its kind gives it no default.
func (l *lowering) expr(i int, param string, role designer.ExprRole) *exprArg {
	n := l.c.d.Nodes[i]
	src, ok := n.Params[param].(string)
	if !designer.IsSet(n.Params[param]) {
		src, ok = designer.ParamString(n, param), true // a joiner's default
	}
	if !ok || isBlank(src) {
		return nil
	}
	return &exprArg{node: i, param: param, suffix: exportName(param), what: "the " + param, role: role, kind: n.Kind, src: src, e: l.c.exprs[i][param]}
}

// fn is expr as a positional argument, which the call cannot go
// without: one the design does not set (Validate's problem) fails when
// called.
func (l *lowering) fn(i int, param string, role designer.ExprRole) *exprArg {
	if a := l.expr(i, param, role); a != nil {
		return a
	}
	return &exprArg{node: i, param: param, suffix: exportName(param), role: role, kind: l.c.d.Nodes[i].Kind}
}

// needSerdes adds a problem when the serdes node writes with are unknown
// because the streams merged before it disagree.
func (p *plan) needSerdes(key keyInfo, value string) {
	if key.serde == "" {
		p.problems = append(p.problems, nodeProblem{"keySerde", "the streams merged before this node have different key serdes: set keySerde"})
	}
	if value == "" {
		p.problems = append(p.problems, nodeProblem{"valueSerde", "the streams merged before this node have different value serdes: set valueSerde"})
	}
}

// node lowers node i on its inputs, in the order of their edges (in) and
// by input port (ports, an index into in). It returns nil when there is
// nothing to call: a problem found before (Validate's, checkNodes').
func (l *lowering) node(i int, in []*shape, ports map[string]int) *plan {
	n := l.c.d.Nodes[i]
	if len(in) == 0 && n.Kind != designer.KindSourceStream && n.Kind != designer.KindSourceTable {
		return &plan{problems: []nodeProblem{{"", "has no input to compile"}}}
	}
	opName := operatorName(n)
	switch n.Kind {
	case designer.KindSourceStream, designer.KindSourceTable:
		return l.source(i, opName)
	case designer.KindFilter, designer.KindFilterNot, designer.KindMapValues, designer.KindFlatMapValues,
		designer.KindFlatMap, designer.KindSelectKey, designer.KindMap, designer.KindPeek, designer.KindToStream:
		return l.stateless(i, in[0], opName)
	case designer.KindBranch:
		return l.branch(i, opName)
	case designer.KindMerge:
		return l.merge(in, opName)
	case designer.KindRepartition, designer.KindGroupByKey, designer.KindGroupBy:
		return l.regroup(i, in[0])
	case designer.KindWindowedBy:
		w, info := windowsOf(n)
		p := &plan{on: 0, calls: []dslCall{call("WindowedBy", w)}}
		if designer.ParamString(n, "emit") == designer.EmitOnWindowClose {
			p.calls = append(p.calls, call("Emit", emitArg{}))
		}
		out := *in[0]
		out.typ, out.win = designer.WindowedStream, info
		p.out = &out
		return p
	case designer.KindCount, designer.KindReduce, designer.KindAggregate:
		return l.aggregate(i, in[0], opName)
	case designer.KindStreamJoin, designer.KindStreamTableJoin, designer.KindTableJoin:
		return l.join(i, in, ports, opName)
	case designer.KindSink:
		return l.sink(i, in[0], opName)
	}
	return nil
}

func (l *lowering) source(i int, opName string) *plan {
	n := l.c.d.Nodes[i]
	key, value := serdeParam(n, "keySerde", "string"), serdeParam(n, "valueSerde", "json")
	serdes := serdesArg{serde{name: key}, serde{name: value}}
	var ts []arg
	if e := l.expr(i, "timestamp", designer.TimestampExtractor); e != nil {
		ts = []arg{timestampsArg{e}}
	}
	topic := designer.ParamString(n, "topic")
	p := &plan{on: -1, out: &shape{typ: designer.Stream, key: keyInfo{serde: key}, value: value}}
	if n.Kind == designer.KindSourceStream {
		p.calls = []dslCall{call("Stream", args([]arg{topicsArg(topic)}, named(opName), []arg{serdes}, ts)...)}
		return p
	}
	p.out.typ, p.keepsStore = designer.Table, true
	p.calls = []dslCall{call("Table", args([]arg{topicArg(topic)}, named(opName), []arg{serdes, storeOf(n, "")}, ts)...)}
	return p
}

// stateless lowers the kinds that make one call on their input, with at
// most one expression (map's key and value as one function).
func (l *lowering) stateless(i int, in *shape, opName string) *plan {
	n := l.c.d.Nodes[i]
	out := *in
	p := &plan{on: 0, out: &out}
	var fn []arg
	method := string(n.Kind)
	switch n.Kind {
	case designer.KindMap:
		fn = []arg{keyValueArg{l.fn(i, "key", designer.KeyMapper), l.fn(i, "value", designer.ValueMapper)}}
		method = "Map"
	case designer.KindPeek:
		fn, method = []arg{peekArg{n.ID, l.c.opts.Peek}}, "Peek"
	case designer.KindToStream:
		out = shape{typ: designer.Stream, key: in.key, value: in.value}
		method = "ToStream"
	default:
		op := oneExprOps[n.Kind]
		fn, method = []arg{l.fn(i, op.param, op.role)}, op.method
	}
	if n.Kind == designer.KindFilterNot && in.typ == designer.Table {
		method = "Filter"
	}
	if rekeys(n.Kind) {
		out.key.win, out.repart = nil, true
	}
	opts := named(opName)
	if store := designer.ParamString(n, "store"); store != "" && in.typ == designer.Table && n.Kind != designer.KindToStream {
		// A derived table keeps its rows in the serde the design gives
		// the input's values (a mapped value keeps it, as a stream's
		// does), not in the runtime's default.
		opts = append(opts, storeOf(n, in.value))
		p.keepsStore = true
	}
	p.calls = []dslCall{call(method, args(fn, opts)...)}
	return p
}

// oneExprOps are the stateless kinds that become one DSL call taking one
// expression: the parameter, its role and the method.
var oneExprOps = map[designer.Kind]struct {
	param  string
	role   designer.ExprRole
	method string
}{
	designer.KindFilter:        {"predicate", designer.Predicate, "Filter"},
	designer.KindFilterNot:     {"predicate", designer.Predicate, "FilterNot"},
	designer.KindMapValues:     {"value", designer.ValueMapper, "MapValues"},
	designer.KindFlatMapValues: {"values", designer.ValuesMapper, "FlatMapValues"},
	designer.KindFlatMap:       {"records", designer.FlatMapper, "FlatMap"},
	designer.KindSelectKey:     {"key", designer.KeyMapper, "SelectKey"},
}

// rekeys says a node of kind may change the key: a grouping after it
// repartitions, and its keys are windowed no more.
func rekeys(kind designer.Kind) bool {
	return kind == designer.KindMap || kind == designer.KindFlatMap || kind == designer.KindSelectKey
}

func (l *lowering) branch(i int, opName string) *plan {
	n := l.c.d.Nodes[i]
	bs := designer.ParamBranches(n)
	preds := l.c.branches[i]
	list := make(branchesArg, len(bs))
	p := &plan{on: 0}
	for j, br := range bs {
		list[j].name = br.Name
		p.branches = append(p.branches, br.Name)
		if br.Predicate == "" {
			continue
		}
		list[j].pred = &exprArg{node: i, param: "branches", suffix: "Branch" + strconv.Itoa(j+1),
			what: "branch " + commentText(br.Name) + "'s predicate", role: designer.Predicate, kind: n.Kind, src: br.Predicate}
		if j < len(preds) {
			list[j].pred.e = preds[j]
		}
	}
	p.calls = []dslCall{call("Branch", args([]arg{list}, named(opName))...)}
	return p
}

// merge merges the other inputs into the first, in the order of their
// edges: a.Merge(b).Merge(c), the name on the last.
func (l *lowering) merge(in []*shape, opName string) *plan {
	if len(in) < 2 {
		return nil // a problem of checkNodes
	}
	acc := *in[0]
	p := &plan{on: 0, out: &acc}
	for j, other := range in[1:] {
		var opts []arg
		if j == len(in)-2 {
			opts = named(opName)
		}
		p.calls = append(p.calls, call("Merge", args([]arg{inputArg(j + 1)}, opts)...))
		acc.repart = acc.repart || other.repart
		if acc.key.serde != other.key.serde {
			acc.key.serde = ""
		}
		if !sameWindow(acc.key.win, other.key.win) {
			acc.key.win = nil
		}
		if acc.value != other.value {
			acc.value = ""
		}
	}
	return p
}

func sameWindow(a, b *windowInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// wiring is the design's edges by node: the edges into each node, in
// the design's order, and how many edges leave each.
type wiring struct {
	index    map[string]int
	inputs   map[int][]designer.Edge
	outgoing map[int]int
}

func (c *compilation) wiring() *wiring {
	w := &wiring{index: c.index(), inputs: map[int][]designer.Edge{}, outgoing: map[int]int{}}
	for _, e := range c.d.Edges {
		to, ok1 := w.index[e.To]
		from, ok2 := w.index[e.From]
		if ok1 && ok2 {
			w.inputs[to] = append(w.inputs[to], e)
			w.outgoing[from]++
		}
	}
	return w
}

// gather returns node i's inputs, of either back-end, in the order of
// their edges, and by input port an index into them: the outputs (outs)
// of the nodes before it that its edges read.
func gather[V any](w *wiring, i int, outs map[int]map[string]V) ([]V, map[string]int) {
	var in []V
	ports := map[string]int{}
	for _, e := range w.inputs[i] {
		if v, ok := outs[w.index[e.From]][e.FromPort]; ok {
			in = append(in, v)
			ports[e.ToPort] = len(in) - 1
		}
	}
	return in, ports
}

// shapes are the shapes of a node's inputs.
func shapes[V interface{ shapeOf() *shape }](in []V) []*shape {
	out := make([]*shape, len(in))
	for j, v := range in {
		out[j] = v.shapeOf()
	}
	return out
}

func (v *val) shapeOf() *shape  { return &v.shape }
func (v *xval) shapeOf() *shape { return &v.shape }
