package compiler

import (
	"fmt"
	"reflect"

	"github.com/braidstream/braid/runtime/streams"
)

// Compile's back-end applies a node's plan to the streams.Builder: each
// call of the plan is the DSL method of that name on what the call
// before returned, its arguments' runtime values in order (positional
// ones, then the Options). The method is looked up by name (reflect), so
// that the DSL's own signatures check the plan and a new kind needs no
// case here; a plan that does not fit them is a bug of the lowering,
// which panics and Compile reports as an internal error.

// node makes node i's DSL calls on its inputs (in, in the order of their
// edges; ports, an index into in by input port) and records what they
// added.
func (bd *build) node(i int, in []*val, ports map[string]int) {
	p := bd.l.node(i, shapes(in), ports)
	if p == nil {
		return
	}
	bd.plans[i] = p
	for _, pr := range p.problems {
		bd.c.add(i, pr.param, "%s", pr.message)
	}
	if len(p.calls) == 0 {
		return
	}
	var recv any = bd.b
	if p.on >= 0 {
		recv = in[p.on].h
	}
	mark := bd.b.Mark()
	for _, c := range p.calls {
		recv = invoke(recv, c, in)
	}
	bd.record(i, p, in, recv, bd.b.Added(mark).Operators)
}

// invoke calls c's method on recv.
func invoke(recv any, c dslCall, in []*val) any {
	m := reflect.ValueOf(recv).MethodByName(c.method)
	if !m.IsValid() {
		panic(fmt.Sprintf("lowering: %T has no method %s", recv, c.method))
	}
	t := m.Type()
	args := make([]reflect.Value, len(c.args))
	for j, a := range c.args {
		v := a.value(in)
		want := t.In(min(j, t.NumIn()-1))
		if t.IsVariadic() && j >= t.NumIn()-1 {
			want = want.Elem()
		}
		if v == nil {
			args[j] = reflect.Zero(want)
		} else {
			args[j] = reflect.ValueOf(v)
		}
	}
	out := m.Call(args)
	if len(out) == 0 {
		return nil
	}
	return out[0].Interface()
}

// record notes what node i's calls made: its operator (the one whose
// output is the node's, none when the calls added none: a grouping by
// key, windows), its outputs and its store.
func (bd *build) record(i int, p *plan, in []*val, result any, ops []string) {
	if len(ops) == 0 && (result == nil || p.branches != nil) {
		return // the call failed before adding its operator: a Build error
	}
	switch r := result.(type) {
	case nil: // a sink
		bd.main[i] = ops[0]
		return
	case map[string]*streams.Stream: // a branch: the split, then its branches
		split := ops[0]
		bd.main[i] = split
		bd.outs[i] = map[string]*val{}
		bd.port[i] = map[string]string{}
		for _, name := range p.branches {
			v := *in[0]
			v.h = r[split+name]
			v.op = v.h.(*streams.Stream).Name()
			bd.outs[i][name] = &v
			bd.port[i][name] = v.op
		}
		return
	}
	v := &val{shape: *p.out, h: result}
	switch {
	case len(ops) == 0 && p.on >= 0:
		v.op = in[p.on].op
	case len(ops) > 0:
		v.op = result.(interface{ Name() string }).Name()
		bd.main[i] = v.op
	}
	switch r := result.(type) {
	case *streams.GroupedStream:
		v.g = r
	case *streams.WindowedStream:
		v.g = in[p.on].g
	case *streams.Table:
		if p.keepsStore {
			bd.store[i] = r.StoreName()
		}
		if p.on >= 0 && in[p.on].g != nil {
			bd.sharedRepartition(i, in[p.on], ops)
		}
	}
	bd.output(i, v)
}
