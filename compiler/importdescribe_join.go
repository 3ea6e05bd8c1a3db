package compiler

import (
	"strings"

	"github.com/braidstream/braid/designer"
)

// Joins in describe() text. Kafka Streams builds each join from several
// processors, which the importer folds into one node:
//
//   - A stream-stream join is two windowing processors (one per side,
//     holding that side's window store), a processor per side that looks
//     the record up in the other side's store, and a pass-through merge of
//     the two. Generated names: KSTREAM-WINDOWED- for both windowing
//     processors, KSTREAM-JOINTHIS- or KSTREAM-OUTERTHIS- and
//     KSTREAM-JOINOTHER- or KSTREAM-OUTEROTHER- for the lookups,
//     KSTREAM-MERGE- for the merge; a join named j has j-this-windowed,
//     j-other-windowed, j-this-join or j-outer-this-join, j-other-join or
//     j-outer-other-join, and j-merge. An outer "this" lookup makes an
//     outer join, an outer "other" lookup alone a left join.
//   - A stream-table join is one processor, KSTREAM-JOIN- or
//     KSTREAM-LEFTJOIN-, fed by the stream only: the table reaches it
//     through its store, which both the join and the table's own
//     processor list. The table's node is the one whose processor lists
//     the join's first store and is no join itself. A named stream-table
//     join cannot be told from any other processor and stays opaque.
//   - A table-table join is a lookup processor per side and a merge fed by
//     both: KTABLE-JOINTHIS- and KTABLE-JOINOTHER- (older versions: -LEFT
//     and -OUTER variants, which tell the join type; newer ones print the
//     JOIN names for every type, so such a join imports as inner), and
//     KTABLE-MERGE-; a join named j has j-join-this, j-join-other and the
//     merge j. The merge's store, when the join is materialized, becomes
//     the node's store.
//
// The joiner and a stream-stream join's window are not in the text: the
// joiner takes its default and validation asks for the window.

// joinTableLink is a stream-table join waiting for its table's node: the
// processor that owns the table's store.
type joinTableLink struct {
	join  *importNode
	owner *describeNode
}

// joinable reports whether nd is a processor a join may be made of.
func (im *importer) joinable(nd *describeNode) bool {
	return nd != nil && nd.typ == describeProcessor && !nd.group.global && im.internal[nd] == nil && !im.done[nd]
}

// joinPart reports whether name is a part of a join: a generated name
// with prefix when the join's base name is "" (generated), else
// base+suffix.
func joinPart(name, base, prefix, suffix string) bool {
	if base == "" {
		_, ok := generatedIndex(name, prefix)
		return ok
	}
	return name == base+suffix
}

// joins folds the processors of joins into join nodes.
func (im *importer) joins() {
	for _, nd := range im.g.nodes {
		if !im.joinable(nd) {
			continue
		}
		if !im.streamJoin(nd) && !im.tableJoin(nd) {
			im.streamTableJoin(nd)
		}
	}
}

// single returns the processor named by the only name in names, if it is
// joinable.
func (im *importer) single(names []string) *describeNode {
	if len(names) != 1 {
		return nil
	}
	if nd := im.g.byName[names[0]]; im.joinable(nd) {
		return nd
	}
	return nil
}

// streamJoin makes a stream-stream join node of the group whose merge is
// m, if m is one.
func (im *importer) streamJoin(m *describeNode) bool {
	if len(m.pred) != 2 {
		return false
	}
	base := ""
	if _, ok := generatedIndex(m.name, "KSTREAM-MERGE-"); !ok {
		b, named := strings.CutSuffix(m.name, "-merge")
		if !named || b == "" {
			return false
		}
		base = b
	}
	var this, other *describeNode
	var thisOuter, otherOuter bool
	for _, name := range m.pred {
		p := im.g.byName[name]
		if !im.joinable(p) || len(p.succ) != 1 || len(p.pred) != 1 || p.group != m.group {
			return false
		}
		switch {
		case this == nil && joinPart(p.name, base, "KSTREAM-JOINTHIS-", "-this-join"):
			this = p
		case this == nil && joinPart(p.name, base, "KSTREAM-OUTERTHIS-", "-outer-this-join"):
			this, thisOuter = p, true
		case other == nil && joinPart(p.name, base, "KSTREAM-JOINOTHER-", "-other-join"):
			other = p
		case other == nil && joinPart(p.name, base, "KSTREAM-OUTEROTHER-", "-outer-other-join"):
			other, otherOuter = p, true
		default:
			return false
		}
	}
	if this == nil || other == nil || thisOuter && !otherOuter {
		return false
	}
	thisWin, otherWin := im.single(this.pred), im.single(other.pred)
	for _, w := range []*describeNode{thisWin, otherWin} {
		if w == nil || len(w.succ) != 1 || len(w.pred) != 1 || w.group != m.group {
			return false
		}
	}
	if !joinPart(thisWin.name, base, "KSTREAM-WINDOWED-", "-this-windowed") || !joinPart(otherWin.name, base, "KSTREAM-WINDOWED-", "-other-windowed") {
		return false
	}
	typ := designer.InnerJoin
	switch {
	case thisOuter:
		typ = designer.OuterJoin
	case otherOuter:
		typ = designer.LeftJoin
	}
	params := map[string]any{"type": typ}
	if base != "" {
		params["name"] = base
	}
	parts := []*describeNode{thisWin, otherWin, this, other, m}
	n := im.add(designer.KindStreamJoin, m.group.index, minIndex(parts), 0, params)
	for _, p := range parts {
		im.stand(p, n)
	}
	im.inPort[thisWin], im.inPort[otherWin] = "left", "right"
	return true
}

