package compiler

import (
	"container/heap"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// Options adjust a compilation.
type Options struct {
	// Peek, if set, is called by every peek node with the id of the node
	// and the record passing it. It must be fast and safe for concurrent
	// use; it runs inside the task.
	Peek func(node string, key, value any)
}

// Compiled is a design compiled into a runtime topology.
type Compiled struct {
	Topology *streams.Topology
	Design   *designer.Design
	// Operators maps a node id to the name of its operator in Topology's
	// Describe: the one whose output is the node's output (a branch's
	// split, a table source's KTABLE-SOURCE processor, an aggregation's
	// aggregating processor, a merge's last merge, a sink's sink).
	// group-by-key and windowed-by nodes add no operator of their own and
	// are absent.
	Operators map[string]string
	// Parts maps a node id to every operator the node added, in the order
	// the runtime created them: for a table source its source and its
	// table, for an aggregation that repartitions the repartition topic's
	// filter, sink and source before the aggregation (every aggregation
	// of a named stream grouping lists the one repartition they share).
	// The names are the runtime's (streams.Builder.Added), not the
	// compiler's guess.
	Parts map[string][]string
	// Outputs maps a node id and one of its output ports to the operator
	// whose records leave through that port: for a branch node each
	// branch's processor; for group-by-key and windowed-by the operator
	// before them. For watching records at a node (streams.TapRecord.Node).
	Outputs map[string]map[string]string
	// Stores maps the id of a node that keeps a state store (table
	// sources, aggregations, materialized table joins, table filters and
	// map-values) to the store's name.
	Stores map[string]string
	// StoreNodes maps every store the topology keeps to the id of the
	// node that made it: Stores inverted, and a stream-stream join's
	// buffers (which drop late records) and store of unmatched records.
	StoreNodes map[string]string
}

// Compile validates d (designer.Validate and the expressions), builds its
// topology and returns it, or every problem found as designer.Problems.
// A problem the runtime's Build reports is given to the node whose DSL
// call caused it where that can be told, else to the design.
func Compile(d *designer.Design, opts Options) (compiled *Compiled, err error) {
	if d == nil {
		return nil, errors.New("compiler: Compile of a nil design")
	}
	// Validate vouches for the graph the DSL calls follow; should it miss
	// something, a bad design is an error, not a crash of the server.
	defer func() {
		if r := recover(); r != nil {
			compiled, err = nil, fmt.Errorf("compiler: internal error compiling design %q: %v", d.ID, r)
		}
	}()
	c := &compilation{d: d, opts: opts, exprs: make(map[int]map[string]*Expr), branches: make(map[int][]*Expr)}
	c.kinds = make([]*designer.KindSpec, len(d.Nodes))
	for i, n := range d.Nodes {
		if k, ok := designer.KindByName(n.Kind); ok {
			c.kinds[i] = &k
		}
	}
	validation := designer.Validate(d)
	c.problems = append(c.problems, validation...)
	c.compileExprs()
	c.checkNodes(len(validation) == 0)
	if len(validation) > 0 || c.structural {
		return nil, c.sortedProblems()
	}
	order := c.order()
	bd := c.newBuild(order)
	topo, err := bd.b.Build()
	if err == nil && len(c.problems) == 0 {
		return bd.result(topo), nil
	}
	if err != nil {
		c.attribute(bd, order, err)
	}
	return nil, c.sortedProblems()
}

// compilation is the state of one Compile.
type compilation struct {
	d     *designer.Design
	opts  Options
	kinds []*designer.KindSpec
	// exprs holds each node's compiled expression parameters, branches a
	// branch node's predicates (nil for the default branch).
	exprs    map[int]map[string]*Expr
	branches map[int][]*Expr
	problems []designer.Problem
	// structural is set by a problem that keeps the graph from being
	// built (an opaque node, a merge of one stream).
	structural bool
}

func (c *compilation) add(i int, param, format string, args ...any) {
	n := c.d.Nodes[i]
	c.problems = append(c.problems, designer.Problem{Node: n.ID, Kind: n.Kind, Param: param, Message: fmt.Sprintf(format, args...)})
}

// compileExprs compiles every expression parameter that is set, adding a
// problem for each that does not compile or reads what its operator is
// not given.
func (c *compilation) compileExprs() {
	for i, n := range c.d.Nodes {
		k := c.kinds[i]
		if k == nil {
			continue
		}
		for _, p := range k.Params {
			switch p.Type {
			case designer.ExpressionParam:
				src, ok := n.Params[p.Name].(string)
				if def, isString := p.Default.(string); !designer.IsSet(n.Params[p.Name]) && isString {
					src, ok = def, true // a joiner's default
				}
				if !ok || isBlank(src) {
					continue // unset, blank or not a string: Validate says so
				}
				e, err := CompileExpr(p.Expr, src)
				if err != nil {
					c.add(i, p.Name, "%v", err)
					continue
				}
				e.node = n.ID
				if msg := c.unavailable(n.Kind, e); msg != "" {
					c.add(i, p.Name, "%s", msg)
				}
				if c.exprs[i] == nil {
					c.exprs[i] = make(map[string]*Expr)
				}
				c.exprs[i][p.Name] = e
			case designer.BranchesParam:
				bs := designer.ParamBranches(n)
				preds := make([]*Expr, len(bs))
				for j, br := range bs {
					if br.Predicate == "" {
						continue
					}
					e, err := CompileExpr(designer.Predicate, br.Predicate)
					if err != nil {
						c.add(i, p.Name, "branch %q: predicate: %v", br.Name, err)
						continue
					}
					e.node = n.ID
					if msg := c.unavailable(n.Kind, e); msg != "" {
						c.add(i, p.Name, "branch %q: predicate: %s", br.Name, msg)
					}
					preds[j] = e
				}
				c.branches[i] = preds
			}
		}
	}
}

// given returns the variables the runtime gives the function an
// expression parameter of kind becomes.
func given(kind designer.Kind, role designer.ExprRole) []string {
	switch role {
	case designer.TimestampExtractor:
		return []string{"key", "value", "timestamp"}
	case designer.Predicate, designer.KeyMapper, designer.ValueMapper, designer.FlatMapper, designer.ValuesMapper:
		if kind == designer.KindMapValues || kind == designer.KindFlatMapValues {
			return []string{"value"}
		}
		return []string{"key", "value"}
	}
	return RoleVariables(role)
}

// unavailable says which variable e reads that its operator is not given.
func (c *compilation) unavailable(kind designer.Kind, e *Expr) string {
	have := given(kind, e.Role())
	for _, v := range RoleVariables(e.Role()) {
		if e.Reads(v) && !contains(have, v) {
			return fmt.Sprintf("%s is not available here: the runtime gives this operator only %s", v, joinAnd(have))
		}
	}
	return ""
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkNodes adds the problems Validate does not look for: kinds that
// cannot be compiled, merges of one stream, windows and retentions that
// are not whole milliseconds (the unit of record timestamps). The last
// are checked only on a valid design.
func (c *compilation) checkNodes(valid bool) {
	ins := make([]int, len(c.d.Nodes))
	index := c.index()
	for _, e := range c.d.Edges {
		if i, ok := index[e.To]; ok {
			ins[i]++
		}
	}
	for i, n := range c.d.Nodes {
		switch n.Kind {
		case designer.KindOpaque:
			c.add(i, "", "a processor imported from describe() whose kind is not known: replace it with a node of a known kind")
			c.structural = true
		case designer.KindMerge:
			if valid && ins[i] == 1 {
				c.add(i, "", "merges one stream: connect at least two")
				c.structural = true
			}
		case designer.KindWindowedBy:
			for _, p := range []string{"size", "advance", "gap", "grace"} {
				c.wholeMillis(i, p)
			}
		case designer.KindCount, designer.KindReduce, designer.KindAggregate:
			c.wholeMillis(i, "retention")
		case designer.KindStreamJoin:
			for _, p := range []string{"window", "before", "after", "grace"} {
				c.wholeMillis(i, p)
			}
		case designer.KindStreamTableJoin, designer.KindTableJoin:
			if valid {
				c.checkJoinTables(i, index)
			}
		}
	}
}

func (c *compilation) wholeMillis(i int, param string) {
	n := c.d.Nodes[i]
	if !designer.IsSet(n.Params[param]) {
		return
	}
	if d := designer.ParamDuration(n, param); d%time.Millisecond != 0 {
		c.add(i, param, "%v is not a whole number of milliseconds, the unit of record timestamps", d)
		c.structural = true
	}
}

func (c *compilation) index() map[string]int {
	index := make(map[string]int, len(c.d.Nodes))
	for i, n := range c.d.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	return index
}

// sortedProblems returns the problems in Validate's order: the design's
// first, then by node in design order, then by parameter in the order
// the node's kind declares them.
func (c *compilation) sortedProblems() designer.Problems {
	index := c.index()
	rank := func(p designer.Problem) (int, int) {
		i, ok := index[p.Node]
		if p.Node == "" || !ok {
			return -1, 0
		}
		if p.Param == "" || c.kinds[i] == nil {
			return i, 0
		}
		for j, kp := range c.kinds[i].Params {
			if kp.Name == p.Param {
				return i, j + 1
			}
		}
		return i, len(c.kinds[i].Params) + 1
	}
	ps := append(designer.Problems(nil), c.problems...)
	sort.SliceStable(ps, func(a, b int) bool {
		na, pa := rank(ps[a])
		nb, pb := rank(ps[b])
		if na != nb {
			return na < nb
		}
		return pa < pb
	})
	return ps
}

// order returns the node indexes in the order their DSL calls are made:
// topological, the first ready node in design order first.
func (c *compilation) order() []int {
	index := c.index()
	pending := make([]int, len(c.d.Nodes))
	succ := make([][]int, len(c.d.Nodes))
	for _, e := range c.d.Edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 {
			succ[from] = append(succ[from], to)
			pending[to]++
		}
	}
	ready := &intHeap{}
	for i, p := range pending {
		if p == 0 {
			heap.Push(ready, i)
		}
	}
	var order []int
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, s := range succ[i] {
			if pending[s]--; pending[s] == 0 {
				heap.Push(ready, s)
			}
		}
	}
	return order
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(a, b int) bool { return h[a] < h[b] }
func (h intHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// attribute turns the runtime's Build errors into problems: an error
// goes to the node whose DSL calls made it (Builder.Added), else to the
// last node in order that added the operator it names (a name used
// twice), else to the design.
func (c *compilation) attribute(bd *build, order []int, err error) {
	byError := map[*streams.BuildError]int{}
	byOperator := map[string]int{}
	for _, i := range order {
		for _, be := range bd.errs[i] {
			byError[be] = i
		}
		for _, op := range bd.parts[i] {
			byOperator[op] = i
		}
	}
	for _, be := range buildErrors(err) {
		msg := be.Err.Error()
		i, ok := byError[be]
		if !ok && be.Operator != "" {
			i, ok = byOperator[be.Operator]
		}
		if !ok {
			c.problems = append(c.problems, designer.Problem{Message: msg})
			continue
		}
		c.add(i, errorParam(c.kinds[i], be), "%s", msg)
	}
}

// buildErrors splits a Build error into its BuildErrors.
func buildErrors(err error) []*streams.BuildError {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]*streams.BuildError, 0, len(errs))
	for _, e := range errs {
		be := &streams.BuildError{Err: e}
		errors.As(e, &be)
		out = append(out, be)
	}
	return out
}

