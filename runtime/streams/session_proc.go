package streams

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// sessionProc aggregates into session windows. A record starts a session
// [ts, ts] of its own, merged with every session of its key that ends at
// most Gap before it or starts at most Gap after it; the merged sessions
// are deleted (a tombstone downstream when emitting updates) and the
// record is folded into the merge.
type sessionProc struct {
	windowProc
}

// storedWindow is a window or session found in the store; value is stamped.
type storedWindow struct {
	kb    []byte
	wk    Windowed
	value any
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
	found, err := p.store.findSessions(inner, r.key, r.timestamp-gap, r.timestamp+gap)
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

// findSessions returns the sessions of a key (inner serialized, key
// decoded) that end at or after from and start at or before to, oldest
// end first. Session stores write through, so pebble's pending batch
// holds every session, cached or not.
func (st *taskStore) findSessions(inner []byte, key any, from, to int64) ([]storedWindow, error) {
	w := st.win
	from = max(from, 0)
	var out []storedWindow
	var decodeErr error
	for seg := from / w.interval; seg <= w.maxSegment; seg++ {
		if seg < w.expiredBelow {
			continue
		}
		prefix := w.keyPrefix(seg, inner)
		lower := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(from))
		upper := prefixUpper(prefix)
		err := st.db.Range(lower, upper, func(sk, vb []byte) bool {
			kb := sk[12:]
			end := int64(binary.BigEndian.Uint64(kb[len(kb)-16:]))
			start := int64(binary.BigEndian.Uint64(kb[len(kb)-8:]))
			if start > to {
				return true
			}
			v, err := st.valueSerde.Deserialize(st.changelogOrName(), bytes.Clone(vb))
			if err != nil {
				decodeErr = fmt.Errorf("store %q: decoding stored value: %w", st.spec.name, err)
				return false
			}
			out = append(out, storedWindow{kb: bytes.Clone(kb), wk: Windowed{Key: key, Start: start, End: end}, value: v})
			return true
		})
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// prefixUpper returns the smallest key above every key starting with p.
func prefixUpper(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
