package streams

import (
	"errors"
	"fmt"
	"time"
)

// StoreNotReadyError says a queried store exists on this instance but is
// restoring from its changelog: its answers would be stale. Retry later.
type StoreNotReadyError struct {
	Store string
	Task  TaskID
}

func (e *StoreNotReadyError) Error() string {
	return fmt.Sprintf("store %q of task %s is restoring; it answers queries when it has caught up", e.Store, e.Task)
}

// StoreBusyError says a query gave up waiting for the instance's tasks:
// the processing goroutine holds them while it processes a poll and while
// it commits, which, when the broker does not answer, lasts until the
// commit's bound (see Config.SessionTimeout). The query may be retried.
type StoreBusyError struct {
	Store  string
	Waited time.Duration
}

func (e *StoreBusyError) Error() string {
	return fmt.Sprintf("querying store %q: the instance's tasks were busy for %v (a commit waits on the broker?); try again", e.Store, e.Waited)
}

// queryWait is how long a query waits for the tasks: long enough for any
// poll's processing or a commit to a broker that answers, short enough
// that a caller (the live page's sampling, an HTTP request) does not
// freeze with an instance whose commit waits on an absent broker.
const queryWait = time.Second

// lockTasksWithin takes tasksMu if it can within d. sync.Mutex cannot be
// waited for with a deadline, so it polls TryLock, backing off to every
// 5 ms: queries are rare next to the processing goroutine's locking, and
// a few milliseconds are nothing to them.
func (a *App) lockTasksWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for wait := 50 * time.Microsecond; !a.tasksMu.TryLock(); wait = min(2*wait, 5*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
	return true
}

// ErrUnknownStore is what an *UnknownStoreError, returned for a store
// name the topology does not have, matches.
var ErrUnknownStore = errors.New("no such store in the topology")

// ValueAndTimestamp is a store row with its timestamp (Kafka Streams'
// ValueAndTimestamp): for a key-value store the largest timestamp of the
// records the row comes from (a table source's record, an aggregation's
// inputs, both sides of a table-table join), for a window or session store
// that of the records in the window. Timestamps are milliseconds since the
// epoch.
type ValueAndTimestamp struct {
	Value     any
	Timestamp int64
}

// Get looks key up in the named store across the instance's tasks. It
// reads committed state: what the last commit applied. In a window or
// session store the key is a Windowed (see also FetchWindows). found is false when
// no local task holds the key; the key may still live on another instance.
// GetWithTimestamp also returns the row's timestamp.
func (a *App) Get(store string, key any) (value any, found bool, err error) {
	v, found, err := a.GetWithTimestamp(store, key)
	return v.Value, found, err
}

// GetWithTimestamp is Get returning the row's timestamp with its value.
func (a *App) GetWithTimestamp(store string, key any) (row ValueAndTimestamp, found bool, err error) {
	err = a.eachLocalStore(store, func(t *task, st *taskStore) (bool, error) {
		kb, err := st.keySerde.Serialize(st.changelogOrName(), key)
		if err != nil {
			return false, fmt.Errorf("querying store %q: serializing key: %w", store, err)
		}
		if st.win != nil {
			kb = st.win.storeKey(nil, kb)
		}
		vb, ok, err := st.db.GetCommitted(kb)
		if err != nil || !ok {
			return err == nil, err
		}
		if row, err = st.committedRow(vb); err != nil {
			return false, fmt.Errorf("querying store %q: %w", store, err)
		}
		found = true
		return false, nil
	})
	return row, found, err
}

// committedRow decodes a row as pebble holds it: a timestamped key-value
// store's and a windowed store's values carry their timestamps.
func (st *taskStore) committedRow(vb []byte) (ValueAndTimestamp, error) {
	var ts int64
	if st.stamped {
		var err error
		if ts, vb, err = splitStamped(vb); err != nil {
			return ValueAndTimestamp{}, err
		}
	}
	v, err := st.valueSerde.Deserialize(st.changelogOrName(), vb)
	if err != nil {
		return ValueAndTimestamp{}, fmt.Errorf("decoding value: %w", err)
	}
	if sv, ok := v.(stamped); ok && st.win != nil {
		return ValueAndTimestamp{Value: sv.value, Timestamp: sv.ts}, nil
	}
	return ValueAndTimestamp{Value: v, Timestamp: ts}, nil
}

// Range calls fn for every committed row of the named store on this
// instance whose serialized key is in [from, to) (nil bounds are open), in
// key order within each task and task by task. fn returns false to stop.
// RangeWithTimestamps also passes each row's timestamp.
func (a *App) Range(store string, from, to any, fn func(key, value any) bool) error {
	return a.RangeWithTimestamps(store, from, to, func(k any, row ValueAndTimestamp) bool { return fn(k, row.Value) })
}

// RangeWithTimestamps is Range passing each row with its timestamp.
func (a *App) RangeWithTimestamps(store string, from, to any, fn func(key any, row ValueAndTimestamp) bool) error {
	return a.eachLocalStore(store, func(t *task, st *taskStore) (bool, error) {
		if st.win != nil {
			return false, fmt.Errorf("querying store %q: Range reads key-value stores; use FetchWindows", store)
		}
		bound := func(v any) ([]byte, error) {
			if v == nil {
				return nil, nil
			}
			return st.keySerde.Serialize(st.changelogOrName(), v)
		}
		start, err := bound(from)
		if err != nil {
			return false, fmt.Errorf("querying store %q: serializing the lower bound: %w", store, err)
		}
		end, err := bound(to)
		if err != nil {
			return false, fmt.Errorf("querying store %q: serializing the upper bound: %w", store, err)
		}
		more := true
		var decodeErr error
		err = st.db.RangeCommitted(start, end, func(kb, vb []byte) bool {
			k, err := st.keySerde.Deserialize(st.changelogOrName(), append([]byte(nil), kb...))
			if err != nil {
				decodeErr = fmt.Errorf("querying store %q: decoding key: %w", store, err)
				return false
			}
			row, err := st.committedRow(append([]byte(nil), vb...))
			if err != nil {
				decodeErr = fmt.Errorf("querying store %q: %w", store, err)
				return false
			}
			more = fn(k, row)
			return more
		})
		if err == nil {
			err = decodeErr
		}
		return more, err
	})
}

// eachLocalStore calls fn with the named store of every task on this
// instance, in task order, until fn returns false or an error.
func (a *App) eachLocalStore(store string, fn func(*task, *taskStore) (bool, error)) error {
	if _, _, err := a.storeOf(store); err != nil {
		return err
	}
	if !a.lockTasksWithin(queryWait) {
		return &StoreBusyError{Store: store, Waited: queryWait}
	}
	defer a.tasksMu.Unlock()
	for _, s := range a.snapshotTasks(a.tasks) {
		t := a.tasks[s.ID]
		st, ok := t.stores[store]
		if !ok {
			continue
		}
		if t.restoring != nil {
			return &StoreNotReadyError{Store: store, Task: t.id}
		}
		more, err := fn(t, st)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