// errorParam names the parameter of kind a Build error is about: "name"
// for the Named option, else the one its message most likely means.
func errorParam(k *designer.KindSpec, be *streams.BuildError) string {
	if be.Option == "Named" && hasParam(k, "name") {
		return "name"
	}
	return guessParam(k, be.Err.Error())
}

func hasParam(k *designer.KindSpec, name string) bool {
	if k == nil {
		return false
	}
	for _, p := range k.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// guessParam names the parameter of kind a Build error is most likely
// about.
func guessParam(k *designer.KindSpec, msg string) string {
	has := func(name string) bool { return hasParam(k, name) }
	switch {
	case strings.Contains(msg, "operator name") && has("name"):
		return "name"
	case strings.Contains(msg, "store") && has("store"):
		return "store"
	case strings.Contains(strings.ToLower(msg), "retention") && has("retention"):
		return "retention"
	case strings.Contains(msg, "topic") && has("topic"):
		return "topic"
	case strings.Contains(msg, "topic") && has("name"):
		return "name"
	}
	return ""
}

// build is one run of the DSL calls over a prefix of the node order.
type build struct {
	c *compilation
	b *streams.Builder
	// parts and stores are the operators and stores each node's DSL
	// calls added, as the Builder tells them (Builder.Added).
	outs   map[int]map[string]*val
	parts  map[int][]string
	stores map[int][]string
	main   map[int]string
	port   map[int]map[string]string
	store  map[int]string
	// repartitions holds the repartition operators of a named stream
	// grouping, which its first aggregation adds and its later ones read
	// too: each lists them among its parts.
	repartitions map[*streams.GroupedStream][]string
	// errs are the Build errors each node's DSL calls made.
	errs map[int][]*streams.BuildError
}

// val is what leaves an output port: one of the runtime's streams,
// tables, grouped or windowed streams, with what the compiler tracks of
// it.
type val struct {
	typ designer.DataType
	s   *streams.Stream
	t   *streams.Table
	g   *streams.GroupedStream
	gt  *streams.GroupedTable
	w   *streams.WindowedStream
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
	// op is the operator whose records these are.
	op string
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

func (c *compilation) newBuild(order []int) *build {
	bd := &build{c: c, b: streams.NewBuilder(), outs: map[int]map[string]*val{}, parts: map[int][]string{},
		stores: map[int][]string{}, main: map[int]string{}, port: map[int]map[string]string{}, store: map[int]string{},
		repartitions: map[*streams.GroupedStream][]string{}, errs: map[int][]*streams.BuildError{}}
	index := c.index()
	inputs := make(map[int][]designer.Edge)
	for _, e := range c.d.Edges {
		if i, ok := index[e.To]; ok {
			inputs[i] = append(inputs[i], e)
		}
	}
	for _, i := range order {
		var in []*val
		ports := map[string]*val{}
		for _, e := range inputs[i] {
			if from, ok := index[e.From]; ok {
				if v := bd.outs[from][e.FromPort]; v != nil {
					in = append(in, v)
					ports[e.ToPort] = v
				}
			}
		}
		mark := bd.b.Mark()
		bd.node(i, in, ports)
		added := bd.b.Added(mark)
		bd.parts[i] = append(bd.parts[i], added.Operators...)
		bd.stores[i] = added.Stores
		bd.errs[i] = added.Errors
	}
	return bd
}

func (bd *build) result(topo *streams.Topology) *Compiled {
	c := bd.c
	out := &Compiled{Topology: topo, Design: c.d, Operators: map[string]string{}, Parts: map[string][]string{},
		Outputs: map[string]map[string]string{}, Stores: map[string]string{}, StoreNodes: map[string]string{}}
	for i, n := range c.d.Nodes {
		if m, ok := bd.main[i]; ok {
			out.Operators[n.ID] = m
		}
		if p := bd.parts[i]; len(p) > 0 {
			out.Parts[n.ID] = p
		}
		if p := bd.port[i]; len(p) > 0 {
			out.Outputs[n.ID] = p
		}
		if s, ok := bd.store[i]; ok {
			out.Stores[n.ID] = s
			out.StoreNodes[s] = n.ID
		}
		for _, s := range bd.stores[i] {
			out.StoreNodes[s] = n.ID
		}
	}
	return out
}

// output sets node i's only output.
func (bd *build) output(i int, v *val) {
	bd.outs[i] = map[string]*val{"out": v}
	if v.op != "" {
		bd.port[i] = map[string]string{"out": v.op}
	}
}

// operatorName is the name node n gives its operator: Node.Name, else
// the "name" parameter of kinds where it is the operator's name.
func operatorName(n designer.Node) string {
	if n.Name != "" {
		return n.Name
	}
	switch n.Kind {
	case designer.KindGroupByKey, designer.KindGroupBy, designer.KindRepartition:
		return ""
	}
	return designer.ParamString(n, "name")
}

// repartitionName is the name a grouping or repartition node gives its
// repartition topic: its "name" parameter, else Node.Name.
func repartitionName(n designer.Node) string {
	if s := designer.ParamString(n, "name"); s != "" {
		return s
	}
	return n.Name
}

func named(name string) []streams.Option {
	if name == "" {
		return nil
	}
	return []streams.Option{streams.Named(name)}
}

func basicSerde(name string) streams.Serde {
	switch name {
	case "string":
		return streams.String
	case "json":
		return streams.JSON
	case "int64":
		return streams.Int64
	case "bytes":
		return streams.Bytes
	}
	return nil
}

// keySerde returns the serde for keys k, written as param says ("" for
// the default).
func keySerde(k keyInfo, param string) streams.Serde {
	if param != "" && param != "windowed" && param != "windowed-json" {
		return basicSerde(param)
	}
	inner := basicSerde(k.serde)
	if k.win == nil || inner == nil {
		return inner
	}
	switch {
	case param == "windowed-json":
		return streams.WindowedJSON(inner)
	case k.win.session:
		return streams.SessionWindowedSerde(inner)
	default:
		return streams.TimeWindowedSerde(inner, k.win.size.Milliseconds())
	}
}

// serdeParam returns node n's serde parameter, or dflt when unset.
func serdeParam(n designer.Node, param, dflt string) string {
	if s := designer.ParamString(n, param); s != "" {
		return s
	}
	return dflt
}

// needSerdes adds a problem when the serdes node i writes with are
// unknown because the streams merged before it disagree.
func (bd *build) needSerdes(i int, key keyInfo, value string) {
	if key.serde == "" {
		bd.c.add(i, "keySerde", "the streams merged before this node have different key serdes: set keySerde")
	}
	if value == "" {
		bd.c.add(i, "valueSerde", "the streams merged before this node have different value serdes: set valueSerde")
	}
}

// node makes node i's DSL calls on its inputs, in the order of their
// edges and by input port.
func (bd *build) node(i int, in []*val, ports map[string]*val) {
	c := bd.c
	n := c.d.Nodes[i]
	ex := c.exprs[i]
	var first *val
	if len(in) > 0 {
		first = in[0]
	}
	if first == nil && n.Kind != designer.KindSourceStream && n.Kind != designer.KindSourceTable {
		bd.c.add(i, "", "has no input to compile")
		return
	}
	opName := operatorName(n)
	switch n.Kind {
	case designer.KindSourceStream:
		key, value := serdeParam(n, "keySerde", "string"), serdeParam(n, "valueSerde", "json")
		opts := append(named(opName), streams.WithSerdes(basicSerde(key), basicSerde(value)))
		if e := ex["timestamp"]; e != nil {
			opts = append(opts, streams.WithTimestamps(timestampFn(e)))
		}
		s := bd.b.Stream([]string{designer.ParamString(n, "topic")}, opts...)
		bd.main[i] = s.Name()
		bd.output(i, &val{typ: designer.Stream, s: s, key: keyInfo{serde: key}, value: value, op: s.Name()})

	case designer.KindSourceTable:
		topic := designer.ParamString(n, "topic")
		key, value := serdeParam(n, "keySerde", "string"), serdeParam(n, "valueSerde", "json")
		so := bd.storeOptions(n)
		opts := append(named(opName), streams.WithSerdes(basicSerde(key), basicSerde(value)), streams.Materialized(so))
		if e := ex["timestamp"]; e != nil {
			opts = append(opts, streams.WithTimestamps(timestampFn(e)))
		}
		t := bd.b.Table(topic, opts...)
		bd.main[i], bd.store[i] = t.Name(), t.StoreName()
		bd.output(i, &val{typ: designer.Table, t: t, key: keyInfo{serde: key}, value: value, op: t.Name()})

	case designer.KindFilter, designer.KindFilterNot:
		pred := predicateFn(ex["predicate"])
		out := *first
		if first.typ == designer.Table {
			out.t = first.t.Filter(pred, bd.derivedTableOptions(i, first, opName)...)
		} else {
			if n.Kind == designer.KindFilter {
				out.s = first.s.Filter(pred, named(opName)...)
			} else {
				out.s = first.s.FilterNot(pred, named(opName)...)
			}
		}
		bd.simple(i, &out)

	case designer.KindMap:
		keyE, valueE := ex["key"], ex["value"]
		out := *first
		out.s = first.s.Map(func(k, v any) (any, any, error) {
			nk, err := mapWith(keyE, k, v)
			if err != nil {
				return nil, nil, err
			}
			nv, err := mapWith(valueE, k, v)
			return nk, nv, err
		}, named(opName)...)
		out.key.win, out.repart = nil, true
		bd.simple(i, &out)

	case designer.KindMapValues:
		e := ex["value"]
		fn := func(v any) (any, error) { return mapWith(e, nil, v) }
		out := *first
		if first.typ == designer.Table {
			out.t = first.t.MapValues(fn, bd.derivedTableOptions(i, first, opName)...)
		} else {
			out.s = first.s.MapValues(fn, named(opName)...)
		}
		bd.simple(i, &out)

	case designer.KindFlatMap:
		e := ex["records"]
		out := *first
		out.s = first.s.FlatMap(func(k, v any) ([]streams.KeyValue, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.FlatMap(Record{Key: k, Value: v})
		}, named(opName)...)
		out.key.win, out.repart = nil, true
		bd.simple(i, &out)

	case designer.KindFlatMapValues:
		e := ex["values"]
		out := *first
		out.s = first.s.FlatMapValues(func(v any) ([]any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.FlatMapValues(Record{Value: v})
		}, named(opName)...)
		bd.simple(i, &out)

	case designer.KindSelectKey:
		e := ex["key"]
		out := *first
		out.s = first.s.SelectKey(func(k, v any) (any, error) { return mapWith(e, k, v) }, named(opName)...)
		out.key.win, out.repart = nil, true
		bd.simple(i, &out)

	case designer.KindPeek:
		id, peek := n.ID, c.opts.Peek
		out := *first
		out.s = first.s.Peek(func(k, v any) {
			if peek != nil {
				peek(id, k, v)
			}
		}, named(opName)...)
		bd.simple(i, &out)

	case designer.KindBranch:
		bd.branch(i, first, opName)

	case designer.KindMerge:
		bd.merge(i, in, opName)

	case designer.KindRepartition:
		base := repartitionName(n)
		key := keyInfo{serde: serdeParam(n, "keySerde", first.key.serde), win: first.key.win}
		value := serdeParam(n, "valueSerde", first.value)
		bd.needSerdes(i, key, value)
		opts := append(named(base), streams.WithSerdes(keySerde(key, ""), basicSerde(value)))
		if p := designer.ParamInt(n, "partitions"); p > 0 {
			opts = append(opts, streams.WithPartitions(p))
		}
		s := first.s.Repartition(opts...)
		bd.main[i] = s.Name()
		bd.output(i, &val{typ: designer.Stream, s: s, key: key, value: value, op: s.Name()})

	case designer.KindGroupByKey:
		key := keyInfo{serde: serdeParam(n, "keySerde", first.key.serde), win: first.key.win}
		value := serdeParam(n, "valueSerde", first.value)
		bd.needSerdes(i, key, value)
		name := repartitionName(n)
		g := first.s.GroupByKey(append(named(name), streams.WithSerdes(keySerde(key, ""), basicSerde(value)))...)
		bd.output(i, &val{typ: designer.GroupedStream, g: g, key: key, value: value, repart: first.repart, groupName: name, op: first.op})

	case designer.KindGroupBy:
		bd.groupBy(i, first)

	case designer.KindWindowedBy:
		w, info := windowsOf(n)
		ws := first.g.WindowedBy(w)
		if designer.ParamString(n, "emit") == designer.EmitOnWindowClose {
			ws = ws.Emit(streams.EmitOnWindowClose)
		}
		out := *first
		out.typ, out.w, out.win = designer.WindowedStream, ws, info
		bd.output(i, &out)

	case designer.KindCount, designer.KindReduce, designer.KindAggregate:
		bd.aggregate(i, first, opName)

	case designer.KindToStream:
		s := first.t.ToStream(named(opName)...)
		bd.main[i] = s.Name()
		bd.output(i, &val{typ: designer.Stream, s: s, key: first.key, value: first.value, op: s.Name()})

	case designer.KindStreamJoin, designer.KindStreamTableJoin, designer.KindTableJoin:
		bd.join(i, ports, opName)

	case designer.KindSink:
		kp := designer.ParamString(n, "keySerde")
		key, value := first.key, serdeParam(n, "valueSerde", first.value)
		if kp != "" && kp != "windowed" && kp != "windowed-json" {
			key = keyInfo{serde: kp}
		}
		bd.needSerdes(i, key, value)
		mark := bd.b.Mark()
		first.s.To(designer.ParamString(n, "topic"), append(named(opName), streams.WithSerdes(keySerde(key, kp), basicSerde(value)))...)
		bd.main[i] = bd.b.Added(mark).Operators[0]
	}
}

// simple records a node that adds one operator, whose stream or table
// is out, and gives out.
func (bd *build) simple(i int, out *val) {
	if out.typ == designer.Table {
		out.op = out.t.Name()
	} else {
		out.op = out.s.Name()
	}
	bd.main[i] = out.op
	bd.output(i, out)
}

// errNotCompiled is what a function built for an expression that did not
// compile returns; such a topology is only built to find more problems,
// never returned.
var errNotCompiled = errors.New("the expression did not compile")

func predicateFn(e *Expr) streams.Predicate {
	return func(k, v any) (bool, error) {
		if e == nil {
			return false, errNotCompiled
		}
		return e.Test(Record{Key: k, Value: v})
	}
}

func mapWith(e *Expr, k, v any) (any, error) {
	if e == nil {
		return nil, errNotCompiled
	}
	return e.Map(Record{Key: k, Value: v})
}

func timestampFn(e *Expr) streams.TimestampExtractor {
	return func(k, v any, ts int64) (int64, error) {
		return e.Timestamp(Record{Key: k, Value: v, Timestamp: ts})
	}
}

func (bd *build) branch(i int, in *val, opName string) {
	n := bd.c.d.Nodes[i]
	bs := designer.ParamBranches(n)
	preds := bd.c.branches[i]
	branches := make([]streams.Branch, len(bs))
	for j, br := range bs {
		branches[j].Name = br.Name
		if br.Predicate != "" {
			var e *Expr
			if j < len(preds) {
				e = preds[j]
			}
			branches[j].Predicate = predicateFn(e)
		}
	}
	mark := bd.b.Mark()
	out := in.s.Branch(branches, named(opName)...)
	split := bd.b.Added(mark).Operators[0]
	bd.main[i] = split
	bd.outs[i] = map[string]*val{}
	bd.port[i] = map[string]string{}
	for _, br := range bs {
		v := *in
		v.s = out[split+br.Name]
		v.op = v.s.Name()
		bd.outs[i][br.Name] = &v
		bd.port[i][br.Name] = v.op
	}
}

func (bd *build) merge(i int, in []*val, opName string) {
	if len(in) < 2 {
		return // a problem of checkNodes
	}
	acc := *in[0]
	for j, other := range in[1:] {
		if last := j == len(in)-2; last {
			acc.s = acc.s.Merge(other.s, named(opName)...)
		} else {
			acc.s = acc.s.Merge(other.s)
		}
		acc.op = acc.s.Name()
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
	bd.main[i] = acc.op
	bd.output(i, &acc)
}

func sameWindow(a, b *windowInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (bd *build) groupBy(i int, in *val) {
	c := bd.c
	n := c.d.Nodes[i]
	keyE, valueE := c.exprs[i]["key"], c.exprs[i]["value"]
	key := keyInfo{serde: serdeParam(n, "keySerde", in.key.serde)}
	value := serdeParam(n, "valueSerde", in.value)
	bd.needSerdes(i, key, value)
	name := repartitionName(n)
	opts := append(named(name), streams.WithSerdes(basicSerde(key.serde), basicSerde(value)))
	if in.typ == designer.Table {
		gt := in.t.GroupBy(func(k, v any) (any, any, error) {
			nk, err := mapWith(keyE, k, v)
			if err != nil || valueE == nil {
				return nk, v, err
			}
			nv, err := mapWith(valueE, k, v)
			return nk, nv, err
		}, opts...)
		bd.main[i] = gt.Name()
		bd.output(i, &val{typ: designer.GroupedTable, gt: gt, key: key, value: value, repart: true, groupName: name, op: gt.Name()})
		return
	}
	g := in.s.GroupBy(func(k, v any) (any, error) { return mapWith(keyE, k, v) }, opts...)
	bd.main[i] = g.Name()
	bd.output(i, &val{typ: designer.GroupedStream, g: g, key: key, value: value, repart: true, groupName: name, op: g.Name()})
}

// windowsOf returns the windows of a windowed-by node.
func windowsOf(n designer.Node) (streams.Windows, *windowInfo) {
	grace := designer.ParamDuration(n, "grace")
	switch designer.ParamString(n, "type") {
	case designer.Hopping:
		size := designer.ParamDuration(n, "size")
		return streams.Hopping(size, designer.ParamDuration(n, "advance"), grace), &windowInfo{size: size}
	case designer.Sliding:
		size := designer.ParamDuration(n, "size")
		return streams.Sliding(size, grace), &windowInfo{size: size, sliding: true}
	case designer.Session:
		return streams.Sessions(designer.ParamDuration(n, "gap"), grace), &windowInfo{session: true}
	default:
		size := designer.ParamDuration(n, "size")
		return streams.Tumbling(size, grace), &windowInfo{size: size}
	}
}

// derivedTableOptions are the options of node i's table filter or
// map-values: its name and, when its "store" parameter names one, the
// store it keeps the derived rows in, which it records as node i's. The
// store holds values in the serde the design gives the input's values
// (a mapped value keeps it, as a stream's does), not in the runtime's
// default, which a derived table falls back to for lack of its own.
func (bd *build) derivedTableOptions(i int, in *val, opName string) []streams.Option {
	opts := named(opName)
	if store := designer.ParamString(bd.c.d.Nodes[i], "store"); store != "" {
		opts = append(opts, streams.Materialized(streams.StoreOptions{Name: store, ValueSerde: basicSerde(in.value)}))
		bd.store[i] = store
	}
	return opts
}

// defaultCountStore reports whether count node n keeps its store as
// count() does: no store name and nothing else set. The compiler then
// calls Count without Materialized, so that the runtime (as Kafka
// Streams) generates no name it would throw away.
func defaultCountStore(n designer.Node, so streams.StoreOptions) bool {
	return n.Kind == designer.KindCount && so == (streams.StoreOptions{ValueSerde: streams.Int64})
}

func (bd *build) storeOptions(n designer.Node) streams.StoreOptions {
	return streams.StoreOptions{
		Name:            designer.ParamString(n, "store"),
		LoggingDisabled: designer.ParamString(n, "logging") == "off",
		CachingDisabled: designer.ParamString(n, "caching") == "off",
	}
}

// aggregateValueSerde is the serde of an aggregation's store values: its
// valueSerde parameter, else int64 for count, the stream's (inValue) for
// reduce and json for aggregate.
func aggregateValueSerde(n designer.Node, inValue string) string {
	dflt := "json"
	switch n.Kind {
	case designer.KindCount:
		dflt = "int64"
	case designer.KindReduce:
		dflt = inValue
	}
	return serdeParam(n, "valueSerde", dflt)
}

func (bd *build) aggregate(i int, in *val, opName string) {
	c := bd.c
	n := c.d.Nodes[i]
	ex := c.exprs[i]
	so := bd.storeOptions(n)
	value := aggregateValueSerde(n, in.value)
	if value == "" {
		bd.c.add(i, "valueSerde", "the streams merged before this node have different value serdes: set valueSerde")
	}
	so.ValueSerde = basicSerde(value)
	if in.typ == designer.WindowedStream && designer.IsSet(n.Params["retention"]) {
		so.Retention = designer.ParamDuration(n, "retention")
	}
	opts := named(opName)
	if !defaultCountStore(n, so) {
		opts = append(opts, streams.Materialized(so))
	}

	init, agg, red, sub, merger := ex["initializer"], ex["aggregator"], ex["reducer"], ex["subtractor"], ex["merger"]
	initFn := func() (any, error) {
		if init == nil {
			return nil, errNotCompiled
		}
		return init.Init()
	}
	aggFn := func(e *Expr) streams.Aggregator {
		return func(k, v, a any) (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Aggregate(k, v, a)
		}
	}
	redFn := func(e *Expr) streams.Reducer {
		return func(a, v any) (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Reduce(a, v)
		}
	}

	mark := bd.b.Mark()
	var t *streams.Table
	key := in.key
	switch in.typ {
	case designer.GroupedStream:
		switch n.Kind {
		case designer.KindCount:
			t = in.g.Count(opts...)
		case designer.KindReduce:
			t = in.g.Reduce(redFn(red), opts...)
		default:
			t = in.g.Aggregate(initFn, aggFn(agg), opts...)
		}
	case designer.WindowedStream:
		w := in.w
		switch n.Kind {
		case designer.KindCount:
			t = w.Count(opts...)
		case designer.KindReduce:
			t = w.Reduce(redFn(red), opts...)
		default:
			if merger != nil || in.win.session {
				w = w.MergeSessionsWith(func(k, a1, a2 any) (any, error) {
					if merger == nil {
						return nil, errNotCompiled
					}
					return merger.Merge(k, a1, a2)
				})
			}
			t = w.Aggregate(initFn, aggFn(agg), opts...)
		}
		key.win = in.win
	case designer.GroupedTable:
		switch n.Kind {
		case designer.KindCount:
			t = in.gt.Count(opts...)
		case designer.KindReduce:
			t = in.gt.Reduce(redFn(red), redFn(sub), opts...)
		default:
			t = in.gt.Aggregate(initFn, aggFn(agg), aggFn(sub), opts...)
		}
	}
	bd.sharedRepartition(i, in, bd.b.Added(mark).Operators)
	bd.main[i], bd.store[i] = t.Name(), t.StoreName()
	bd.output(i, &val{typ: designer.Table, t: t, key: key, value: value, op: t.Name()})
}

// sharedRepartition lists, among the parts of aggregation node i, the
// repartition a named stream grouping's first aggregation added and the
// later ones read: ops are what the aggregation added.
func (bd *build) sharedRepartition(i int, in *val, ops []string) {
	if in.g == nil || !in.repart || in.groupName == "" {
		return
	}
	if len(ops) > 1 {
		bd.repartitions[in.g] = ops[:len(ops)-1]
		return
	}
	bd.parts[i] = append(bd.parts[i], bd.repartitions[in.g]...)
}
