package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// GroupedTable is a table re-grouped by a new key, the KGroupedTable of
// Kafka Streams. Its aggregations keep one aggregate per new key and
// correct it as rows change: a row's old value is subtracted before its
// new value is added, so a row that moves to another group leaves the old
// one, and an update that stays in its group changes its aggregate once,
// as in Kafka Streams. A result's timestamp is the newest of the rows in
// it.
type GroupedTable struct {
	stream *Stream
	name   string
	// repartitioned is the named repartition the first aggregation made,
	// which later ones read too, as in Kafka Streams.
	repartitioned *Stream
}

// tableChange is a re-grouped table row on its way to the aggregation:
// an old value to subtract, a new value to add, or both when the row
// stays under its new key, so that the aggregation makes one result of
// the update, as Kafka Streams does (a nil value is no step).
type tableChange struct {
	sub, add any
}

// GroupBy maps every row to a new key and value and groups by the new
// key; aggregations then repartition by it. It takes Named and WithSerdes
// (the serdes of the new key and value on the repartition topic).
func (t *Table) GroupBy(fn KeyValueMapper, opts ...Option) *GroupedTable {
	t.b.begin("Table.GroupBy")
	if fn == nil {
		t.b.errorAt(blame{arg: "fn"}, "Table.GroupBy: the function is nil")
	}
	o := t.b.resolveOptions("Table.GroupBy", optName|optSerdes, opts)
	n := t.b.addNode(t.b.nameOrGenerate(o.name, "KTABLE-SELECT-"), processorNode)
	n.op = "Table.GroupBy"
	n.makeProcessor = tableSelectFactory(fn)
	connect(t.node, n)
	t.sendOldValues()
	s := &Stream{b: t.b, node: n, keySerde: o.keySerde, valueSerde: changeSerde{inner: o.valueSerde}, repartitionRequired: true}
	return &GroupedTable{stream: s, name: o.name}
}

// aggregate adds the repartition by the new key and the aggregation
// behind it, named as Kafka Streams' KGroupedTableImpl names them: the
// store first, then the sink and source ("<Named>-sink", "<Named>-source"
// when named), then the aggregation. A table's repartition has no
// null-key filter: the select processor drops those records itself.
func (g *GroupedTable) aggregate(op, processorPrefix string, opts []Option, defaultValueSerde Serde, make func(spec *storeSpec) processorFactory) *Table {
	b := g.stream.b
	o := b.resolveOptions(op, optName|optStore, opts)
	spec := b.newStore(o.store, "KTABLE-AGGREGATE-", g.stream.keySerde, defaultValueSerde)
	sinkName := b.nameOrGenerate(suffixed(o.name, "-sink"), "KSTREAM-SINK-")
	sourceName := b.nameOrGenerate(suffixed(o.name, "-source"), "KSTREAM-SOURCE-")
	name := b.nameOrGenerate(o.name, processorPrefix)
	base, by := g.name, blame{}
	if base == "" {
		base, by = spec.name, storeNameBlame(o.store)
	}
	src := g.repartitioned
	if src == nil || g.name == "" {
		src = g.stream.repartitionThrough(base, by, sinkName, sourceName, operatorOptions{})
		g.repartitioned = src
	}
	return b.aggregationTable(op, name, spec, src, make)
}

// suffixed returns name+suffix, or "" when name is empty.
func suffixed(name, suffix string) string {
	if name == "" {
		return ""
	}
	return name + suffix
}

// Count counts the rows per new key. It takes Named and Materialized.
func (g *GroupedTable) Count(opts ...Option) *Table {
	return g.aggregate("GroupedTable.Count", "KTABLE-AGGREGATE-", opts, Int64, func(spec *storeSpec) processorFactory {
		return tableAggregateFactory(spec,
			func() (any, error) { return int64(0), nil },
			func(_, _, agg any) (any, error) { return agg.(int64) + 1, nil },
			func(_, _, agg any) (any, error) { return agg.(int64) - 1, nil })
	})
}

