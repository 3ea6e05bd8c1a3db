package designgen

import "github.com/braidstream/braid/designer"

// flatMap makes a design that reads topic "in" through up to one
// stateless operator, a flat-map or flat-map-values that keeps the
// records' shape, up to one more stateless operator, sometimes writes
// that to "mid", and writes it to "out" or aggregates it first (as
// Generate's stream designs, with caching off: one input record reaches
// the aggregation several times, which the two drivers commit
// differently, as after a merge).
func (g *gen) flatMap() {
	agg, windowed := g.r.IntN(2) == 0, g.r.IntN(2) == 0
	filters := !(agg && windowed)
	g.add(Node("src", designer.KindSourceStream, "topic", "in"))
	for range g.r.IntN(2) {
		g.add(g.stateless(filters))
	}
	if g.r.IntN(2) == 0 {
		g.add(Node("flatMapValues", designer.KindFlatMapValues, "values", g.pick(
			"[value, {customer: value.region, region: value.customer, amount: value.amount + 1, qty: value.qty}]",
			"[value]",
			"[]",
			"[value, value, value]")))
	} else {
		g.add(Node("flatMap", designer.KindFlatMap, "records", g.pick(
			`[{key: value.customer, value: value}, {key: key, value: {customer: value.customer, region: "eu", amount: value.qty, qty: value.amount}}]`,
			`[{key: key + "-" + value.region, value: value}]`,
			`[{key: key, value: value}, {key: key, value: value}]`)))
	}
	for range g.r.IntN(2) {
		g.add(g.stateless(filters))
	}
	if g.r.IntN(3) == 0 {
		g.sink("mid")
	}
	if agg {
		g.noCache = true
		g.aggregation(windowed)
	}
	g.sink("out")
}
