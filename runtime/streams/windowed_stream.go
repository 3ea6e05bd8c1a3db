package streams

import (
	"fmt"
	"time"
)

// Merger combines two session aggregates of one key when a record bridges
// their sessions.
type Merger func(key, agg1, agg2 any) (any, error)

// WindowedStream is a grouped stream cut into windows, the
// TimeWindowedKStream and SessionWindowedKStream of Kafka Streams. Its
// aggregations return tables keyed by Windowed, whose key serde is
// TimeWindowedSerde or SessionWindowedSerde over the grouping key's.
type WindowedStream struct {
	g       *GroupedStream
	windows Windows
	emit    EmitStrategy
	// merger combines session aggregates; Count and Reduce bring their own.
	merger Merger
}

// WindowedBy cuts the grouped stream into windows: TimeWindows (see
// Tumbling and Hopping), SlidingWindows or SessionWindows.
func (g *GroupedStream) WindowedBy(windows Windows) *WindowedStream {
	g.stream.b.begin("WindowedBy")
	if windows == nil {
		g.stream.b.errorAt(blame{arg: "windows"}, "WindowedBy: the windows are nil")
	}
	return &WindowedStream{g: g, windows: windows}
}

// Emit sets when results are sent: EmitOnWindowUpdate (the default) or
// EmitOnWindowClose.
func (w *WindowedStream) Emit(strategy EmitStrategy) *WindowedStream {
	out := *w
	out.emit = strategy
	return &out
}

// MergeSessionsWith sets how Aggregate merges two sessions' aggregates;
// Aggregate over session windows needs it.
func (w *WindowedStream) MergeSessionsWith(m Merger) *WindowedStream {
	out := *w
	out.merger = m
	return &out
}

// Count counts each key's records per window into a table of int64. It
// takes Named and Materialized. As in Kafka Streams, a record with a nil
// value counts over time and session windows, not over sliding windows;
// one with a nil key is skipped (see ErrNullKey).
func (w *WindowedStream) Count(opts ...Option) *Table {
	inc := func(_, _, agg any) (any, error) { return agg.(int64) + 1, nil }
	sum := func(_, a, b any) (any, error) { return a.(int64) + b.(int64), nil }
	if _, sliding := w.windows.(SlidingWindows); !sliding {
		// Kafka Streams' sliding windows do not burn the name.
		w.g.stream.b.burnAnonymousStore(opts, "KSTREAM-AGGREGATE-")
	}
	return w.aggregate("Count", "KSTREAM-AGGREGATE-", opts, Int64,
		aggregation{init: func() (any, error) { return int64(0), nil }, add: inc, merge: sum, counts: true})
}

// Reduce combines each key's values per window with fn; the first value
// is the window's first aggregate. It takes Named and Materialized. Over
// time and session windows fn gets nil values too, as in Kafka Streams
// (see ErrNullValue).
func (w *WindowedStream) Reduce(fn Reducer, opts ...Option) *Table {
	w.g.stream.need("Reduce", fnArg{"fn", fn == nil})
	add := func(_, v, agg any) (any, error) { return fn(agg, v) }
	merge := func(_, a, b any) (any, error) { return fn(a, b) }
	return w.aggregate("Reduce", "KSTREAM-REDUCE-", opts, w.g.stream.valueSerde,
		aggregation{add: add, merge: merge})
}

// Aggregate folds each key's values per window into an aggregate that
// starts from init. Over session windows it needs MergeSessionsWith. Over
// time and session windows agg gets nil values too, as in Kafka Streams
// (see ErrNullValue). It takes Named and Materialized; give the store a
// value serde for the aggregate's type (default: the Config's default
// value serde).
func (w *WindowedStream) Aggregate(init Initializer, agg Aggregator, opts ...Option) *Table {
	w.g.stream.need("Aggregate", fnArg{"init", init == nil}, fnArg{"agg", agg == nil})
	if _, ok := w.windows.(SessionWindows); ok && w.merger == nil {
		w.g.stream.b.errorf("Aggregate over session windows: no Merger; call MergeSessionsWith")
	}
	return w.aggregate("Aggregate", "KSTREAM-AGGREGATE-", opts, nil,
		aggregation{init: init, add: agg, merge: w.merger})
}

