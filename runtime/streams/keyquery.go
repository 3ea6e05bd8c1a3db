package streams

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// HostInfo is a member of the application's group as a query router
// needs it: its instance id and the Config.ApplicationServer it answers
// queries on ("" when it advertised none).
type HostInfo struct {
	InstanceID string `json:"instance"`
	Server     string `json:"server,omitempty"`
}

// KeyQueryMetadata says where a key of a store lives, as the last
// assignment placed it (Kafka Streams' KeyQueryMetadata): the partition
// the key's records go to, the task of that partition, the member running
// the task and the members keeping standby replicas of it.
type KeyQueryMetadata struct {
	Store     string     `json:"store"`
	Partition int32      `json:"partition"`
	Task      TaskID     `json:"task"`
	Active    HostInfo   `json:"active"`
	Standbys  []HostInfo `json:"standbys,omitempty"`
}

// UnknownStoreError names a store the topology does not have. It matches
// ErrUnknownStore with errors.Is.
type UnknownStoreError struct{ Store string }

func (e *UnknownStoreError) Error() string {
	return fmt.Sprintf("querying store %q: %v", e.Store, ErrUnknownStore)
}

// Is makes errors.Is(err, ErrUnknownStore) hold.
func (e *UnknownStoreError) Is(target error) bool { return target == ErrUnknownStore }

// NoAssignmentError says the instance has not been through a rebalance
// yet, or the last one did not place the store's task: nobody knows yet
// where the key lives. Retry once the group is stable.
type NoAssignmentError struct {
	Store string
	// Task is the key's task when the assignment is known but left it
	// out, nil when there is no assignment.
	Task *TaskID
}

func (e *NoAssignmentError) Error() string {
	if e.Task == nil {
		return fmt.Sprintf("locating a key of store %q: the group has not assigned its tasks yet", e.Store)
	}
	return fmt.Sprintf("locating a key of store %q: no member runs task %s in the last assignment", e.Store, *e.Task)
}