// Reduce keeps, per new key, an aggregate that adder grows by each new
// row value and subtractor shrinks by each replaced one. It takes Named
// and Materialized.
func (g *GroupedTable) Reduce(adder, subtractor Reducer, opts ...Option) *Table {
	g.stream.need("GroupedTable.Reduce", fnArg{"adder", adder == nil}, fnArg{"subtractor", subtractor == nil})
	inner := g.stream.valueSerde.(changeSerde).inner
	return g.aggregate("GroupedTable.Reduce", "KTABLE-REDUCE-", opts, inner, func(spec *storeSpec) processorFactory {
		return tableReduceFactory(spec, adder, subtractor)
	})
}

// Aggregate keeps, per new key, an aggregate that starts from init, grows
// by adder for each new row value and shrinks by subtractor for each
// replaced one. It takes Named and Materialized.
func (g *GroupedTable) Aggregate(init Initializer, adder, subtractor Aggregator, opts ...Option) *Table {
	g.stream.need("GroupedTable.Aggregate", fnArg{"init", init == nil}, fnArg{"adder", adder == nil}, fnArg{"subtractor", subtractor == nil})
	return g.aggregate("GroupedTable.Aggregate", "KTABLE-AGGREGATE-", opts, nil, func(spec *storeSpec) processorFactory {
		return tableAggregateFactory(spec, init, adder, subtractor)
	})
}

// tableSelectProc turns a row change into a subtraction of the old row
// and an addition of the new one, each under its new key: one change
// when both keys are equal, else the subtraction first. A row whose new
// key is nil is dropped.
type tableSelectProc struct {
	name string
	fn   KeyValueMapper
	next []processor
}

func tableSelectFactory(fn KeyValueMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor {
		return &tableSelectProc{name: name, fn: fn, next: next}
	}
}

func (p *tableSelectProc) process(t *task, r record) error {
	mapped := func(v any) (k, nv any, err error) {
		if v == nil {
			return nil, nil, nil
		}
		if k, nv, err = p.fn(r.key, v); err != nil {
			return nil, nil, t.processingError(p.name, err)
		}
		if k == nil || nv == nil {
			// As Kafka Streams: a row without a new key or value has
			// no group to go to (and no partition on the topic).
			return nil, nil, nil
		}
		return k, nv, nil
	}
	oldKey, oldValue, err := mapped(r.old)
	if err != nil {
		return err
	}
	newKey, newValue, err := mapped(r.value)
	if err != nil {
		return err
	}
	emit := func(k any, c tableChange) error {
		return forward(t, p.next, record{key: k, value: c, timestamp: r.timestamp, headers: r.headers})
	}
	if oldKey != nil && newKey != nil && sameKey(oldKey, newKey) {
		return emit(newKey, tableChange{sub: oldValue, add: newValue})
	}
	if oldKey != nil {
		if err := emit(oldKey, tableChange{sub: oldValue}); err != nil {
			return err
		}
	}
	if newKey != nil {
		return emit(newKey, tableChange{add: newValue})
	}
	return nil
}

// sameKey reports whether two new keys are equal, as the keys Go
// compares; keys of other types (a slice) are never the same.
func sameKey(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// tableAggregateProc applies adder or subtractor to a key's aggregate.
type tableAggregateProc struct {
	name              string
	store             *taskStore
	init              Initializer
	adder, subtractor Aggregator
}

func tableAggregateFactory(spec *storeSpec, init Initializer, adder, subtractor Aggregator) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		return &tableAggregateProc{name: name, store: st, init: init, adder: adder, subtractor: subtractor}
	}
}

