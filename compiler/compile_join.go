package compiler

import (
	"github.com/braidstream/braid/designer"
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
