package streams

import (
	"errors"
	"slices"
	"sync"
)

// Opening the stores of the tasks an assignment brings: side by side, at
// most maxStoreOpens at a time, for every task new to this instance that
// has no replica's stores to take (see onAssigned).

// maxStoreOpens bounds how many stores open at once. Opening a store is
// mostly waiting for its files (the lock, the manifest, the WAL's
// replay), so stores open side by side rather than one after another;
// the bound keeps a member taking up many stores from starting as many
// pebbles, and their goroutines, at once.
const maxStoreOpens = 4

// taskOpening is the opening of one task's stores: its specs in topology
// order, and what opening each gave.
type taskOpening struct {
	id     TaskID
	fresh  bool // the task had no state dir when the opening was prepared
	specs  []*storeSpec
	stores []*taskStore
	errs   []error
}

func newTaskOpening(st *subtopology, id TaskID) *taskOpening {
	op := &taskOpening{id: id}
	for _, n := range st.nodes {
		op.specs = append(op.specs, n.storeSpecs...)
	}
	op.stores = make([]*taskStore, len(op.specs))
	op.errs = make([]error, len(op.specs))
	return op
}

// result returns the task's stores in topology order (nil if it has
// none), or, if any failed to open, every failure joined, having closed
// those that opened.
func (op *taskOpening) result() ([]*taskStore, error) {
	if err := errors.Join(op.errs...); err != nil {
		closeTaskStores(slices.DeleteFunc(op.stores, func(st *taskStore) bool { return st == nil }))
		return nil, err
	}
	if len(op.stores) == 0 {
		return nil, nil
	}
	return op.stores, nil
}

// openTasksStores opens the stores of several tasks side by side, at most
// maxStoreOpens at a time, and returns once every open has ended.
func (a *App) openTasksStores(ops []*taskOpening) {
	sem := make(chan struct{}, maxStoreOpens)
	var wg sync.WaitGroup
	for _, op := range ops {
		for i, spec := range op.specs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				op.stores[i], op.errs[i] = a.openStore(spec, op.id)
			})
		}
	}
	wg.Wait()
}

// openTaskStores opens the stores of sub-topology st for task id, side
// by side, and returns them in topology order. If any fails it closes
// the others and returns every failure.
func (a *App) openTaskStores(st *subtopology, id TaskID) ([]*taskStore, error) {
	op := newTaskOpening(st, id)
	a.openTasksStores([]*taskOpening{op})
	return op.result()
}

// newTask instantiates the processors of sub-topology st for one task, on
// the given stores or, when nil, on stores it opens.
func (a *App) newTask(st *subtopology, id TaskID, stores []*taskStore) (*task, error) {
	if stores == nil {
		var err error
		if stores, err = a.openTaskStores(st, id); err != nil {
			return nil, err
		}
	}
	t := &task{id: id, app: a, streamTime: -1, sources: make(map[*graphNode]*sourceProc), stores: make(map[string]*taskStore)}
	if a.cfg.NodeMetrics {
		t.meters = make(map[string]*nodeMeter)
	}
	for _, ts := range stores {
		t.stores[ts.spec.name] = ts
		t.storeList = append(t.storeList, ts)
	}
	procs := instantiate(st, t, func(n *graphNode, next []processor) processor {
		keySerde, valueSerde := orDefault(n.keySerde, a.cfg.DefaultKeySerde), orDefault(n.valueSerde, a.cfg.DefaultValueSerde)
		if cs, ok := valueSerde.(changeSerde); ok && cs.inner == nil {
			valueSerde = changeSerde{inner: a.cfg.DefaultValueSerde}
		}
		if n.kind == sourceNode {
			_, rawKeys := keySerde.(bytesSerde)
			_, rawValues := valueSerde.(bytesSerde)
			return &sourceProc{name: n.name, keySerde: keySerde, valueSerde: valueSerde, timestamps: n.timestamps, next: next,
				rawKeys: rawKeys, rawValues: rawValues}
		}
		return &sinkProc{name: n.name, topic: a.realTopic(n.topic, n.internal), keySerde: keySerde, valueSerde: valueSerde}
	})
	for _, src := range st.sources {
		t.sources[src] = procs[src].(*sourceProc)
	}
	return t, nil
}