func (p *tableAggregateProc) process(t *task, r record) error {
	c, ok := r.value.(tableChange)
	if !ok || r.key == nil || (c.sub == nil && c.add == nil) {
		return nil
	}
	old, oldTS, found, err := p.store.getStamped(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if !found && c.add == nil {
		return nil // as Kafka Streams: nothing to subtract from
	}
	next := old
	if !found {
		if next, err = p.init(); err != nil {
			return t.processingError(p.name, err)
		}
	}
	if c.sub != nil && found {
		if next, err = p.subtractor(r.key, c.sub, next); err != nil {
			return t.processingError(p.name, err)
		}
	}
	if c.add != nil {
		if next, err = p.adder(r.key, c.add, next); err != nil {
			return t.processingError(p.name, err)
		}
	}
	return p.store.put(t, r.key, next, old, found, rowTimestamp(r.timestamp, oldTS, found))
}

func tableReduceFactory(spec *storeSpec, adder, subtractor Reducer) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		return &tableReduceProc{name: name, store: st, adder: adder, subtractor: subtractor}
	}
}

// tableReduceProc is tableAggregateProc for Reduce: a key's first value is
// its aggregate, and a subtraction that empties nothing leaves none.
type tableReduceProc struct {
	name              string
	store             *taskStore
	adder, subtractor Reducer
}

func (p *tableReduceProc) process(t *task, r record) error {
	c, ok := r.value.(tableChange)
	if !ok || r.key == nil {
		return nil
	}
	old, oldTS, found, err := p.store.getStamped(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	next, has := old, found
	if c.sub != nil && has {
		if next, err = p.subtractor(next, c.sub); err != nil {
			return t.processingError(p.name, err)
		}
	}
	switch {
	case c.add != nil && has:
		next, err = p.adder(next, c.add)
	case c.add != nil:
		next, has = c.add, true
	}
	if err != nil {
		return t.processingError(p.name, err)
	}
	if !has {
		return nil // a subtraction from nothing leaves nothing
	}
	return p.store.put(t, r.key, next, old, found, rowTimestamp(r.timestamp, oldTS, found))
}

// changeSerde carries tableChange values over a repartition topic: a flag
// byte (0 add, 1 subtract) before the value in its own serde, or for both
// (2) the added value's length as a uvarint, the added value, then the
// subtracted one. A nil inner serde means the Config's default, filled in
// when a task starts.
type changeSerde struct {
	inner Serde
}

func (s changeSerde) Name() string {
	if s.inner == nil {
		return "change"
	}
	return "change<" + s.inner.Name() + ">"
}

func (s changeSerde) Serialize(topic string, v any) ([]byte, error) {
	c, ok := v.(tableChange)
	if !ok {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("cannot serialize %T, want a table change", v)}
	}
	switch {
	case c.sub != nil && c.add != nil:
		add, err := s.inner.Serialize(topic, c.add)
		if err != nil {
			return nil, err
		}
		sub, err := s.inner.Serialize(topic, c.sub)
		if err != nil {
			return nil, err
		}
		out := binary.AppendUvarint([]byte{2}, uint64(len(add)))
		return append(append(out, add...), sub...), nil
	case c.sub != nil:
		b, err := s.inner.Serialize(topic, c.sub)
		return append([]byte{1}, b...), err
	}
	b, err := s.inner.Serialize(topic, c.add)
	return append([]byte{0}, b...), err
}

func (s changeSerde) Deserialize(topic string, b []byte) (any, error) {
	if len(b) == 0 || b[0] > 2 {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New("missing or unknown change flag")}
	}
	if b[0] < 2 {
		v, err := s.inner.Deserialize(topic, b[1:])
		if err != nil {
			return nil, err
		}
		if b[0] == 1 {
			return tableChange{sub: v}, nil
		}
		return tableChange{add: v}, nil
	}
	n, size := binary.Uvarint(b[1:])
	if size <= 0 || n > uint64(len(b)-1-size) {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New("truncated change")}
	}
	rest := b[1+size:]
	add, err := s.inner.Deserialize(topic, rest[:n])
	if err != nil {
		return nil, err
	}
	sub, err := s.inner.Deserialize(topic, rest[n:])
	if err != nil {
		return nil, err
	}
	return tableChange{sub: sub, add: add}, nil
}
