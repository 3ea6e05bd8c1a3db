package streams

import (
	"cmp"
	"fmt"
	"slices"
)

// WindowResult is one window of a key in a windowed store: the window,
// the aggregate, and the largest timestamp of the records in it.
type WindowResult struct {
	Window    Windowed
	Value     any
	Timestamp int64
}

// OpenWindow is a window of a task's store that stream time has not
// closed yet. Times are milliseconds since the epoch.
type OpenWindow struct {
	Task       TaskID
	Start, End int64
	// ClosesAt is the stream time at which the window will close: End +
	// grace, one millisecond more for the inclusive ends of sessions and
	// sliding windows.
	ClosesAt int64
	// Keys counts the keys with a result in the window.
	Keys int
}

// NotWindowedError says a window query named a key-value store.
type NotWindowedError struct{ Store string }

func (e *NotWindowedError) Error() string {
	return fmt.Sprintf("store %q is not a window or session store", e.Store)
}

// FetchWindows returns the committed windows of key in the named window or
// session store on this instance, oldest first: for time and sliding
// windows those starting within [from, to], for sessions those that end at
// or after from and start at or before to (milliseconds since the epoch).
// Windows past the store's retention are not returned.
func (a *App) FetchWindows(store string, key any, from, to int64) ([]WindowResult, error) {
	var out []WindowResult
	err := a.eachLocalStore(store, func(t *task, st *taskStore) (bool, error) {
		w := st.win
		if w == nil || w.spec.kind == joinWindowKind {
			return false, &NotWindowedError{Store: store}
		}
		inner, err := w.inner.Serialize(st.changelogOrName(), key)
		if err != nil {
			return false, fmt.Errorf("querying store %q: serializing key: %w", store, err)
		}
		found, err := st.fetchCommitted(t.streamTime, inner, key, max(from, 0), to)
		out = append(out, found...)
		return true, err
	})
	slices.SortStableFunc(out, func(x, y WindowResult) int {
		if x.Window.Start != y.Window.Start {
			return cmp.Compare(x.Window.Start, y.Window.Start)
		}
		return cmp.Compare(x.Window.End, y.Window.End)
	})
	return out, err
}

// fetchCommitted reads a key's committed windows for FetchWindows,
// leaving out those past retention whose segment is not dropped yet.
func (st *taskStore) fetchCommitted(streamTime int64, inner []byte, key any, from, to int64) ([]WindowResult, error) {
	found, err := st.keyWindows(inner, key, from, to, true)
	if err != nil {
		return nil, fmt.Errorf("querying store %q: %w", st.spec.name, err)
	}
	var out []WindowResult
	for _, f := range found {
		if streamTime >= 0 && st.win.segmentTime(f.kb)+st.win.retention <= streamTime {
			continue
		}
		sv := f.value.(stamped)
		out = append(out, WindowResult{Window: f.wk, Value: sv.value, Timestamp: sv.ts})
	}
	return out, nil
}

// OpenWindows lists the windows of the named window or session store that
// are open on this instance's tasks, by task and then by closing time.
func (a *App) OpenWindows(store string) ([]OpenWindow, error) {
	var out []OpenWindow
	err := a.eachLocalStore(store, func(t *task, st *taskStore) (bool, error) {
		if st.win == nil || st.win.spec.kind == joinWindowKind {
			return false, &NotWindowedError{Store: store}
		}
		var mine []OpenWindow
		for _, ow := range st.win.open {
			keys := len(ow.keys)
			if fr := st.win.final; fr != nil {
				keys += fr.rowsIn(ow.start)
			}
			mine = append(mine, OpenWindow{Task: t.id, Start: ow.start, End: ow.end, ClosesAt: ow.closesAt, Keys: keys})
		}
		slices.SortFunc(mine, func(x, y OpenWindow) int {
			if x.ClosesAt != y.ClosesAt {
				return cmp.Compare(x.ClosesAt, y.ClosesAt)
			}
			return cmp.Compare(x.Start, y.Start)
		})
		out = append(out, mine...)
		return true, nil
	})
	return out, err
}
