package streams

// Function types of the aggregations. Returning an error sends the record
// to the processing error handler.
type (
	// Initializer returns the aggregate of a key before its first record.
	Initializer func() (any, error)
	// Aggregator folds a record's value into the key's aggregate.
	Aggregator func(key, value, aggregate any) (any, error)
	// Reducer combines the key's aggregate with a new value of the same
	// type.
	Reducer func(aggregate, value any) (any, error)
)

// Table is a changelog stream read as a table: the latest value per key,
// the KTable of Kafka Streams. Aggregations return tables; Builder.Table
// reads one from a topic. A nil value deletes its key.
type Table struct {
	b    *Builder
	node *graphNode
	// store is the queryable store behind the table, if it has one.
	store                string
	keySerde, valueSerde Serde
	// parent is the table a Filter or MapValues derived this one from.
	parent *Table
}

// storeSpec declares a key-value store of a stateful node.
type storeSpec struct {
	name                 string
	logged, cached       bool
	keySerde, valueSerde Serde
	// window is set for a window or session store, whose keySerde is the
	// grouping key's; retention is in milliseconds.
	window    *windowSpec
	emitFinal bool
	retention int64
	// lazy marks a store Kafka Streams would not materialize unless a
	// later operator needs it: a source table's, or a Filter's or
	// MapValues' with Materialized but no store name. Braid keeps the
	// store (its table processors rely on the old values it gives), but
	// Describe leaves it out and it is not cached, as there is no store
	// to cache in Kafka Streams. An operator that needs it (a join, a
	// grouping) clears lazy: see Table.materialize.
	lazy bool
	// timestamped keeps each key-value row's timestamp with it (see
	// taskStore.stamped); set for every store the DSL declares, ignored
	// for windowed ones, which keep timestamps in their values.
	timestamped bool
}

// StoreName returns the name of the store the table is materialized in,
// for interactive queries; "" when it has none.
func (t *Table) StoreName() string { return t.store }

// newStore declares the store of a stateful operator: the given options,
// else a generated name with prefix, as Kafka Streams names it.
func (b *Builder) newStore(o StoreOptions, prefix string, keySerde, valueSerde Serde) *storeSpec {
	spec := &storeSpec{name: o.Name, logged: !o.LoggingDisabled, cached: !o.CachingDisabled, keySerde: keySerde, valueSerde: valueSerde, timestamped: true}
	if spec.name == "" {
		spec.name = b.newName(prefix + "STATE-STORE-")
	} else if err := validTopicName(spec.name); err != nil {
		b.errorAt(storeNameBlame(o), "store %q: its name is part of its changelog topic: %v", spec.name, err)
	}
	if o.KeySerde != nil {
		spec.keySerde = o.KeySerde
	}
	if o.Retention != 0 {
		b.errorAt(blame{option: "Materialized", arg: "Retention"}, "store %q: Retention applies to windowed stores only", spec.name)
	}
	if o.ValueSerde != nil {
		spec.valueSerde = o.ValueSerde
	}
	return spec
}

// aggregate adds a stateful aggregation below the grouped stream.
func (g *GroupedStream) aggregate(op, prefix string, opts []Option, defaultValueSerde Serde, make func(spec *storeSpec) processorFactory) *Table {
	b := g.stream.b
	o := b.resolveOptions(op, optName|optStore, opts)
	spec := b.newStore(o.store, prefix, g.stream.keySerde, defaultValueSerde)
	name := b.nameOrGenerate(o.name, prefix)
	src := g.source(spec.name, storeNameBlame(o.store))
	return b.aggregationTable(op, name, spec, src, make)
}

// aggregationTable adds the aggregation node name below src, with the
// store spec, and returns its table: what grouped streams and grouped
// tables share once each has found its source.
func (b *Builder) aggregationTable(op, name string, spec *storeSpec, src *Stream, make func(spec *storeSpec) processorFactory) *Table {
	n := b.addNode(name, processorNode)
	n.op = op
	n.storeSpecs = []*storeSpec{spec}
	n.stores = []string{spec.name}
	n.makeProcessor = make(spec)
	connect(src.node, n)
	if spec.keySerde == nil {
		spec.keySerde = src.keySerde
	}
	return &Table{b: b, node: n, store: spec.name, keySerde: spec.keySerde, valueSerde: spec.valueSerde}
}

// Count counts the records per key into a table of int64. It takes Named
// and Materialized (the store's value serde defaults to Int64).
func (g *GroupedStream) Count(opts ...Option) *Table {
	g.stream.b.burnAnonymousStore(opts, "KSTREAM-AGGREGATE-")
	return g.aggregate("Count", "KSTREAM-AGGREGATE-", opts, Int64, func(spec *storeSpec) processorFactory {
		return countFactory(spec)
	})
}

// Reduce combines the values of each key with fn; the first value is the
// key's first aggregate. It takes Named and Materialized (the value serde
// defaults to the stream's).
func (g *GroupedStream) Reduce(fn Reducer, opts ...Option) *Table {
	g.stream.need("Reduce", fnArg{"fn", fn == nil})
	return g.aggregate("Reduce", "KSTREAM-REDUCE-", opts, g.stream.valueSerde, func(spec *storeSpec) processorFactory {
		return reduceFactory(spec, fn)
	})
}

// Aggregate folds the values of each key into an aggregate that starts
// from init. It takes Named and Materialized; give the store a value serde
// for the aggregate's type (default: the Config's default value serde).
func (g *GroupedStream) Aggregate(init Initializer, agg Aggregator, opts ...Option) *Table {
	g.stream.need("Aggregate", fnArg{"init", init == nil}, fnArg{"agg", agg == nil})
	return g.aggregate("Aggregate", "KSTREAM-AGGREGATE-", opts, nil, func(spec *storeSpec) processorFactory {
		return aggregateFactory(spec, init, agg)
	})
}