func minIndex(nodes []*describeNode) int {
	pos := nodes[0].index
	for _, nd := range nodes[1:] {
		pos = min(pos, nd.index)
	}
	return pos
}

// Generated names of a table-table join's lookups, by join type.
var (
	tableJoinThis  = map[string]string{"KTABLE-JOINTHIS-": designer.InnerJoin, "KTABLE-LEFTTHIS-": designer.LeftJoin, "KTABLE-OUTERTHIS-": designer.OuterJoin}
	tableJoinOther = map[string]string{"KTABLE-JOINOTHER-": designer.InnerJoin, "KTABLE-LEFTOTHER-": designer.LeftJoin, "KTABLE-OUTEROTHER-": designer.OuterJoin}
)

// tableJoinSide returns the join type a table-table join's lookup p
// tells (generated names) or "" (named ones), and whether p is one.
func tableJoinSide(p *describeNode, generated map[string]string, named string) (string, bool) {
	for prefix, typ := range generated {
		if _, ok := generatedIndex(p.name, prefix); ok {
			return typ, true
		}
	}
	return "", named != "" && p.name == named
}

// tableJoin makes a table-table join node of the group whose merge is
// m, if m is one.
func (im *importer) tableJoin(m *describeNode) bool {
	if len(m.pred) != 2 {
		return false
	}
	_, generated := generatedIndex(m.name, "KTABLE-MERGE-")
	named := ""
	if !generated {
		if _, known := kafkaKind(m.name); known {
			return false
		}
		named = m.name
	}
	var this, other *describeNode
	typ := designer.InnerJoin
	for _, name := range m.pred {
		p := im.g.byName[name]
		if !im.joinable(p) || len(p.succ) != 1 || len(p.pred) != 1 || p.group != m.group {
			return false
		}
		if t, ok := tableJoinSide(p, tableJoinThis, named+"-join-this"); ok && this == nil {
			this = p
			if t != "" {
				typ = t
			}
		} else if _, ok := tableJoinSide(p, tableJoinOther, named+"-join-other"); ok && other == nil {
			other = p
		} else {
			return false
		}
	}
	if this == nil || other == nil {
		return false
	}
	params := map[string]any{"type": typ}
	if named != "" {
		params["name"] = named
	}
	if len(m.stores) > 0 {
		params["store"] = m.stores[0]
	}
	parts := []*describeNode{this, other, m}
	n := im.add(designer.KindTableJoin, m.group.index, minIndex(parts), 0, params)
	for _, p := range parts {
		im.stand(p, n)
	}
	im.inPort[this], im.inPort[other] = "left", "right"
	return true
}

// streamTableJoin makes a stream-table join node of p, if it is one: a
// generated KSTREAM-JOIN- or KSTREAM-LEFTJOIN- processor whose first
// store another processor of its sub-topology owns.
func (im *importer) streamTableJoin(p *describeNode) {
	typ := ""
	if _, ok := generatedIndex(p.name, "KSTREAM-JOIN-"); ok {
		typ = designer.InnerJoin
	} else if _, ok := generatedIndex(p.name, "KSTREAM-LEFTJOIN-"); ok {
		typ = designer.LeftJoin
	}
	if typ == "" || len(p.pred) != 1 || len(p.stores) == 0 {
		return
	}
	var owner *describeNode
	for _, nd := range p.group.nodes {
		if nd != p && nd.typ == describeProcessor && !isJoinProcessor(nd.name) && contains(nd.stores, p.stores[0]) {
			owner = nd
			break
		}
	}
	if owner == nil {
		return
	}
	n := im.add(designer.KindStreamTableJoin, p.group.index, p.index, 0, map[string]any{"type": typ, "name": p.name})
	im.stand(p, n)
	im.inPort[p] = "stream"
	im.tableLinks = append(im.tableLinks, joinTableLink{join: n, owner: owner})
}

// isJoinProcessor reports whether name is a generated name of a join's
// lookup, which lists the store of the side it looks up, not its own.
func isJoinProcessor(name string) bool {
	for _, prefix := range []string{"KSTREAM-JOIN-", "KSTREAM-LEFTJOIN-", "KSTREAM-JOINTHIS-", "KSTREAM-JOINOTHER-",
		"KSTREAM-OUTERTHIS-", "KSTREAM-OUTEROTHER-", "KTABLE-JOINTHIS-", "KTABLE-JOINOTHER-",
		"KTABLE-LEFTTHIS-", "KTABLE-LEFTOTHER-", "KTABLE-OUTERTHIS-", "KTABLE-OUTEROTHER-"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return strings.HasSuffix(name, "-join") || strings.HasSuffix(name, "-join-this") || strings.HasSuffix(name, "-join-other")
}

// linkTables connects each stream-table join to the node of its table.
func (im *importer) linkTables(seen map[importEdge]bool) {
	for _, l := range im.tableLinks {
		from := im.out[l.owner]
		e := importEdge{from: from.n, port: from.port, to: l.join, toPort: "table"}
		if from.n == nil || from.n == l.join || seen[e] {
			continue
		}
		seen[e] = true
		im.edges = append(im.edges, &e)
	}
}