// aggregation is what a windowed processor folds with. A nil init starts
// each window from its first value (Reduce).
type aggregation struct {
	init  Initializer
	add   Aggregator
	merge Merger
	// counts is set for Count, whose add adds one to an int64: a time
	// window's cached count is incremented in place (updateStampedCount)
	// rather than through add.
	counts bool
}

// first returns the aggregate of a window holding only value.
func (a aggregation) first(key, value any) (any, error) {
	if a.init == nil {
		return value, nil
	}
	agg, err := a.init()
	if err != nil {
		return nil, err
	}
	return a.add(key, value, agg)
}

func (w *WindowedStream) aggregate(op, prefix string, opts []Option, defaultValueSerde Serde, agg aggregation) *Table {
	b := w.g.stream.b
	op = "Windowed." + op
	o := b.resolveOptions(op, optName|optStore, opts)
	retention := o.store.Retention
	o.store.Retention = 0
	spec := b.newStore(o.store, prefix, w.g.stream.keySerde, defaultValueSerde)
	if w.windows == nil {
		return &Table{b: b, node: w.g.stream.node}
	}
	ws, err := w.windows.spec()
	if err != nil {
		b.errorAt(blame{arg: "windows"}, "%s: %v", op, err)
	}
	spec.window, spec.emitFinal = &ws, w.emit == EmitOnWindowClose
	spec.retention = ws.defaultRetention()
	if retention != 0 {
		r, err := millis("StoreOptions.Retention", retention, 1)
		switch {
		case err != nil:
			b.errorAt(blame{option: "Materialized", arg: "Retention"}, "%s: store %q: %v", op, spec.name, err)
		case r < spec.retention:
			b.errorAt(blame{option: "Materialized", arg: "Retention"}, "%s: store %q: retention %v is shorter than the windows stay open (%v)",
				op, spec.name, retention, time.Duration(spec.retention)*time.Millisecond)
		default:
			spec.retention = r
		}
	}
	name := b.nameOrGenerate(o.name, prefix)
	src := w.g.source(spec.name, storeNameBlame(o.store))
	n := b.addNode(name, processorNode)
	n.op = op
	n.storeSpecs = []*storeSpec{spec}
	n.stores = []string{spec.name}
	// Kafka Streams' session store keeps a session gap plus grace after
	// its end unless told otherwise, one less than Braid's default, which
	// keeps every session that is not closed: sessions merge by Kafka's.
	kafkaRetention := spec.retention
	if retention == 0 && ws.kind == sessionWindowKind {
		kafkaRetention = ws.size + ws.grace
	}
	n.makeProcessor = windowedFactory(spec, ws, agg, kafkaRetention)
	connect(src.node, n)
	if spec.keySerde == nil {
		spec.keySerde = src.keySerde
	}
	t := &Table{b: b, node: n, store: spec.name, valueSerde: spec.valueSerde}
	if spec.keySerde != nil {
		if ws.kind == sessionWindowKind {
			t.keySerde = SessionWindowedSerde(spec.keySerde)
		} else {
			t.keySerde = TimeWindowedSerde(spec.keySerde, ws.size)
		}
	}
	return t
}

func windowedFactory(spec *storeSpec, ws windowSpec, agg aggregation, kafkaRetention int64) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[spec.name]
		st.downstream, st.processor = next, name
		t.windowed = append(t.windowed, st)
		base := windowProc{name: name, store: st, spec: ws, agg: agg}
		switch ws.kind {
		case sessionWindowKind:
			return &sessionProc{windowProc: base, retention: kafkaRetention, written: -1}
		case slidingWindowKind:
			return &slidingProc{windowProc: base}
		default:
			return &timeWindowProc{windowProc: base}
		}
	}
}

// windowProc is what the windowed processors share.
type windowProc struct {
	name  string
	store *taskStore
	spec  windowSpec
	agg   aggregation
}

// innerKey serializes a record's grouping key.
func (p *windowProc) innerKey(t *task, key any) ([]byte, error) {
	kb, err := p.store.win.inner.Serialize(p.store.changelogOrName(), key)
	if err != nil {
		return nil, t.processingError(p.name, fmt.Errorf("store %q: serializing key: %w", p.store.spec.name, err))
	}
	return kb, nil
}

