package streams

// slidingProc aggregates into sliding windows with Kafka Streams'
// algorithm (KStreamSlidingWindowAggregate): windows exist only where
// records define them. A record at t has a left window [t-D, t], and a
// right window [t+1, t+1+D] when a later record falls within D of it; a
// record updates every existing window that contains it, and creates the
// windows it defines that are missing, taking their aggregates from the
// neighbouring windows so that no window is computed from scratch.
// Records before D (the first D milliseconds of the epoch) share one
// combined window [0, D].
type slidingProc struct {
	windowProc
}

// slidingRun is the state of processing one record.
type slidingRun struct {
	p     *slidingProc
	t     *task
	r     record
	inner []byte
	seen  map[int64]bool
}

func (p *slidingProc) process(t *task, r record) error {
	// As Kafka Streams, sliding windows skip a null value too.
	if skipsNull(t, p.name, r, false) {
		return nil
	}
	d := p.spec.size
	// A record whose right window would be closed too is late as a whole.
	if r.timestamp+d+p.spec.grace < t.streamTime {
		p.store.dropLate(t, r, Windowed{Key: r.key, Start: r.timestamp, End: r.timestamp + d})
		return nil
	}
	inner, err := p.innerKey(t, r.key)
	if err != nil {
		return err
	}
	run := &slidingRun{p: p, t: t, r: r, inner: inner, seen: make(map[int64]bool)}
	if r.timestamp < d {
		return run.early()
	}
	return run.inOrder()
}

// inOrder handles a record at t >= D, scanning the key's windows that
// start within [t-2D, t+1] from the newest start down.
func (run *slidingRun) inOrder() error {
	t, d := run.r.timestamp, run.p.spec.size
	windows, err := run.p.store.keyWindows(run.inner, run.r.key, t-2*d, t+1, false)
	if err != nil {
		return run.t.processingError(run.p.name, err)
	}
	var rightAgg, leftAgg *stamped
	leftExists, rightExists := false, false
	prevTs, havePrev := int64(0), false
scan:
	for i := len(windows) - 1; i >= 0; i-- {
		w := windows[i]
		v := w.value.(stamped)
		run.seen[w.wk.Start] = true
		switch end := w.wk.Start + d; {
		case w.wk.Start == t+1:
			rightExists = true
		case end > t:
			if rightAgg == nil {
				rightAgg = &v
			}
			if err := run.update(w.wk, &v); err != nil {
				return err
			}
		case end == t:
			leftExists = true
			if err := run.update(w.wk, &v); err != nil {
				return err
			}
			if v.ts >= t {
				return nil // a record at t came before: every window exists
			}
			prevTs, havePrev = v.ts, true
		default:
			leftAgg, prevTs, havePrev = &v, v.ts, true
			break scan
		}
	}
	if havePrev {
		if ps := prevTs + 1; !run.seen[ps] && ps+d >= t {
			if err := run.update(run.window(ps), nil); err != nil {
				return err
			}
		}
	}
	if !leftExists {
		var base *stamped
		if havePrev && leftAgg != nil && t-d <= prevTs {
			base = &stamped{value: leftAgg.value, ts: t}
		}
		if err := run.update(run.window(t-d), base); err != nil {
			return err
		}
	}
	return run.copyRight(rightExists, rightAgg)
}

// early handles a record at t < D, whose left window would start before
// the epoch: the windows starting within [0, t+1], oldest first, where the
// one at 0 is the combined window [0, D].
func (run *slidingRun) early() error {
	t := run.r.timestamp
	windows, err := run.p.store.keyWindows(run.inner, run.r.key, 0, t+1, false)
	if err != nil {
		return run.t.processingError(run.p.name, err)
	}
	var rightAgg, combined *stamped
	rightExists := false
	prevTs, havePrev := int64(0), false
	for _, w := range windows {
		v := w.value.(stamped)
		run.seen[w.wk.Start] = true
		switch s := w.wk.Start; {
		case s == 0:
			combined = &v
			if v.ts < t {
				prevTs, havePrev = v.ts, true
			}
		case s <= t:
			rightAgg = &v
			if err := run.update(w.wk, &v); err != nil {
				return err
			}
		case s == t+1:
			rightExists = true
		}
	}
	if rightAgg == nil && combined != nil && combined.ts > t {
		rightAgg = combined
	}
	if err := run.copyRight(rightExists, rightAgg); err != nil {
		return err
	}
	if havePrev && !run.seen[prevTs+1] {
		if err := run.update(run.window(prevTs+1), nil); err != nil {
			return err
		}
	}
	return run.update(run.window(0), combined)
}

func (run *slidingRun) window(start int64) Windowed {
	return Windowed{Key: run.r.key, Start: start, End: start + run.p.spec.size}
}

// update folds the record into window wk whose stored value is base (nil:
// a new window), unless stream time closed the window.
func (run *slidingRun) update(wk Windowed, base *stamped) error {
	p, t, r := run.p, run.t, run.r
	if p.closed(t, wk) {
		p.store.dropLate(t, r, wk)
		return nil
	}
	var old any
	if base != nil {
		old = *base
	}
	next, err := p.fold(r, old, base != nil)
	if err != nil {
		return t.processingError(p.name, err)
	}
	return p.store.putWindow(t, p.store.win.keyBytes(run.inner, wk), wk, next, old, base != nil, r.timestamp)
}

// copyRight creates the record's right window when records after it fall
// within D: its aggregate is that of the newest window holding them, which
// is exactly the records after t, so it is copied as it is.
func (run *slidingRun) copyRight(exists bool, agg *stamped) error {
	if exists || agg == nil || agg.ts <= run.r.timestamp {
		return nil
	}
	wk := run.window(run.r.timestamp + 1)
	return run.p.store.putWindow(run.t, run.p.store.win.keyBytes(run.inner, wk), wk, *agg, nil, false, agg.ts)
}
