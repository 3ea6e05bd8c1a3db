package streams

import (
	"errors"
	"fmt"
	"time"
)

// ValueJoiner combines the values of two records with the same key, or a
// record and a table row. In left and outer join results without a match
// the missing side is nil. Returning an error sends the record to the
// processing error handler.
type ValueJoiner func(key, left, right any) (any, error)

// Joins need both inputs in one task: the same partition of each input
// holds the same keys only if both are partitioned by the join key into
// as many partitions. Build therefore repartitions an input whose key an
// operator may have changed (as a grouping does), and an App refuses to
// start when joined topics have different partition counts (see
// CopartitionError). The TestDriver gives every topic one partition unless
// told otherwise.

// JoinTable joins each record of s with the row of t under the record's
// key, as t holds it when the record is processed; a record without a row
// is dropped. Updates of t emit nothing. t must be materialized (a table
// from Builder.Table or an aggregation is, a Filter or MapValues of a table
// with Materialized; see Table.StoreName). It takes Named,
// WithSerdes (the result's serdes; the value serde is unknown otherwise)
// and JoinSerdes (the stream's, for its repartition if its key changed).
func (s *Stream) JoinTable(table *Table, joiner ValueJoiner, opts ...Option) *Stream {
	return s.joinTable("JoinTable", "KSTREAM-JOIN-", false, table, joiner, opts)
}

// LeftJoinTable is JoinTable that also emits the records without a row,
// joined with nil.
func (s *Stream) LeftJoinTable(table *Table, joiner ValueJoiner, opts ...Option) *Stream {
	return s.joinTable("LeftJoinTable", "KSTREAM-LEFTJOIN-", true, table, joiner, opts)
}

func (s *Stream) joinTable(op, prefix string, left bool, t *Table, joiner ValueJoiner, opts []Option) *Stream {
	o := s.b.resolveOptions(op, optName|optSerdes|optJoinSerdes, opts)
	s.need(op, fnArg{"joiner", joiner == nil})
	if t == nil || t.b != s.b {
		s.b.errorAt(blame{arg: "table"}, "%s: the table is nil or comes from another Builder", op)
		return s
	}
	if t.store == "" {
		s.b.errorAt(blame{arg: "table"}, "%s: the table is not materialized: join a table from Builder.Table or an aggregation, or give its operator Materialized", op)
		return s
	}
	t.materialize()
	in := s.withSerdes(o.joinKey, o.joinValue)
	if s.repartitionRequired {
		// As Kafka Streams: the repartition topic is named after the
		// join, else after the operator the stream comes from.
		base, by := o.name, blame{option: "Named"}
		if base == "" {
			base, by = s.node.name, blame{}
		}
		in = in.repartitionAs(base, by, operatorOptions{})
	}
	n := s.b.addNode(s.b.nameOrGenerate(o.name, prefix), processorNode)
	n.op = op
	n.stores = []string{t.store}
	n.makeProcessor = streamTableJoinFactory(t.store, joiner, left)
	connect(in.node, n)
	s.b.copartition(in.node, t.node)
	return &Stream{b: s.b, node: n, keySerde: orDefault(o.keySerde, in.keySerde), valueSerde: o.valueSerde}
}

// withSerdes is s with key and value serdes key and value where they are
// not nil.
func (s *Stream) withSerdes(key, value Serde) *Stream {
	out := *s
	out.keySerde, out.valueSerde = orDefault(key, s.keySerde), orDefault(value, s.valueSerde)
	return &out
}

// streamTableJoinProc looks each record's key up in the table's store.
type streamTableJoinProc struct {
	name   string
	table  *taskStore
	joiner ValueJoiner
	left   bool
	next   []processor
}

func streamTableJoinFactory(store string, joiner ValueJoiner, left bool) processorFactory {
	return func(name string, next []processor, t *task) processor {
		return &streamTableJoinProc{name: name, table: t.stores[store], joiner: joiner, left: left, next: next}
	}
}

func (p *streamTableJoinProc) process(t *task, r record) error {
	if r.key == nil || r.value == nil {
		// As Kafka Streams: such a record has nothing to join on.
		return nil
	}
	row, found, err := p.table.get(r.key)
	if err != nil {
		return t.processingError(p.name, fmt.Errorf("looking up %v in store %q: %w", r.key, p.table.spec.name, err))
	}
	if !found && !p.left {
		return nil
	}
	v, err := p.joiner(r.key, r.value, row)
	if err != nil {
		return t.processingError(p.name, err)
	}
	r.value = v
	return forward(t, p.next, r)
}