// Table reads topic as a table: each record upserts its key, a nil value
// deletes it. It takes Named (the table's processor; its source is then
// "<name>-source", as in Kafka Streams), WithSerdes, WithTimestamps and
// Materialized.
func (b *Builder) Table(topic string, opts ...Option) *Table {
	o := b.resolveOptions("Table", optName|optSerdes|optTimestamps|optStore, opts)
	spec := b.newStore(o.store, topic+"-", o.keySerde, o.valueSerde)
	// As Kafka Streams: Named names the table's processor, and its
	// source "<name>-source".
	srcOpts := []Option{WithSerdes(o.keySerde, o.valueSerde), WithTimestamps(o.timestamps)}
	if o.name != "" {
		srcOpts = append(srcOpts, Named(o.name+"-source"))
	}
	s := b.source("Table", "topic", []string{topic}, srcOpts)
	n := b.addNode(b.nameOrGenerate(o.name, "KTABLE-SOURCE-"), processorNode)
	n.op = "Table"
	n.storeSpecs = []*storeSpec{spec}
	n.stores = []string{spec.name}
	n.makeProcessor = tableSourceFactory(spec)
	connect(s.node, n)
	spec.lazy = o.store.Name == ""
	return &Table{b: b, node: n, store: spec.name, keySerde: o.keySerde, valueSerde: o.valueSerde}
}

// ToStream returns the table's updates as a stream: one record per
// change, a deletion as a nil value. It takes Named.
func (t *Table) ToStream(opts ...Option) *Stream {
	o := t.b.resolveOptions("ToStream", optName, opts)
	n := t.b.addNode(t.b.nameOrGenerate(o.name, "KTABLE-TOSTREAM-"), processorNode)
	n.op = "ToStream"
	n.makeProcessor = passFactory
	connect(t.node, n)
	return &Stream{b: t.b, node: n, keySerde: t.keySerde, valueSerde: t.valueSerde}
}

// To writes the table's updates to topic, as ToStream().To(topic, opts...).
func (t *Table) To(topic string, opts ...Option) { t.ToStream().To(topic, opts...) }

// Filter keeps the rows pred accepts; a row that stops passing is deleted
// downstream. It takes Named and Materialized: a materialized table keeps
// its rows in a store of its own, so that it can be joined and queried.
func (t *Table) Filter(pred Predicate, opts ...Option) *Table {
	t.b.begin("Table.Filter")
	if pred == nil {
		t.b.errorAt(blame{arg: "pred"}, "Table.Filter: the function is nil")
	}
	return t.derive("Filter", "KTABLE-FILTER-", opts, t.valueSerde, tableFilterFactory(pred))
}

// MapValues maps every row's value. It takes Named and Materialized (see
// Filter); a materialized result needs a store value serde for the mapped
// type unless the Config's default serde fits it.
func (t *Table) MapValues(fn ValueMapper, opts ...Option) *Table {
	t.b.begin("Table.MapValues")
	if fn == nil {
		t.b.errorAt(blame{arg: "fn"}, "Table.MapValues: the function is nil")
	}
	return t.derive("MapValues", "KTABLE-MAPVALUES-", opts, nil, tableMapValuesFactory(fn))
}

// derive adds a processor that turns the table's changes into the derived
// table's. With Materialized, the derived rows are also kept in a store of
// their own, as Kafka Streams keeps them: the table can then be joined and
// queried, and its changes go downstream from the store, so that repeated
// updates of a key between commits are sent once when it is cached.
func (t *Table) derive(op, prefix string, opts []Option, valueSerde Serde, make processorFactory) *Table {
	o := t.b.resolveOptions("Table."+op, optName|optStore, opts)
	var spec *storeSpec
	if o.storeSet {
		// Before the processor's name, as Kafka Streams generates them:
		// "KTABLE-FILTER-STATE-STORE-0000000003", then
		// "KTABLE-FILTER-0000000004".
		spec = t.b.newStore(o.store, prefix, t.keySerde, valueSerde)
		spec.lazy = o.store.Name == ""
	}
	n := t.b.addNode(t.b.nameOrGenerate(o.name, prefix), processorNode)
	n.op = "Table." + op
	n.makeProcessor = make
	connect(t.node, n)
	out := *t
	out.node, out.store, out.valueSerde, out.parent = n, "", valueSerde, t
	if spec != nil {
		n.storeSpecs, n.stores = []*storeSpec{spec}, []string{spec.name}
		n.makeProcessor = materializedTableFactory(spec, make)
		out.store = spec.name
		out.valueSerde = orDefault(o.store.ValueSerde, valueSerde)
	}
	return &out
}

// ownStore returns the store the table's processor keeps, if any.
func (t *Table) ownStore() *storeSpec {
	for _, spec := range t.node.storeSpecs {
		if spec.name == t.store {
			return spec
		}
	}
	return nil
}

// materialize is called by an operator that looks the table's rows up (a
// join): Kafka Streams then materializes a source table's store, so
// Describe lists it. A lazy store of a Filter or MapValues is listed too,
// as Braid's lookups read it (Kafka Streams reads through to the parent's).
func (t *Table) materialize() {
	if spec := t.ownStore(); spec != nil {
		spec.lazy = false
	}
}

// sendOldValues is called by an operator that needs each change's old
// value (a grouping): as Kafka Streams, the nearest table that keeps a
// store gives them, and a source table is materialized for that.
func (t *Table) sendOldValues() {
	spec := t.ownStore()
	switch {
	case spec != nil && (!spec.lazy || t.parent == nil):
		spec.lazy = false
	case t.parent != nil:
		t.parent.sendOldValues()
	}
}
