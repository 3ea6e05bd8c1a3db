package streams

import (
	"errors"
	"fmt"
)

// GroupedTable is a table re-grouped by a new key, the KGroupedTable of
// Kafka Streams. Its aggregations keep one aggregate per new key and
// correct it as rows change: a row's old value is subtracted before its
// new value is added, so a row that moves to another group leaves the old
// one.
type GroupedTable struct {
	stream *Stream
	name   string
}

// tableChange is a re-grouped table row on its way to the aggregation:
// a value to add, or an old value to subtract.
type tableChange struct {
	value    any
	subtract bool
}

// GroupBy maps every row to a new key and value and groups by the new
// key; aggregations then repartition by it. It takes Named and WithSerdes
// (the serdes of the new key and value on the repartition topic).
func (t *Table) GroupBy(fn KeyValueMapper, opts ...Option) *GroupedTable {
	if fn == nil {
		t.b.errorf("Table.GroupBy: the function is nil")
	}
	o := t.b.resolveOptions("Table.GroupBy", optName|optSerdes, opts)
	n := t.b.addNode(t.b.nameOrGenerate(o.name, "KTABLE-SELECT-"), processorNode)
	n.op = "Table.GroupBy"
	n.makeProcessor = tableSelectFactory(fn)
	connect(t.node, n)
	s := &Stream{b: t.b, node: n, keySerde: o.keySerde, valueSerde: changeSerde{inner: o.valueSerde}, repartitionRequired: true}
	return &GroupedTable{stream: s, name: o.name}
}

func (g *GroupedTable) aggregate(op, prefix string, opts []Option, defaultValueSerde Serde, make func(spec *storeSpec) processorFactory) *Table {
	gs := &GroupedStream{stream: g.stream, name: g.name}
	return gs.aggregate(op, prefix, opts, defaultValueSerde, make)
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
	g.stream.need("GroupedTable.Reduce", adder == nil || subtractor == nil)
	inner := g.stream.valueSerde.(changeSerde).inner
	return g.aggregate("GroupedTable.Reduce", "KTABLE-REDUCE-", opts, inner, func(spec *storeSpec) processorFactory {
		return tableReduceFactory(spec, adder, subtractor)
	})
}

// Aggregate keeps, per new key, an aggregate that starts from init, grows
// by adder for each new row value and shrinks by subtractor for each
// replaced one. It takes Named and Materialized.
func (g *GroupedTable) Aggregate(init Initializer, adder, subtractor Aggregator, opts ...Option) *Table {
	g.stream.need("GroupedTable.Aggregate", init == nil || adder == nil || subtractor == nil)
	return g.aggregate("GroupedTable.Aggregate", "KTABLE-AGGREGATE-", opts, nil, func(spec *storeSpec) processorFactory {
		return tableAggregateFactory(spec, init, adder, subtractor)
	})
}

// tableSelectProc turns a row change into a subtraction of the old row
// and an addition of the new one, each under its new key.
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
	emit := func(v any, subtract bool) error {
		k, nv, err := p.fn(r.key, v)
		if err != nil {
			return t.processingError(p.name, err)
		}
		return forward(t, p.next, record{key: k, value: tableChange{value: nv, subtract: subtract}, timestamp: r.timestamp, headers: r.headers})
	}
	if r.old != nil {
		if err := emit(r.old, true); err != nil {
			return err
		}
	}
	if r.value != nil {
		return emit(r.value, false)
	}
	return nil
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
	if !ok || r.key == nil || c.value == nil {
		return nil
	}
	old, oldTS, found, err := p.store.getStamped(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	cur := old
	if !found {
		if cur, err = p.init(); err != nil {
			return t.processingError(p.name, err)
		}
	}
	fn := p.adder
	if c.subtract {
		fn = p.subtractor
	}
	next, err := fn(r.key, c.value, cur)
	if err != nil {
		return t.processingError(p.name, err)
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
	if !ok || r.key == nil || c.value == nil {
		return nil
	}
	old, oldTS, found, err := p.store.getStamped(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	var next any
	switch {
	case !found && c.subtract:
		return nil
	case !found:
		next = c.value
	case c.subtract:
		next, err = p.subtractor(old, c.value)
	default:
		next, err = p.adder(old, c.value)
	}
	if err != nil {
		return t.processingError(p.name, err)
	}
	return p.store.put(t, r.key, next, old, found, rowTimestamp(r.timestamp, oldTS, found))
}

// changeSerde carries tableChange values over a repartition topic: a flag
// byte (0 add, 1 subtract) before the value in its own serde. A nil inner
// serde means the Config's default, filled in when a task starts.
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
	b, err := s.inner.Serialize(topic, c.value)
	if err != nil {
		return nil, err
	}
	flag := byte(0)
	if c.subtract {
		flag = 1
	}
	return append([]byte{flag}, b...), nil
}

func (s changeSerde) Deserialize(topic string, b []byte) (any, error) {
	if len(b) == 0 || b[0] > 1 {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New("missing or unknown change flag")}
	}
	v, err := s.inner.Deserialize(topic, b[1:])
	if err != nil {
		return nil, err
	}
	return tableChange{value: v, subtract: b[0] == 1}, nil
}
