package streams

// aggregateProc folds records into a per-key aggregate kept in a store.
type aggregateProc struct {
	name  string
	store *taskStore
	init  Initializer
	agg   Aggregator
	next  []processor
	// counts is set for Count, whose aggregator adds one to an int64: a
	// cached count is incremented in place (updateInt64) rather than
	// through agg, which would box each new count into an interface.
	counts bool
}

func aggregateFactory(spec *storeSpec, init Initializer, agg Aggregator) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		return &aggregateProc{name: name, store: st, init: init, agg: agg, next: next}
	}
}

// countFactory is aggregateFactory for Count.
func countFactory(spec *storeSpec) processorFactory {
	agg := aggregateFactory(spec,
		func() (any, error) { return int64(0), nil },
		func(_, _, agg any) (any, error) { return agg.(int64) + 1, nil })
	return func(name string, next []processor, t *task) processor {
		p := agg(name, next, t).(*aggregateProc)
		p.counts = true
		return p
	}
}

func (p *aggregateProc) process(t *task, r record) error {
	if r.key == nil || r.value == nil {
		// As Kafka Streams: a record without key or value cannot be
		// aggregated; it is skipped, not an error.
		return skipNullKeyOrValue(t, p.name, r)
	}
	kb, err := p.store.keyBytes(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if e := p.store.cachedTyped(kb); e != nil {
		return p.updateCached(t, r, e)
	}
	old, oldTS, found, err := p.store.getBytesStamped(kb)
	if err != nil {
		return t.processingError(p.name, err)
	}
	cur := old
	if !found {
		if cur, err = p.init(); err != nil {
			return t.processingError(p.name, err)
		}
	}
	next, err := p.agg(r.key, r.value, cur)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if !found {
		old = nil
	}
	vb, err := p.store.valueBytes(t, next)
	if err != nil {
		return err
	}
	return p.store.putBytes(t, kb, r.key, next, vb, old, found, rowTimestamp(r.timestamp, oldTS, found))
}

// updateCached folds r into its key's cached row e (see
// taskStore.cachedTyped), with no second lookup of the key.
func (p *aggregateProc) updateCached(t *task, r record, e *cacheEntry) error {
	if n, ok := e.value.(int64); ok && p.counts {
		return p.store.updateInt64(t, e, n+1, p.store.cachedTimestamp(e, r.timestamp))
	}
	next, err := p.agg(r.key, r.value, e.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	return p.store.update(t, e, next, p.store.cachedTimestamp(e, r.timestamp))
}

// rowTimestamp is the timestamp of an aggregate that a record with
// timestamp ts updates: the largest of its records', as in Kafka Streams
// (KIP-258), so that an out-of-order record does not move the row back in
// time. found says whether the row existed, with timestamp rowTS.
func rowTimestamp(ts, rowTS int64, found bool) int64 {
	if found {
		return max(ts, rowTS)
	}
	return ts
}

// reduceProc combines each key's values with a Reducer.
type reduceProc struct {
	name   string
	store  *taskStore
	reduce Reducer
}

func reduceFactory(spec *storeSpec, fn Reducer) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		return &reduceProc{name: name, store: st, reduce: fn}
	}
}

func (p *reduceProc) process(t *task, r record) error {
	if r.key == nil || r.value == nil {
		return skipNullKeyOrValue(t, p.name, r)
	}
	kb, err := p.store.keyBytes(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if e := p.store.cachedTyped(kb); e != nil {
		next, err := p.reduce(e.value, r.value)
		if err != nil {
			return t.processingError(p.name, err)
		}
		return p.store.update(t, e, next, p.store.cachedTimestamp(e, r.timestamp))
	}
	old, oldTS, found, err := p.store.getBytesStamped(kb)
	if err != nil {
		return t.processingError(p.name, err)
	}
	next := r.value
	if found {
		if next, err = p.reduce(old, r.value); err != nil {
			return t.processingError(p.name, err)
		}
	}
	vb, err := p.store.valueBytes(t, next)
	if err != nil {
		return err
	}
	return p.store.putBytes(t, kb, r.key, next, vb, old, found, rowTimestamp(r.timestamp, oldTS, found))
}

// tableSourceProc upserts a topic's records into the table's store.
type tableSourceProc struct {
	name  string
	store *taskStore
}

func tableSourceFactory(spec *storeSpec) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		return &tableSourceProc{name: name, store: st}
	}
}

func (p *tableSourceProc) process(t *task, r record) error {
	if r.key == nil {
		return nil
	}
	old, found, err := p.store.get(r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if r.value == nil && !found {
		return nil // deleting what is not there changes nothing
	}
	return p.store.put(t, r.key, r.value, old, found, r.timestamp)
}

// materializedTableFactory makes a derived table's processor write its
// changes into the table's store, which sends them downstream: the derived
// processor's next is a tableSourceProc on the store.
func materializedTableFactory(spec *storeSpec, derived processorFactory) processorFactory {
	write := tableSourceFactory(spec)
	return func(name string, next []processor, t *task) processor {
		return derived(name, []processor{write(name, next, t)}, t)
	}
}

// tableFilterProc passes rows pred accepts; a row that no longer passes
// becomes a deletion downstream, as in Kafka Streams.
type tableFilterProc struct {
	name string
	pred Predicate
	next []processor
}

func tableFilterFactory(pred Predicate) processorFactory {
	return func(name string, next []processor, _ *task) processor {
		return &tableFilterProc{name: name, pred: pred, next: next}
	}
}

func (p *tableFilterProc) process(t *task, r record) error {
	passes := func(v any) (bool, error) {
		if v == nil {
			return false, nil
		}
		return p.pred(r.key, v)
	}
	newOK, err := passes(r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	oldOK, err := passes(r.old)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if !newOK && !oldOK {
		return nil
	}
	if !newOK {
		r.value = nil
	}
	if !oldOK {
		r.old = nil
	}
	return forward(t, p.next, r)
}

// tableMapValuesProc maps new and old values of each row.
type tableMapValuesProc struct {
	name string
	fn   ValueMapper
	next []processor
}

func tableMapValuesFactory(fn ValueMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor {
		return &tableMapValuesProc{name: name, fn: fn, next: next}
	}
}

func (p *tableMapValuesProc) process(t *task, r record) error {
	var err error
	if r.value != nil {
		if r.value, err = p.fn(r.value); err != nil {
			return t.processingError(p.name, err)
		}
	}
	if r.old != nil {
		if r.old, err = p.fn(r.old); err != nil {
			return t.processingError(p.name, err)
		}
	}
	return forward(t, p.next, r)
}
