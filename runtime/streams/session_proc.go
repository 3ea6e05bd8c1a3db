package streams

// sessionProc aggregates into session windows. A record starts a session
// [ts, ts] of its own, merged with every session of its key that ends at
// most Gap before it or starts at most Gap after it; the merged sessions
// are deleted (a tombstone downstream when emitting updates) and the
// record is folded into the merge.
type sessionProc struct {
	windowProc
}

func (p *sessionProc) process(t *task, r record) error {
	if r.key == nil || r.value == nil {
		return nil
	}
	inner, err := p.innerKey(t, r.key)
	if err != nil {
		return err
	}
	gap := p.spec.size
	found, err := p.store.keyWindows(inner, r.key, r.timestamp-gap, r.timestamp+gap, false)
	if err != nil {
		return t.processingError(p.name, err)
	}
	merged := Windowed{Key: r.key, Start: r.timestamp, End: r.timestamp}
	var agg any
	have := p.agg.init != nil
	if have {
		if agg, err = p.agg.init(); err != nil {
			return t.processingError(p.name, err)
		}
	}
	for _, s := range found {
		merged.Start, merged.End = min(merged.Start, s.wk.Start), max(merged.End, s.wk.End)
		v := unstamp(s.value)
		if !have {
			agg, have = v, true
		} else if agg, err = p.agg.merge(r.key, agg, v); err != nil {
			return t.processingError(p.name, err)
		}
	}
	if p.closed(t, merged) {
		p.store.dropLate(t, r, merged)
		return nil
	}
	var old any
	oldFound := false
	for _, s := range found {
		if s.wk.Start == merged.Start && s.wk.End == merged.End {
			old, oldFound = s.value, true
			continue
		}
		if err := p.store.putWindow(t, s.kb, s.wk, nil, s.value, true, s.wk.End); err != nil {
			return err
		}
	}
	if have {
		agg, err = p.agg.add(r.key, r.value, agg)
	} else {
		agg = r.value
	}
	if err != nil {
		return t.processingError(p.name, err)
	}
	// A session's results carry its end as their timestamp, as in Kafka
	// Streams.
	next := stamped{value: agg, ts: merged.End}
	return p.store.putWindow(t, p.store.win.keyBytes(inner, merged), merged, next, old, oldFound, merged.End)
}
