package compiler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/braidstream/braid/designer"
)

// ExportGo's back-end prints each node's plan as Go: the calls on the
// receiver's code (b, the Builder, or the input's variable or chain),
// each argument's code. Chaining is the printer's business: a node's
// output is chained onto the next call when that call is its only
// reader, the next in order, and reads nothing else; else it gets a
// variable (n1, n2, ... by node position).

// xval is what leaves an output port in a program: the lowering's shape,
// with the Go code that gives it.
type xval struct {
	shape
	code *chain
}

// build writes the DSL calls of every node, in Compile's order.
func (x *exporter) build() error {
	order := x.l.c.order()
	inline := map[int]bool{}
	for pos, i := range order {
		if x.w.outgoing[i] != 1 || pos+1 >= len(order) || x.d.Nodes[i].Kind == designer.KindBranch {
			continue
		}
		next := x.w.inputs[order[pos+1]]
		if len(next) == 1 && next[0].From == x.d.Nodes[i].ID {
			inline[i] = true
		}
	}
	for _, i := range order {
		in, ports := gather(x.w, i, x.outs)
		out, err := x.node(i, in, ports)
		if err != nil {
			return fmt.Errorf("node %q: %w", x.d.Nodes[i].ID, err)
		}
		switch {
		case out == nil: // a sink, or a branch (its ports are set)
		case inline[i]:
			x.outs[i] = map[string]*xval{"out": out}
		case x.w.outgoing[i] > 0:
			x.body.WriteString(out.code.statement(variable(i)))
			v := *out
			v.code = root(variable(i))
			x.outs[i] = map[string]*xval{"out": &v}
		default:
			x.body.WriteString(out.code.statement(""))
		}
	}
	return nil
}

// node prints node i's plan and returns its output; nil for a sink and
// a branch, whose outputs it sets itself. in are its inputs in the order
// of their edges, ports an index into them by input port.
func (x *exporter) node(i int, in []*xval, ports map[string]int) (*xval, error) {
	p := x.l.node(i, shapes(in), ports)
	switch {
	case p == nil || len(p.calls) == 0:
		return nil, errors.New("has no calls to export")
	case len(p.problems) > 0:
		return nil, errors.New(p.problems[0].message)
	}
	if err := x.declare(i, p); err != nil {
		return nil, err
	}
	calls := x.calls(p, in)
	var ch *chain
	if p.on < 0 {
		ch = &chain{parts: []chainPart{{comment: x.nodeComment(i), code: "b." + calls}}}
	} else {
		ch = in[p.on].code.then(x.nodeComment(i), calls)
	}
	switch {
	case p.branches != nil:
		return nil, x.branch(i, p, in[0], ch)
	case p.out == nil:
		x.body.WriteString(ch.statement(""))
		return nil, nil
	}
	return &xval{shape: *p.out, code: ch}, nil
}

// calls prints p's calls: repeated ones (a merge of three) on one line,
// others each on its own.
func (x *exporter) calls(p *plan, in []*xval) string {
	var b strings.Builder
	for j, c := range p.calls {
		switch {
		case j > 0 && c.method == p.calls[j-1].method:
			b.WriteString(".")
		case j > 0:
			b.WriteString(".\n")
		}
		codes := make([]string, len(c.args))
		for k, a := range c.args {
			codes[k] = a.code(x, in)
		}
		b.WriteString(c.method + "(" + strings.Join(codes, ", ") + ")")
	}
	return b.String()
}

// declare writes the functions of the expressions node i's plan passes,
// in the order the node's kind declares their parameters.
func (x *exporter) declare(i int, p *plan) error {
	var exprs []*exprArg
	for _, c := range p.calls {
		for _, a := range c.args {
			exprs = append(exprs, exprsOf(a)...)
		}
	}
	kind, _ := designer.KindByName(x.d.Nodes[i].Kind)
	rank := func(param string) int {
		for j, kp := range kind.Params {
			if kp.Name == param {
				return j
			}
		}
		return len(kind.Params)
	}
	sort.SliceStable(exprs, func(a, b int) bool { return rank(exprs[a].param) < rank(exprs[b].param) })
	for _, e := range exprs {
		if e.src == "" {
			return fmt.Errorf("no %s", e.param)
		}
		code, err := x.exprSource(i, e.suffix, e.what, e.role, e.src)
		if err != nil {
			return err
		}
		x.exprCode[e.name()] = code
	}
	return nil
}

// exprsOf returns the expressions an argument passes.
func exprsOf(a arg) []*exprArg {
	switch a := a.(type) {
	case *exprArg:
		return []*exprArg{a}
	case keyValueArg:
		if a.newValue == nil {
			return []*exprArg{a.newKey}
		}
		return []*exprArg{a.newKey, a.newValue}
	case timestampsArg:
		return []*exprArg{a.e}
	case branchesArg:
		var out []*exprArg
		for _, br := range a {
			if br.pred != nil {
				out = append(out, br.pred)
			}
		}
		return out
	}
	return nil
}

// branch writes a branch node's call, and gives each branch the
// operator Compile gave it, as an index into the call's map.
func (x *exporter) branch(i int, p *plan, in *xval, ch *chain) error {
	n := x.d.Nodes[i]
	if x.w.outgoing[i] == 0 {
		x.body.WriteString(ch.statement(""))
		return nil
	}
	x.body.WriteString(ch.statement(variable(i)))
	x.outs[i] = map[string]*xval{}
	for _, name := range p.branches {
		full, ok := x.compiled.Outputs[n.ID][name]
		if !ok {
			return fmt.Errorf("branch %q has no operator", name)
		}
		v := *in
		v.code = root(variable(i) + "[" + quote(full) + "]")
		x.outs[i][name] = &v
	}
	return nil
}