// KeyError says a query's key could not be serialized with the store's
// key serde: it is of the wrong type for the store.
type KeyError struct {
	Store string
	Err   error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("querying store %q: serializing the key: %v", e.Store, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// TaskNotHereError says this instance keeps no copy of the key's task to
// answer from: no active one, and (for a stale lookup) no standby one
// either. The key lives on the members KeyQueryMetadata names.
type TaskNotHereError struct {
	Store    string
	Task     TaskID
	Instance string
}

func (e *TaskNotHereError) Error() string {
	return fmt.Sprintf("querying store %q: instance %s keeps no copy of task %s", e.Store, e.Instance, e.Task)
}

// storeOf returns the spec of the named store and the sub-topology whose
// tasks keep it.
func (a *App) storeOf(store string) (*storeSpec, int, error) {
	for _, st := range a.topo.subtopologies {
		for _, n := range st.nodes {
			for _, spec := range n.storeSpecs {
				if spec.name == store {
					return spec, st.id, nil
				}
			}
		}
	}
	return nil, 0, &UnknownStoreError{Store: store}
}

// keyTask returns the task of the named store that key belongs to, given
// the partition count of the store's sub-topology. The key goes through
// the store's key serde and the partitioner the App writes its topics
// with, which is how its record reached that task.
func (a *App) keyTask(spec *storeSpec, sub int, key any, partitions int) (TaskID, error) {
	topic := spec.name
	if spec.logged {
		topic = changelogTopic(a.cfg.ApplicationID, spec.name)
	}
	kb, err := spec.keySerde.Serialize(topic, key)
	if err != nil {
		return TaskID{}, &KeyError{Store: spec.name, Err: err}
	}
	if kb == nil {
		return TaskID{}, &KeyError{Store: spec.name, Err: errors.New("the key is null")}
	}
	p := keyPartitioner.ForTopic(topic).Partition(&kgo.Record{Topic: topic, Key: kb}, partitions)
	return TaskID{Subtopology: sub, Partition: int32(p)}, nil
}

// QueryMetadata says which partition and task of the named store key
// belongs to, which member runs that task and which keep standby
// replicas of it, as the last rebalance this instance took part in
// assigned them (Kafka Streams' KafkaStreams.queryMetadataForKey). In a
// window or session store the key is the plain (grouping) key. The
// answer is as fresh as that rebalance: after a member failed and before
// the group rebalanced, it still names the failed member as active.
//
// The errors are typed: *UnknownStoreError, *KeyError (the key's type does
// not suit the store's serde) and *NoAssignmentError (no rebalance yet).
func (a *App) QueryMetadata(store string, key any) (KeyQueryMetadata, error) {
	spec, sub, err := a.storeOf(store)
	if err != nil {
		return KeyQueryMetadata{}, err
	}
	members := a.Members()
	// Every task of a sub-topology is some member's active, so the
	// assignment knows how many partitions the sub-topology has.
	partitions := 0
	for _, m := range members {
		for _, t := range m.Active {
			if t.Subtopology == sub {
				partitions = max(partitions, int(t.Partition)+1)
			}
		}
	}
	if partitions == 0 {
		return KeyQueryMetadata{}, &NoAssignmentError{Store: store}
	}
	task, err := a.keyTask(spec, sub, key, partitions)
	if err != nil {
		return KeyQueryMetadata{}, err
	}
	md := KeyQueryMetadata{Store: store, Partition: task.Partition, Task: task}
	found := false
	for _, m := range members {
		host := HostInfo{InstanceID: m.InstanceID, Server: m.Server}
		if slices.Contains(m.Active, task) {
			md.Active, found = host, true
		}
		if slices.Contains(m.Standby, task) {
			md.Standbys = append(md.Standbys, host)
		}
	}
	if !found {
		return KeyQueryMetadata{}, &NoAssignmentError{Store: store, Task: &task}
	}
	return md, nil
}

// KeyLookup is what LookupKey read for a key: its row in a key-value
// store, or its windows in a window or session store, and the copy it
// came from.
type KeyLookup struct {
	Found bool
	// Row is the key's row in a key-value store.
	Row ValueAndTimestamp
	// Windows are the key's committed windows in a window or session
	// store, oldest first.
	Windows []WindowResult
	// Instance is the instance that answered, Task the key's task.
	Instance string
	Task     TaskID
	// Standby is true when the answer comes from a standby (or warm-up)
	// replica, which may be behind the active: Lag is how many records of
	// the store's changelog partition it has not applied yet, as far as
	// it has seen the partition's end (the lag Stats reports).
	Standby bool
	Lag     int64
}

// LookupKey reads key from this instance's copy of the task the key
// belongs to (see QueryMetadata): the active one, as Get reads, or, when
// stale is true, a standby (or warm-up) replica's if this instance keeps
// one (Kafka Streams' StoreQueryParameters.enableStaleStores), with its
// lag. A standby answers what it has applied, which may be behind the
// active. In a window or session store key is the plain key and the
// answer is all its committed windows. The instance has to know the
// assignment (see QueryMetadata, whose errors it returns too); when it
// keeps no copy of the task the error is a *TaskNotHereError, and while
// its active copy restores a *StoreNotReadyError.
func (a *App) LookupKey(store string, key any, stale bool) (KeyLookup, error) {
	md, err := a.QueryMetadata(store, key)
	if err != nil {
		return KeyLookup{}, err
	}
	if stale {
		// A task is never both active and a replica on one instance,
		// and a replica is read without waiting for the tasks.
		if res, held, err := a.lookupStandby(store, key, md.Task); held || err != nil {
			return res, err
		}
	}
	res, held, err := a.lookupActive(store, key, md.Task)
	if held || err != nil {
		res.Instance = a.cfg.InstanceID
		return res, err
	}
	return KeyLookup{}, &TaskNotHereError{Store: store, Task: md.Task, Instance: a.cfg.InstanceID}
}

// lookupStaleOnly is LookupKey reading a replica only: a
// *TaskNotHereError when this instance keeps none of key's task.
func (a *App) lookupStaleOnly(store string, key any) (KeyLookup, error) {
	md, err := a.QueryMetadata(store, key)
	if err != nil {
		return KeyLookup{}, err
	}
	if res, held, err := a.lookupStandby(store, key, md.Task); held || err != nil {
		return res, err
	}
	return KeyLookup{}, &TaskNotHereError{Store: store, Task: md.Task, Instance: a.cfg.InstanceID}
}

// lookupStandby reads key from the replica of task id, if this instance
// keeps one; held says whether it does.
func (a *App) lookupStandby(store string, key any, id TaskID) (KeyLookup, bool, error) {
	if a.standby == nil {
		return KeyLookup{}, false, nil
	}
	res, held, err := a.standby.lookup(store, key, id)
	res.Instance = a.cfg.InstanceID
	return res, held, err
}

// lookupActive reads key from the active task id, if this instance runs
// it; held says whether it does.
func (a *App) lookupActive(store string, key any, id TaskID) (res KeyLookup, held bool, err error) {
	if !a.lockTasksWithin(queryWait) {
		return res, false, &StoreBusyError{Store: store, Waited: queryWait}
	}
	defer a.tasksMu.Unlock()
	t := a.tasks[id]
	if t == nil {
		return res, false, nil
	}
	st := t.stores[store]
	if st == nil {
		return res, false, nil
	}
	if t.restoring != nil {
		return res, true, &StoreNotReadyError{Store: store, Task: id}
	}
	res, err = st.lookupCommitted(key, t.streamTime)
	res.Task = id
	return res, true, err
}

// lookup reads key from the standby replica of task id, if this instance
// keeps one; held says whether it does.
func (s *standbys) lookup(store string, key any, id TaskID) (res KeyLookup, held bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.tasks[id]
	if sb == nil {
		return res, false, nil
	}
	i := slices.IndexFunc(sb.stores, func(st *taskStore) bool { return st.spec.name == store })
	if i < 0 {
		return res, false, nil
	}
	st := sb.stores[i]
	res, err = st.lookupCommitted(key, st.db.Checkpoint().StreamTime)
	res.Task, res.Standby = id, true
	for _, f := range sb.logged {
		if f.store == st {
			res.Lag += max(0, f.end-f.offset())
		}
	}
	return res, true, err
}

// lookupCommitted reads key's committed row, or its windows in a
// windowed store (dropping those streamTime expired).
func (st *taskStore) lookupCommitted(key any, streamTime int64) (KeyLookup, error) {
	name := st.spec.name
	if w := st.win; w != nil {
		if w.spec.kind == joinWindowKind {
			return KeyLookup{}, &NotWindowedError{Store: name}
		}
		inner, err := w.inner.Serialize(st.changelogOrName(), key)
		if err != nil {
			return KeyLookup{}, &KeyError{Store: name, Err: err}
		}
		found, err := st.fetchCommitted(streamTime, inner, key, 0, math.MaxInt64)
		if err != nil {
			return KeyLookup{}, err
		}
		return KeyLookup{Found: len(found) > 0, Windows: found}, nil
	}
	kb, err := st.keySerde.Serialize(st.changelogOrName(), key)
	if err != nil {
		return KeyLookup{}, &KeyError{Store: name, Err: err}
	}
	vb, ok, err := st.db.GetCommitted(kb)
	if err != nil || !ok {
		return KeyLookup{}, err
	}
	row, err := st.committedRow(vb)
	if err != nil {
		return KeyLookup{}, fmt.Errorf("querying store %q: %w", name, err)
	}
	return KeyLookup{Found: true, Row: row}, nil
}

// QueryMetadata is App.QueryMetadata asked of the first running instance
// that has been assigned tasks.
func (s *Supervisor) QueryMetadata(store string, key any) (KeyQueryMetadata, error) {
	err := error(&NoAssignmentError{Store: store})
	for _, in := range s.runningApps() {
		var md KeyQueryMetadata
		if md, err = in.app.QueryMetadata(store, key); err == nil {
			return md, nil
		}
		var none *NoAssignmentError
		if !errors.As(err, &none) {
			return md, err
		}
	}
	return KeyQueryMetadata{}, err
}

// LookupKey is App.LookupKey on the running instances: the answer of the
// one running the key's task, else, when stale is true, of one keeping a
// standby replica of it (asked after every instance was asked for its
// active copy). When none keeps a copy, the error is a
// *StoreNotReadyError or *StoreBusyError if one was restoring or busy,
// else a *TaskNotHereError (or the *NoAssignmentError of instances that
// know no assignment yet).
func (s *Supervisor) LookupKey(store string, key any, stale bool) (KeyLookup, error) {
	apps := s.runningApps()
	var notHere, notReady error = &NoAssignmentError{Store: store}, nil
	for _, replicas := range []bool{false, true} {
		if replicas && !stale {
			break
		}
		for _, in := range apps {
			var res KeyLookup
			var err error
			if replicas {
				res, err = in.app.lookupStaleOnly(store, key)
			} else {
				res, err = in.app.LookupKey(store, key, false)
			}
			var nh *TaskNotHereError
			var na *NoAssignmentError
			var nr *StoreNotReadyError
			var busy *StoreBusyError
			switch {
			case err == nil:
				return res, nil
			case errors.As(err, &nh):
				notHere = err
			case errors.As(err, &na):
			case errors.As(err, &nr), errors.As(err, &busy):
				notReady = err
			default:
				return KeyLookup{}, err
			}
		}
	}
	if notReady != nil {
		return KeyLookup{}, notReady
	}
	return KeyLookup{}, notHere
}
