package compiler

import (
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// Joins compile to the runtime's join calls, the left (or stream) input's
// method taking the right (or table) input. The joiner is the node's
// joiner expression, evaluated with key, left and right. A join's result
// keeps the left input's key serde and has the json value serde: what a
// joiner makes is an expression's value, an object by default. A stream
// input's own serdes go with JoinSerdes: after a map the runtime knows
// them no more, and repartitions and buffers the stream in them.

// joinValueSerde is the value serde of every join's result.
const joinValueSerde = "json"

// checkJoinTables adds a problem for each table input of join node i that
// has no store of its own: the runtime looks rows up in the store of the
// table being joined, which table sources and aggregations have, and table
// joins, table filters and table map-values have when their "store"
// parameter names one.
func (c *compilation) checkJoinTables(i int, index map[string]int) {
	n := c.d.Nodes[i]
	var ports []string
	switch n.Kind {
	case designer.KindStreamTableJoin:
		ports = []string{"table"}
	case designer.KindTableJoin:
		ports = []string{"left", "right"}
	}
	for _, e := range c.d.Edges {
		from, ok := index[e.From]
		if e.To != n.ID || !ok || !contains(ports, e.ToPort) {
			continue
		}
		src := c.d.Nodes[from]
		title, storable := storableTables[src.Kind]
		switch {
		case src.Kind == designer.KindSourceTable, aggregation(src.Kind):
		case storable && designer.ParamString(src, "store") != "":
		case storable:
			c.add(i, "", "the table of input %q (from %q) has no store to look rows up in: give the %s %q a store", e.ToPort, e.From, title, e.From)
			c.structural = true
		default:
			c.add(i, "", "the table of input %q (from %q, a %s) has no store to look rows up in: join a table source, an aggregation, or a table join, filter or map-values with a store", e.ToPort, e.From, src.Kind)
			c.structural = true
		}
	}
}

// storableTables are the kinds whose table has a store when their "store"
// parameter names one, with what a message calls them.
var storableTables = map[designer.Kind]string{designer.KindTableJoin: "table join", designer.KindFilter: "filter", designer.KindMapValues: "map-values"}

func aggregation(kind designer.Kind) bool {
	return kind == designer.KindCount || kind == designer.KindReduce || kind == designer.KindAggregate
}

// joinWindows returns the join windows of a stream-join node: before and
// after default to its window (the time difference).
func joinWindows(n designer.Node) streams.JoinWindows {
	window := designer.ParamDuration(n, "window")
	w := streams.JoinWindows{Before: window, After: window, Grace: designer.ParamDuration(n, "grace")}
	if designer.IsSet(n.Params["before"]) {
		w.Before = designer.ParamDuration(n, "before")
	}
	if designer.IsSet(n.Params["after"]) {
		w.After = designer.ParamDuration(n, "after")
	}
	return w
}

// joinerFn is the runtime's joiner for a compiled joiner expression.
func joinerFn(e *Expr) streams.ValueJoiner {
	return func(k, left, right any) (any, error) {
		if e == nil {
			return nil, errNotCompiled
		}
		return e.Join(k, left, right)
	}
}

// join makes node i's join call on its inputs by port.
func (bd *build) join(i int, ports map[string]*val, opName string) {
	n := bd.c.d.Nodes[i]
	joiner := joinerFn(bd.c.exprs[i]["joiner"])
	typ := designer.ParamString(n, "type")
	switch n.Kind {
	case designer.KindStreamJoin:
		left, right := ports["left"], ports["right"]
		if left == nil || right == nil {
			return // Validate reports the unconnected input
		}
		opts := append(named(opName), streams.WithSerdes(basicSerde(left.key.serde), basicSerde(joinValueSerde)),
			streams.JoinSerdes(basicSerde(left.key.serde), basicSerde(left.value), basicSerde(right.value)))
		w := joinWindows(n)
		var s *streams.Stream
		switch typ {
		case designer.LeftJoin:
			s = left.s.LeftJoin(right.s, joiner, w, opts...)
		case designer.OuterJoin:
			s = left.s.OuterJoin(right.s, joiner, w, opts...)
		default:
			s = left.s.Join(right.s, joiner, w, opts...)
		}
		bd.main[i] = s.Name()
		bd.output(i, &val{typ: designer.Stream, s: s, key: keyInfo{serde: left.key.serde}, value: joinValueSerde, op: s.Name()})

	case designer.KindStreamTableJoin:
		stream, table := ports["stream"], ports["table"]
		if stream == nil || table == nil {
			return
		}
		opts := append(named(opName), streams.WithSerdes(basicSerde(stream.key.serde), basicSerde(joinValueSerde)),
			streams.JoinSerdes(basicSerde(stream.key.serde), basicSerde(stream.value), nil))
		var s *streams.Stream
		if typ == designer.LeftJoin {
			s = stream.s.LeftJoinTable(table.t, joiner, opts...)
		} else {
			s = stream.s.JoinTable(table.t, joiner, opts...)
		}
		bd.simple(i, &val{typ: designer.Stream, s: s, key: keyInfo{serde: stream.key.serde}, value: joinValueSerde})

	case designer.KindTableJoin:
		left, right := ports["left"], ports["right"]
		if left == nil || right == nil {
			return
		}
		opts := append(named(opName), streams.WithSerdes(basicSerde(left.key.serde), basicSerde(joinValueSerde)))
		store := designer.ParamString(n, "store")
		if store != "" {
			opts = append(opts, streams.Materialized(streams.StoreOptions{Name: store, ValueSerde: basicSerde(joinValueSerde)}))
			bd.store[i] = store
		}
		var t *streams.Table
		switch typ {
		case designer.LeftJoin:
			t = left.t.LeftJoin(right.t, joiner, opts...)
		case designer.OuterJoin:
			t = left.t.OuterJoin(right.t, joiner, opts...)
		default:
			t = left.t.Join(right.t, joiner, opts...)
		}
		bd.main[i] = t.Name()
		bd.output(i, &val{typ: designer.Table, t: t, key: keyInfo{serde: left.key.serde}, value: joinValueSerde, op: t.Name()})
	}
}
