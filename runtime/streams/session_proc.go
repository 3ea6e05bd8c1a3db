package streams

// sessionProc aggregates into session windows as Kafka Streams'
// KStreamSessionWindowAggregate does. A record starts a session [ts, ts]
// of its own, merged with every session of its key that ends at most Gap
// before it or starts at most Gap after it. Unless the merge is the
// record's own session, every session merged is deleted, a tombstone
// downstream when emitting updates, also a session the record falls
// inside of, whose bounds stay: a consumer of the results sees each
// session it last saw replaced, never two versions of one. Then the merge
// is written with the record folded in, as a new row (its old value is
// nil, as in Kafka Streams, whose merged session carries no old value).
//
// A session is found for merging only while Kafka Streams' session store
// would still return it: its end plus the store's retention (Kafka
// Streams': gap plus grace unless set) after the latest session end the
// processor wrote before this record (the store's stream time). With the
// default retention that leaves out every closed session, so a late
// record never bridges into a session whose final result went out.
type sessionProc struct {
	windowProc
	// retention is Kafka Streams' retention of the session store.
	retention int64
	// written is the latest end of a session written or deleted, Kafka
	// Streams' session store's observed stream time; -1 until the first
	// write after a start, when the task's stream time stands in.
	written int64
}

func (p *sessionProc) process(t *task, r record) error {
	// Kafka Streams skips only a null key here: a null value is given to
	// the aggregator (Count counts it).
	if skipsNull(t, p.name, r, true) {
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
	found = p.retained(t, found)
	own := Windowed{Key: r.key, Start: r.timestamp, End: r.timestamp}
	merged, agg, have, err := p.mergeSessions(r, own, found)
	if err != nil {
		return t.processingError(p.name, err)
	}
	if p.closed(t, merged) {
		p.store.dropLate(t, r, merged)
		return nil
	}
	p.written = max(p.written, merged.End)
	if merged != own {
		for _, s := range found {
			// The tombstone carries the deleted session's end.
			if err := p.store.putWindow(t, s.kb, s.wk, nil, s.value, true, s.wk.End); err != nil {
				return err
			}
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
	return p.store.putWindow(t, p.store.win.keyBytes(inner, merged), merged, next, nil, false, merged.End)
}

// retained keeps the sessions found that Kafka Streams' store would
// return: those ending less than its retention before the latest session
// end written.
func (p *sessionProc) retained(t *task, found []storedWindow) []storedWindow {
	written := p.written
	if written < 0 {
		written = t.streamTime
	}
	kept := found[:0]
	for _, s := range found {
		if s.wk.End+p.retention > written {
			kept = append(kept, s)
		}
	}
	return kept
}

// mergeSessions returns the bounds of the record's own session merged with
// the sessions found, and their aggregates merged: from the initializer's
// aggregate, or (Reduce, have false when nothing was found) from the first
// session's.
func (p *sessionProc) mergeSessions(r record, own Windowed, found []storedWindow) (merged Windowed, agg any, have bool, err error) {
	merged = own
	if have = p.agg.init != nil; have {
		if agg, err = p.agg.init(); err != nil {
			return merged, nil, false, err
		}
	}
	for _, s := range found {
		merged.Start, merged.End = min(merged.Start, s.wk.Start), max(merged.End, s.wk.End)
		v := unstamp(s.value)
		if !have {
			agg, have = v, true
		} else if agg, err = p.agg.merge(r.key, agg, v); err != nil {
			return merged, nil, false, err
		}
	}
	return merged, agg, have, nil
}
