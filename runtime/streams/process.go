package streams

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// record is what flows between processors inside a task: a decoded key and
// value, the event time in milliseconds and the headers, passed by value so
// that processors never share one.
type record struct {
	key, value any
	// old is the previous value of a table row, for table operators; nil
	// on streams and for new rows.
	old       any
	timestamp int64
	headers   []kgo.RecordHeader
}

// processor is one instantiated operator of one task.
type processor interface {
	process(t *task, r record) error
}

// processorFactory instantiates a node's processor for task t, given the
// already instantiated children it forwards to. Stateful processors take
// their stores from t.
type processorFactory func(name string, next []processor, t *task) processor

// forward hands r to every child, stopping at the first error: the task's
// error handler then decides about the whole record.
func forward(t *task, next []processor, r record) error {
	for _, p := range next {
		if err := p.process(t, r); err != nil {
			return err
		}
	}
	return nil
}

type filterProc struct {
	name string
	pred Predicate
	not  bool
	next []processor
}

func filterFactory(pred Predicate, not bool) processorFactory {
	return func(name string, next []processor, _ *task) processor {
		return &filterProc{name: name, pred: pred, not: not, next: next}
	}
}

func (p *filterProc) process(t *task, r record) error {
	ok, err := p.pred(r.key, r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if ok == p.not {
		return nil
	}
	return forward(t, p.next, r)
}

type mapProc struct {
	name string
	fn   KeyValueMapper
	next []processor
}

func mapFactory(fn KeyValueMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &mapProc{name, fn, next} }
}

func (p *mapProc) process(t *task, r record) error {
	k, v, err := p.fn(r.key, r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	r.key, r.value = k, v
	return forward(t, p.next, r)
}

type mapValuesProc struct {
	name string
	fn   ValueMapper
	next []processor
}

func mapValuesFactory(fn ValueMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &mapValuesProc{name, fn, next} }
}

func (p *mapValuesProc) process(t *task, r record) error {
	v, err := p.fn(r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	r.value = v
	return forward(t, p.next, r)
}

type flatMapProc struct {
	name string
	fn   FlatMapper
	next []processor
}

func flatMapFactory(fn FlatMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &flatMapProc{name, fn, next} }
}

func (p *flatMapProc) process(t *task, r record) error {
	kvs, err := p.fn(r.key, r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	for _, kv := range kvs {
		r.key, r.value = kv.Key, kv.Value
		if err := forward(t, p.next, r); err != nil {
			return err
		}
	}
	return nil
}

type flatMapValuesProc struct {
	name string
	fn   ValueFlatMapper
	next []processor
}

func flatMapValuesFactory(fn ValueFlatMapper) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &flatMapValuesProc{name, fn, next} }
}

func (p *flatMapValuesProc) process(t *task, r record) error {
	vs, err := p.fn(r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	for _, v := range vs {
		r.value = v
		if err := forward(t, p.next, r); err != nil {
			return err
		}
	}
	return nil
}

type selectKeyProc struct {
	name string
	fn   KeySelector
	next []processor
}

func selectKeyFactory(fn KeySelector) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &selectKeyProc{name, fn, next} }
}

func (p *selectKeyProc) process(t *task, r record) error {
	k, err := p.fn(r.key, r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	r.key = k
	return forward(t, p.next, r)
}

type peekProc struct {
	fn   Action
	next []processor
}

func peekFactory(fn Action) processorFactory {
	return func(_ string, next []processor, _ *task) processor { return &peekProc{fn, next} }
}

func (p *peekProc) process(t *task, r record) error {
	p.fn(r.key, r.value)
	return forward(t, p.next, r)
}

// passProc forwards unchanged: merge points and branch outputs.
type passProc struct{ next []processor }

func passFactory(_ string, next []processor, _ *task) processor { return &passProc{next} }

func (p *passProc) process(t *task, r record) error { return forward(t, p.next, r) }

type dropNullKeyProc struct{ next []processor }

func dropNullKeyFactory(_ string, next []processor, _ *task) processor { return &dropNullKeyProc{next} }

func (p *dropNullKeyProc) process(t *task, r record) error {
	if r.key == nil {
		return nil
	}
	return forward(t, p.next, r)
}

// branchProc sends each record to the first child whose predicate accepts
// it; a nil predicate (the default branch) accepts everything.
type branchProc struct {
	name  string
	preds []Predicate
	next  []processor
}

func branchFactory(preds []Predicate) processorFactory {
	return func(name string, next []processor, _ *task) processor { return &branchProc{name, preds, next} }
}

func (p *branchProc) process(t *task, r record) error {
	for i, pred := range p.preds {
		if pred != nil {
			ok, err := pred(r.key, r.value)
			if err != nil {
				return t.processingError(p.name, err)
			}
			if !ok {
				continue
			}
		}
		return p.next[i].process(t, r)
	}
	return nil
}

// sinkProc serializes and produces to a topic.
type sinkProc struct {
	name                 string
	topic                string
	keySerde, valueSerde Serde
}

func (p *sinkProc) process(t *task, r record) error {
	k, err := p.keySerde.Serialize(p.topic, r.key)
	if err != nil {
		return t.processingError(p.name, err)
	}
	v, err := p.valueSerde.Serialize(p.topic, r.value)
	if err != nil {
		return t.processingError(p.name, err)
	}
	out := t.records.alloc()
	out.Topic, out.Key, out.Value = p.topic, k, v
	out.Timestamp, out.Headers = time.UnixMilli(r.timestamp), r.headers
	t.produce(out)
	return nil
}
