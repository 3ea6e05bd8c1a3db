package designgen

import "github.com/braidstream/braid/designer"

// table makes a design that reads topic "in" as a table with a store,
// passes it through up to two table filters or map-values, each with a
// store, and writes its changes to "out", or groups it by a field (the
// row, or its amount) and counts, reduces or aggregates it (with a
// subtractor) and writes the aggregate's changes. Tables that name no
// store, and table sources whose store is not cached, send deletions of
// keys never held in Kafka Streams only (docs/differences.md,
// "Unmaterialized tables keep a store"): so every table names a store,
// and a source is uncached only without tombstones.
func (g *gen) table() {
	g.tombstones = g.r.IntN(2) == 0
	caching := "on"
	if !g.tombstones {
		caching = g.pick("on", "off")
	}
	g.add(Node("src", designer.KindSourceTable, "topic", "in", "caching", caching))
	g.storeNamed()
	for range g.r.IntN(3) {
		if g.r.IntN(2) == 0 {
			g.add(Node("filter", designer.KindFilter, "predicate", g.predicate()))
		} else {
			g.add(Node("mapValues", designer.KindMapValues, "value", g.shape()))
		}
		g.storeNamed()
	}
	if g.r.IntN(3) > 0 {
		g.tableAggregation()
	}
	g.add(Node("toStream", designer.KindToStream))
	g.sink("out")
}

// storeNamed names a store for the last node, after its id.
func (g *gen) storeNamed() {
	last := &g.d.Nodes[len(g.d.Nodes)-1]
	last.Params["store"] = last.ID + "-store"
}

// tableAggregation groups the current table by a field and aggregates
// it, with a subtractor where one is needed.
func (g *gen) tableAggregation() {
	amounts := g.r.IntN(2) == 0
	if amounts {
		g.add(Node("group", designer.KindGroupBy, "key", g.keyExpr(), "value", "value.amount"))
	} else {
		g.add(Node("group", designer.KindGroupBy, "key", g.keyExpr()))
	}
	var agg = Node("count", designer.KindCount)
	switch k := g.r.IntN(3); {
	case k == 1 && amounts:
		agg = Node("reduce", designer.KindReduce, "reducer", "aggregate + value", "subtractor", "aggregate - value")
	case k == 1:
		agg = Node("reduce", designer.KindReduce,
			"reducer", "{customer: value.customer, region: aggregate.region, amount: aggregate.amount + value.amount, qty: aggregate.qty + 1}",
			"subtractor", "{customer: aggregate.customer, region: aggregate.region, amount: aggregate.amount - value.amount, qty: aggregate.qty - 1}")
	case k == 2 && amounts:
		agg = Node("aggregate", designer.KindAggregate, "initializer", "{n: 0, total: 0}",
			"aggregator", "{n: aggregate.n + 1, total: aggregate.total + value}",
			"subtractor", "{n: aggregate.n - 1, total: aggregate.total - value}")
	case k == 2:
		agg = Node("aggregate", designer.KindAggregate, "initializer", `{n: 0, total: 0, last: ""}`,
			"aggregator", "{n: aggregate.n + 1, total: aggregate.total + value.amount, last: key + value.customer}",
			"subtractor", "{n: aggregate.n - 1, total: aggregate.total - value.amount * 2, last: aggregate.last}")
	}
	if agg.Params == nil {
		agg.Params = map[string]any{}
	}
	agg.Params["caching"] = g.pick("on", "off")
	g.add(agg)
}
