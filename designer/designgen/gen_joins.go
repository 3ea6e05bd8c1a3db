package designgen

import "github.com/braidstream/braid/designer"

// streamTableJoin makes a design that joins topic "in", read as a stream
// and passed through up to two stateless operators (a key changed is
// repartitioned before the join), with topic "tab" read as a table,
// through a table filter or map-values or not (each with a store, as
// tables in table()), inner or left, and writes the result to "out".
// Table records may be tombstones; stream records only where no
// operator reads their value.
func (g *gen) streamTableJoin() {
	g.topics = []string{"in", "tab"}
	g.nullable = map[string]bool{"tab": true}
	stream := g.streamSide("in")
	g.tombstones = stream == ""
	table := g.tableSide("tab")
	typ := g.pick(designer.InnerJoin, designer.LeftJoin)
	g.last = ""
	g.add(Node("join", designer.KindStreamTableJoin, "type", typ, "joiner", g.joiner(typ)))
	g.connect(stream, "stream")
	g.connect(table, "table")
	g.sink("out")
}

// streamSide reads topic as a stream through up to two stateless
// operators that keep the records' shape and returns the last node, or
// "" if there is none but the source: its id is then g.last.
func (g *gen) streamSide(topic string) string {
	g.last = ""
	g.add(Node("src", designer.KindSourceStream, "topic", topic))
	ops := g.r.IntN(3)
	for range ops {
		g.add(g.stateless(true))
	}
	if ops == 0 {
		return ""
	}
	return g.last
}

// tableSide reads topic as a table with a store, through a table filter
// or map-values with a store or not, and returns the last node.
func (g *gen) tableSide(topic string) string {
	g.last = ""
	g.add(Node("tab", designer.KindSourceTable, "topic", topic))
	g.storeNamed()
	switch g.r.IntN(3) {
	case 0:
		g.add(Node("tabFilter", designer.KindFilter, "predicate", g.predicate()))
		g.storeNamed()
	case 1:
		g.add(Node("tabMap", designer.KindMapValues, "value", g.shape()))
		g.storeNamed()
	}
	return g.last
}

// connect adds an edge from node from (the first node added, if "") to
// port of the last node.
func (g *gen) connect(from, port string) {
	if from == "" {
		from = g.d.Nodes[0].ID
	}
	g.d.Edges = append(g.d.Edges, designer.Edge{From: from, FromPort: "out", To: g.last, ToPort: port})
}

// joiner is a joiner expression for a join of type typ: one that reads no
// field of a side that may be nil.
func (g *gen) joiner(typ string) string {
	switch typ {
	case designer.InnerJoin:
		return g.pick(designer.DefaultJoiner,
			"{customer: left.customer, amount: left.amount + right.amount, region: right.region, qty: left.qty * right.qty}",
			`{k: key, both: left.customer + "/" + right.customer}`)
	case designer.LeftJoin:
		return g.pick(designer.DefaultJoiner, "{customer: left.customer, amount: left.amount, region: left.region, qty: left.qty, other: right}")
	}
	return g.pick(designer.DefaultJoiner, "{k: key, l: left, r: right}")
}

// tableJoin makes a design that joins topics "in" and "tab", each read as
// a table (through a table filter or map-values or not, all with stores),
// inner, left or outer, with a store or not, and writes the joined
// table's changes to "out". Records of both may be tombstones.
func (g *gen) tableJoin() {
	g.topics = []string{"in", "tab"}
	g.tombstones, g.nullable = true, map[string]bool{"tab": true}
	left := g.tableSide("in")
	right := g.tableSide("tab")
	typ := g.pick(designer.InnerJoin, designer.LeftJoin, designer.OuterJoin)
	g.last = ""
	join := Node("join", designer.KindTableJoin, "type", typ, "joiner", g.valueJoiner(typ))
	if g.r.IntN(2) == 0 {
		join.Params["store"] = "joined"
	}
	g.add(join)
	g.connect(left, "left")
	g.connect(right, "right")
	g.add(Node("toStream", designer.KindToStream))
	g.sink("out")
}

// valueJoiner is joiner without key: Kafka Streams' table joins take a
// ValueJoiner.
func (g *gen) valueJoiner(typ string) string {
	switch typ {
	case designer.InnerJoin:
		return g.pick(designer.DefaultJoiner,
			"{customer: left.customer, amount: left.amount + right.amount, region: right.region, qty: left.qty * right.qty}")
	case designer.LeftJoin:
		return g.pick(designer.DefaultJoiner, "{customer: left.customer, amount: left.amount, region: left.region, qty: left.qty, other: right}")
	}
	return g.pick(designer.DefaultJoiner, "{l: left, r: right}")
}

// streamJoin makes a design that joins topics "in" and "in2", each read as
// a stream through up to two stateless operators (a key changed is
// repartitioned before the join), inner, left or outer (outer only when
// opts.OuterStreamJoins), within a window or before and after, with a
// grace or none, and writes the result to "out". Records of a side
// without operators may be tombstones.
func (g *gen) streamJoin() {
	g.topics = []string{"in", "in2"}
	left := g.streamSide("in")
	leftSrc := g.d.Nodes[0].ID
	g.tombstones = left == ""
	right := g.streamSide("in2")
	rightSrc := g.d.Nodes[len(g.d.Nodes)-1].ID
	if right != "" {
		rightSrc = right
	}
	g.nullable = map[string]bool{"in2": right == ""}
	if left == "" {
		left = leftSrc
	}
	types := []string{designer.InnerJoin, designer.LeftJoin, designer.OuterJoin}
	if !g.opts.UnmatchedStreamJoins {
		types = types[:1]
	}
	typ := g.pick(types...)
	join := Node("join", designer.KindStreamJoin, "type", typ, "joiner", g.joiner(typ), "grace", g.pick("0s", "1s", "3s"))
	if g.r.IntN(2) == 0 {
		join.Params["window"] = g.pick("2s", "5s")
	} else {
		join.Params["before"], join.Params["after"] = g.pick("1s", "4s"), g.pick("0s", "2s", "3s")
	}
	g.last = ""
	g.add(join)
	g.connect(left, "left")
	g.connect(rightSrc, "right")
	g.sink("out")
}
