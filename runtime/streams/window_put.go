package streams

// putWindowStale is putWindow for a cached time window whose value the
// serde cannot fail on (see decodesAs): the row is cached with its value
// encoded at the flush, as updates of cached rows are (taskStore.update),
// rather than at once; and a new row is added with one lookup of the
// cache, not two. Every window a key opens takes this path.
func (st *taskStore) putWindowStale(t *task, kb []byte, wk Windowed, value, old any, oldFound bool, ts int64) error {
	e := st.row(keyView(kb))
	if e == nil {
		e = st.insert(t, kb, wk)
		st.set(e, value, nil, old, oldFound, ts)
	} else {
		// As putWindow updates a cached row: in place.
		e.disown()
		e.value, e.timestamp = value, ts
	}
	// A stale row's valueBytes is not nil: the row is not a deletion.
	if e.valueBytes == nil {
		e.valueBytes = []byte{}
	}
	e.stale = true
	return nil
}