// Join joins t with other: a row whose key is in both tables has the
// value joiner makes of the two rows. The result changes whenever either
// table does, and a key whose result disappears (a row deleted) gets a
// deletion. A result carries the larger of the two rows' timestamps, as
// in Kafka Streams (the timestamp of the update alone where the other
// side has no row). It takes Named, WithSerdes (the result's serdes) and
// Materialized (a store for the result, which queries and stream-table
// joins need). Both tables must be materialized.
func (t *Table) Join(other *Table, joiner ValueJoiner, opts ...Option) *Table {
	return t.join("Table.Join", tableJoinInner, other, joiner, opts)
}

// LeftJoin is Join that keeps every row of t: where other has no row, the
// joiner gets nil for it.
func (t *Table) LeftJoin(other *Table, joiner ValueJoiner, opts ...Option) *Table {
	return t.join("Table.LeftJoin", tableJoinLeft, other, joiner, opts)
}

// OuterJoin is Join that keeps every row of either table, the missing
// side nil.
func (t *Table) OuterJoin(other *Table, joiner ValueJoiner, opts ...Option) *Table {
	return t.join("Table.OuterJoin", tableJoinOuter, other, joiner, opts)
}

type tableJoinKind uint8

const (
	tableJoinInner tableJoinKind = iota
	tableJoinLeft
	tableJoinOuter
)

// join lays the nodes out as Kafka Streams' KTableImpl does: a merge node
// (named first), a processor per side that looks the other side's store
// up, and the result store on the merge.
func (t *Table) join(op string, kind tableJoinKind, other *Table, joiner ValueJoiner, opts []Option) *Table {
	b := t.b
	o := b.resolveOptions(op, optName|optSerdes|optStore, opts)
	if joiner == nil {
		b.errorAt(blame{arg: "joiner"}, "%s: the function is nil", op)
	}
	if other == nil || other.b != b {
		b.errorAt(blame{arg: "other"}, "%s: the other table is nil or comes from another Builder", op)
		return t
	}
	for _, side := range []*Table{t, other} {
		if side.store == "" {
			var by blame // the receiver is no argument
			if side == other {
				by.arg = "other"
			}
			b.errorAt(by, "%s: table %q is not materialized: join tables from Builder.Table or aggregations, or give their operators Materialized", op, side.node.name)
			return t
		}
	}
	t.materialize()
	other.materialize()
	var spec *storeSpec
	if hasStoreOptions(opts) {
		spec = b.newStore(o.store, "KTABLE-MERGE-", t.keySerde, o.valueSerde)
	}
	mergeName := b.nameOrGenerate(o.name, "KTABLE-MERGE-")
	thisName, otherName := b.newName("KTABLE-JOINTHIS-"), b.newName("KTABLE-JOINOTHER-")
	if o.name != "" {
		thisName, otherName = o.name+"-join-this", o.name+"-join-other"
	}
	// Added in the order Kafka Streams' KTableKTableJoinNode adds them,
	// which Describe's order depends on.
	thisNode := b.addNode(thisName, processorNode)
	otherNode := b.addNode(otherName, processorNode)
	merge := b.addNode(mergeName, processorNode)
	// Each side looks the other side's store up; the other side is on
	// the right for this side's joiner, and on the left for the other's.
	thisNode.op, otherNode.op, merge.op = op, op, op
	thisNode.stores, otherNode.stores = []string{other.store}, []string{t.store}
	thisNode.makeProcessor = tableJoinFactory(other.store, joiner, kind, false)
	otherNode.makeProcessor = tableJoinFactory(t.store, joiner, kind, true)
	connect(t.node, thisNode)
	connect(other.node, otherNode)
	connect(thisNode, merge)
	connect(otherNode, merge)
	b.copartition(t.node, other.node)
	out := &Table{b: b, node: merge, keySerde: orDefault(o.keySerde, t.keySerde), valueSerde: o.valueSerde}
	if spec == nil {
		merge.makeProcessor = passFactory
		return out
	}
	merge.storeSpecs, merge.stores = []*storeSpec{spec}, []string{spec.name}
	merge.makeProcessor = tableSourceFactory(spec)
	out.store, out.valueSerde = spec.name, spec.valueSerde
	return out
}

// hasStoreOptions reports whether opts include Materialized.
func hasStoreOptions(opts []Option) bool {
	for _, o := range opts {
		if o.kind == optStore {
			return true
		}
	}
	return false
}

// tableJoinProc joins one side's row changes with the other side's
// current rows, as Kafka Streams' KTableKTable*Join processors do: the new
// row and the old row are each joined with the other side's row, so that
// downstream table operators get both the result and what it replaces.
type tableJoinProc struct {
	name   string
	other  *taskStore
	joiner ValueJoiner
	kind   tableJoinKind
	// reversed marks the other table's side, whose rows are the joiner's
	// right argument.
	reversed bool
	next     []processor
}