// updateCached folds r into its window's row e when the row is in the
// record cache with a value that needs no decoding: the common case of a
// window taking records. Time windows do not write through, so the row
// may wait for its flush to be encoded.
func (p *timeWindowProc) updateCached(t *task, r record, e *cacheEntry) (bool, error) {
	if e == nil || e.valueBytes == nil || !p.store.typed.decodesAs(e.value) {
		return false, nil
	}
	if p.agg.counts {
		if sv, ok := e.value.(stamped); ok {
			if n, ok := sv.value.(int64); ok {
				return true, p.store.updateStampedCount(t, e, n+1, max(sv.ts, r.timestamp), r.timestamp)
			}
		}
	}
	next, err := p.fold(r, e.value, true)
	if err != nil {
		return true, t.processingError(p.name, err)
	}
	if next.value == nil {
		// An aggregator that returns nil deletes the window's result:
		// putWindowRow makes the row a deletion, where updateStamped
		// would keep an empty value.
		p.store.markDirty(e)
		return true, p.store.putWindowRow(t, e, e.keyBytes, e.key.(Windowed), next, e.value, true, r.timestamp)
	}
	return true, p.store.updateStamped(t, e, next, r.timestamp)
}

// fold adds r to a window's stored value (found false: to a new window),
// keeping the largest record timestamp with the aggregate.
func (p *windowProc) fold(r record, old any, found bool) (stamped, error) {
	if !found {
		v, err := p.agg.first(r.key, r.value)
		return stamped{value: v, ts: r.timestamp}, err
	}
	o := old.(stamped)
	v, err := p.agg.add(r.key, r.value, o.value)
	return stamped{value: v, ts: max(o.ts, r.timestamp)}, err
}

// closed reports whether stream time has closed the window.
func (p *windowProc) closed(t *task, wk Windowed) bool {
	return t.streamTime >= p.spec.closesAt(wk.Start, wk.End)
}

// timeWindowProc aggregates into tumbling or hopping windows.
type timeWindowProc struct {
	windowProc
	starts []int64
	// kbuf is reused for the windows' keys when the store caches: the
	// cache copies a key it keeps. Uncached, a key goes to the producer,
	// which keeps it until the record is sent.
	kbuf []byte
}

func (p *timeWindowProc) process(t *task, r record) error {
	// Kafka Streams skips only a null key here: a null value is given to
	// the aggregator (Count counts it).
	if skipsNull(t, p.name, r, true) {
		return nil
	}
	inner, err := p.innerKey(t, r.key)
	if err != nil {
		return err
	}
	p.starts = p.spec.timeWindowStarts(p.starts[:0], r.timestamp)
	if p.store.win.final != nil {
		return p.processFinal(t, r, inner)
	}
	for _, start := range p.starts {
		wk := Windowed{Key: r.key, Start: start, End: start + p.spec.size}
		if p.closed(t, wk) {
			p.store.dropLate(t, r, wk)
			continue
		}
		// One lookup of the window's row serves the record, whether it
		// updates the row, reads the store or adds the row. It is looked
		// up by window and grouping key, as the cache keeps it: the
		// window's changelog key is built only for a row the record does
		// not just update, which most records do.
		e := p.store.win.rowAt(start, keyView(inner))
		if done, err := p.updateCached(t, r, e); err != nil {
			return err
		} else if done {
			continue
		}
		var kb []byte
		if p.store.spec.cached {
			p.kbuf = p.store.win.appendKey(p.kbuf[:0], inner, wk)
			kb = p.kbuf
		} else {
			kb = p.store.win.keyBytes(inner, wk)
		}
		old, _, found, err := p.store.getRow(e, kb)
		if err != nil {
			return t.processingError(p.name, err)
		}
		next, err := p.fold(r, old, found)
		if err != nil {
			return t.processingError(p.name, err)
		}
		if e == nil && p.store.addsStale(next) {
			p.store.addWindowRow(t, kb, wk, next, old, found, r.timestamp)
			continue
		}
		if err := p.store.putWindowRow(t, e, kb, wk, next, old, found, r.timestamp); err != nil {
			return err
		}
	}
	return nil
}
