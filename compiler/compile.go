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
// twice), else to the design; and to the parameter the node's plan made
// the argument it blames of (errorParam).
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
		c.add(i, errorParam(bd.plans[i], be), "%s", msg)
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

// errorParam names the parameter of the node of plan p a Build error is
// about: the one the argument it blames came from, in the call that
// found it (any, for Build's checks of the topology). It is "" when the
// error blames no argument, or one no single parameter made: the node as
// a whole is at fault.
func errorParam(p *plan, be *streams.BuildError) string {
	if p == nil {
		return ""
	}
	at := blameOf(be)
	for _, c := range p.calls {
		if be.Method != "" && !sameMethod(be.Method, c.method) {
			continue
		}
		for _, a := range c.args {
			if param := a.paramFor(at); param != "" {
				return param
			}
		}
	}
	return ""
}

// sameMethod says the runtime's name of a DSL call (BuildError.Method,
// "Windowed.Count" for Count on a windowed stream) is a plan's method.
func sameMethod(runtime, method string) bool {
	return runtime == method || strings.HasSuffix(runtime, "."+method)
}

// build is one run of the DSL calls over a prefix of the node order.
type build struct {
	c *compilation
	l *lowering
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
	// errs are the Build errors each node's DSL calls made, plans the
	// plans that made them.
	errs  map[int][]*streams.BuildError
	plans map[int]*plan
}

// val is what leaves an output port in Compile: the lowering's shape,
// with the runtime's stream, table, grouped or windowed stream (h).
type val struct {
	shape
	h any
	// g is the grouping of a grouped or windowed stream, whose
	// aggregations may share its repartition.
	g *streams.GroupedStream
	// op is the operator whose records these are.
	op string
}

func (c *compilation) newBuild(order []int) *build {
	bd := &build{c: c, l: &lowering{c: c}, b: streams.NewBuilder(), outs: map[int]map[string]*val{}, parts: map[int][]string{},
		stores: map[int][]string{}, main: map[int]string{}, port: map[int]map[string]string{}, store: map[int]string{},
		repartitions: map[*streams.GroupedStream][]string{}, errs: map[int][]*streams.BuildError{}, plans: map[int]*plan{}}
	w := c.wiring()
	for _, i := range order {
		in, ports := gather(w, i, bd.outs)
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

// serdeParam returns node n's serde parameter, or dflt when unset.
func serdeParam(n designer.Node, param, dflt string) string {
	if s := designer.ParamString(n, param); s != "" {
		return s
	}
	return dflt
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