func tableJoinFactory(otherStore string, joiner ValueJoiner, kind tableJoinKind, reversed bool) processorFactory {
	return func(name string, next []processor, t *task) processor {
		return &tableJoinProc{name: name, other: t.stores[otherStore], joiner: joiner, kind: kind, reversed: reversed, next: next}
	}
}

func (p *tableJoinProc) process(t *task, r record) error {
	if r.key == nil || (r.value == nil && r.old == nil) {
		return nil
	}
	// getStamped, not get: a windowed table's store holds its rows
	// with their timestamps, and the joiner takes the row's value.
	row, rowTS, found, err := p.other.getStamped(r.key)
	if err != nil {
		return t.processingError(p.name, fmt.Errorf("looking up %v in store %q: %w", r.key, p.other.spec.name, err))
	}
	// Which of this side's values join: an inner join needs the other
	// row; a left join keeps every row of the left table, so its right
	// side joins only where there is a left row; an outer join keeps all.
	keep := p.kind == tableJoinOuter || (p.kind == tableJoinLeft && !p.reversed)
	if !found && !keep {
		return nil
	}
	join := func(v any) (any, error) {
		if v == nil && !(found && p.kind != tableJoinInner && (p.kind == tableJoinOuter || p.reversed)) {
			// No result: an absent row of an inner join, or of the
			// side whose rows the join is kept for.
			return nil, nil
		}
		if p.reversed {
			return p.joiner(r.key, row, v)
		}
		return p.joiner(r.key, v, row)
	}
	// As Kafka Streams: the result is as new as the newer of the rows it
	// joins.
	out := record{key: r.key, timestamp: rowTimestamp(r.timestamp, rowTS, found), headers: r.headers}
	if out.value, err = join(r.value); err != nil {
		return t.processingError(p.name, err)
	}
	if out.old, err = join(r.old); err != nil {
		return t.processingError(p.name, err)
	}
	if out.value == nil && out.old == nil {
		return nil
	}
	return forward(t, p.next, out)
}

// copartition records that the inputs of a join below nodes a and b must
// be co-partitioned.
func (b *Builder) copartition(a, c *graphNode) {
	b.copartitioned = append(b.copartitioned, [2]*graphNode{a, c})
}

// JoinWindows says which records of two streams join: a record of the
// left stream joins the right stream's records whose timestamps lie
// within [ts-Before, ts+After], so that a right record joins the left
// records within [ts-After, ts+Before]. Grace is how much longer each
// side's records are kept for records out of order: each side buffers its
// records for Before+After+Grace after the latest timestamp of that side,
// and a left or outer join emits an unmatched left record once stream time
// passes ts+After+Grace, a right one once it passes ts+Before+Grace. An
// out-of-order record joins whatever the other side still buffers; one
// older than its own side's retention is not buffered, and is counted and
// reported as late (LateRecordHook).
type JoinWindows struct{ Before, After, Grace time.Duration }

// JoinTimeDifference returns join windows of d on either side: records
// join when their timestamps are at most d apart.
func JoinTimeDifference(d, grace time.Duration) JoinWindows {
	return JoinWindows{Before: d, After: d, Grace: grace}
}

// joinSpec is JoinWindows in milliseconds.
type joinSpec struct{ before, after, grace int64 }

func (w JoinWindows) spec() (joinSpec, error) {
	before, err1 := millis("JoinWindows.Before", w.Before, 0)
	after, err2 := millis("JoinWindows.After", w.After, 0)
	grace, err3 := millis("JoinWindows.Grace", w.Grace, 0)
	return joinSpec{before: before, after: after, grace: grace}, errors.Join(err1, err2, err3)
}

// lookBack is how long after its timestamp a record of a side can still
// meet a record of the other: a left record's window ends After later, a
// right one's Before later.
func (w joinSpec) lookBack(left bool) int64 {
	if left {
		return w.after
	}
	return w.before
}

// closesAt is the stream time at which an unmatched record of a side
// with timestamp ts is due for its outer result: no partner within grace
// can come any more.
func (w joinSpec) closesAt(left bool, ts int64) int64 {
	return ts + w.lookBack(left) + w.grace + 1
}

// partners returns the time range of the other side's records that a
// record of a side with timestamp ts joins, clamped at zero as Kafka
// Streams clamps it.
func (w joinSpec) partners(left bool, ts int64) (from, to int64) {
	if left {
		return max(ts-w.before, 0), max(ts+w.after, 0)
	}
	return max(ts-w.after, 0), max(ts+w.before, 0)
}

// visibleFrom is the oldest timestamp a join buffer whose latest record
// is at latest still holds: Kafka Streams' window stores keep
// Before+After+Grace, the records after latest minus that span. Zero
// windows keep the latest timestamp, so that equal timestamps join.
func (w joinSpec) visibleFrom(latest int64) int64 {
	return latest - max(w.before+w.after+w.grace, 1) + 1
}
