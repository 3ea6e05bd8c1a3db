package streams

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A stream-stream join buffers each side's records in a window store of
// its own, a join buffer: every record is kept (keys end with the record's
// timestamp and a sequence number, so that equal keys and timestamps do
// not collide), segmented by timestamp and logged to a compact,delete
// changelog like any window store. A record first goes into its side's
// buffer (the KSTREAM-WINDOWED- node) and then looks for partners in the
// other side's (KSTREAM-JOINTHIS-/-JOINOTHER-), emitting a result per
// partner as they meet, partners in timestamp order.
//
// As in Kafka Streams, only the buffers' retention, Before+After+Grace,
// bounds what a record meets: a buffer holds the records within its
// retention of the latest timestamp it holds (its side's time, not the
// task's), so that a record out of order, however old, still joins the
// partners that the other side's buffer holds. A record older than its own
// buffer's retention is not buffered (it could never be found): it is
// counted and reported as late (LateRecordHook), and still joins.
//
// Left and outer joins keep the records that have met nobody yet in a
// third store shared by both sides, as Kafka Streams does since 3.1: keyed
// by timestamp first, so that the records whose window closed are found in
// time order. A record leaves it when a partner arrives, or when stream
// time passes its timestamp + look-back + grace, which emits it joined
// with nil: never before, since until then a partner may still come. A
// record that meets nobody and whose window has already closed when it
// comes (it is out of order by more than look-back + grace) is emitted
// with nil at once; so is a record without a key on an outer side, which
// can meet nobody, as Kafka Streams does since 3.7.

// Join joins s with other within the join windows: each pair of records
// with equal keys whose timestamps are close enough yields one result, as
// soon as the second of them is processed (the first still buffered: see
// JoinWindows), with the larger of the two timestamps. It takes Named,
// WithSerdes (the result's serdes; the value serde is unknown otherwise),
// JoinSerdes (the inputs') and Materialized (the stores' base name,
// logging and key serde). Inputs whose key may have changed are
// repartitioned first.
func (s *Stream) Join(other *Stream, joiner ValueJoiner, windows JoinWindows, opts ...Option) *Stream {
	return s.joinStream("Join", false, false, other, joiner, windows, opts)
}

// LeftJoin is Join that also emits every record of s that met no record
// of other, joined with nil, once its window has closed: when stream time
// passes its timestamp + After + Grace, or at once if it comes later than
// that. A record of s without a key is emitted with nil at once.
func (s *Stream) LeftJoin(other *Stream, joiner ValueJoiner, windows JoinWindows, opts ...Option) *Stream {
	return s.joinStream("LeftJoin", true, false, other, joiner, windows, opts)
}

// OuterJoin is LeftJoin that also emits the records of other that met no
// record of s, as (nil, record), once stream time passes their timestamp
// + Before + Grace (or at once, as LeftJoin does).
func (s *Stream) OuterJoin(other *Stream, joiner ValueJoiner, windows JoinWindows, opts ...Option) *Stream {
	return s.joinStream("OuterJoin", true, true, other, joiner, windows, opts)
}

// joinStream adds the nodes of a stream-stream join, named and ordered as
// Kafka Streams' KStreamImplJoin names and adds them. leftOuter keeps the
// unmatched records of s, rightOuter those of other.
func (s *Stream) joinStream(op string, leftOuter, rightOuter bool, other *Stream, joiner ValueJoiner, w JoinWindows, opts []Option) *Stream {
	b := s.b
	o := b.resolveOptions(op, optName|optSerdes|optStore|optJoinSerdes, opts)
	s.need(op, fnArg{"joiner", joiner == nil})
	if other == nil || other.b != b {
		b.errorAt(blame{arg: "other"}, "%s: the other stream is nil or comes from another Builder", op)
		return s
	}
	ws, err := w.spec()
	if err != nil {
		b.errorAt(blame{arg: "windows"}, "%s: %v", op, err)
	}
	if o.store.Retention != 0 || o.store.ValueSerde != nil {
		b.errorAt(blame{option: "Materialized"}, "%s: Materialized takes a name, a key serde and disabled logging here: the buffers keep each side's values in its own serde for Before+After+Grace", op)
	}
	suffixed := func(suffix string) string {
		if o.name == "" {
			return ""
		}
		return o.name + suffix
	}
	// A repartition named after the join blames its Named.
	byName := blame{}
	if o.name != "" {
		byName.option = "Named"
	}
	left, right := s.withSerdes(o.joinKey, o.joinValue), other.withSerdes(o.joinKey, o.joinOther)
	if left.repartitionRequired {
		base := suffixed("-left")
		if base == "" {
			base = left.node.name
		}
		left = left.repartitionAs(base, byName, operatorOptions{})
	}
	if right.repartitionRequired {
		base := suffixed("-right")
		if base == "" {
			base = right.node.name
		}
		right = right.repartitionAs(base, byName, operatorOptions{})
	}

	thisWinName := b.nameOrGenerate(suffixed("-this-windowed"), "KSTREAM-WINDOWED-")
	otherWinName := b.nameOrGenerate(suffixed("-other-windowed"), "KSTREAM-WINDOWED-")
	thisPrefix, thisSuffix := "KSTREAM-JOINTHIS-", "-this-join"
	if rightOuter {
		thisPrefix, thisSuffix = "KSTREAM-OUTERTHIS-", "-outer-this-join"
	}
	otherPrefix, otherSuffix := "KSTREAM-JOINOTHER-", "-other-join"
	if leftOuter {
		otherPrefix, otherSuffix = "KSTREAM-OUTEROTHER-", "-outer-other-join"
	}
	thisGenerated, otherGenerated := b.newName(thisPrefix), b.newName(otherPrefix)
	thisName, otherName := thisGenerated, otherGenerated
	if o.name != "" {
		thisName, otherName = o.name+thisSuffix, o.name+otherSuffix
	}
	mergeName := b.nameOrGenerate(suffixed("-merge"), "KSTREAM-MERGE-")

	// The stores are named after the generated join names, or after
	// Materialized's name, as Kafka Streams names them after
	// StreamJoined's store name.
	thisStore, otherStore := thisGenerated+"-store", otherGenerated+"-store"
	sharedStore := "KSTREAM-OUTERSHARED-" + thisGenerated[len(thisPrefix):] + "-store"
	if base := o.store.Name; base != "" {
		thisStore, otherStore = base+thisSuffix+"-store", base+otherSuffix+"-store"
		sharedStore = base + "-left-shared-join-store"
		if rightOuter {
			sharedStore = base + "-outer-shared-join-store"
		}
		if err := validTopicName(base); err != nil {
			b.errorAt(blame{option: "Materialized", arg: "Name"}, "%s: store %q: its name is part of its changelog topics: %v", op, base, err)
		}
	}
	keySerde := orDefault(o.store.KeySerde, orDefault(left.keySerde, right.keySerde))
	buffer := func(name string, valueSerde Serde, side int) *storeSpec {
		return &storeSpec{
			name: name, logged: !o.store.LoggingDisabled, keySerde: keySerde, valueSerde: valueSerde,
			window:    &windowSpec{kind: joinWindowKind, size: ws.before + ws.after, grace: ws.grace, joinSide: side},
			retention: ws.before + ws.after + ws.grace + 1,
		}
	}
	thisSpec, otherSpec := buffer(thisStore, left.valueSerde, 0), buffer(otherStore, right.valueSerde, 1)

	thisWin := b.addNode(thisWinName, processorNode)
	otherWin := b.addNode(otherWinName, processorNode)
	thisJoin := b.addNode(thisName, processorNode)
	otherJoin := b.addNode(otherName, processorNode)
	merge := b.addNode(mergeName, processorNode)
	for _, n := range []*graphNode{thisWin, otherWin, thisJoin, otherJoin, merge} {
		n.op = op
	}
	thisWin.storeSpecs, thisWin.stores = []*storeSpec{thisSpec}, []string{thisStore}
	otherWin.storeSpecs, otherWin.stores = []*storeSpec{otherSpec}, []string{otherStore}
	thisWin.makeProcessor = joinBufferFactory(thisStore, ws, true)
	otherWin.makeProcessor = joinBufferFactory(otherStore, ws, false)
	thisJoin.stores, otherJoin.stores = []string{otherStore}, []string{thisStore}
	shared := ""
	if leftOuter {
		shared = sharedStore
		thisJoin.storeSpecs = []*storeSpec{{name: shared, logged: !o.store.LoggingDisabled}}
		thisJoin.stores = append(thisJoin.stores, shared)
		otherJoin.stores = append(otherJoin.stores, shared)
	}
	thisJoin.makeProcessor = streamJoinFactory(streamJoinSide{left: true, this: thisStore, other: otherStore, shared: shared, outer: leftOuter, spec: ws, joiner: joiner})
	otherJoin.makeProcessor = streamJoinFactory(streamJoinSide{left: false, this: otherStore, other: thisStore, shared: shared, outer: rightOuter, spec: ws, joiner: joiner})
	merge.makeProcessor = passFactory
	connect(left.node, thisWin)
	connect(right.node, otherWin)
	connect(thisWin, thisJoin)
	connect(otherWin, otherJoin)
	connect(thisJoin, merge)
	connect(otherJoin, merge)
	b.copartition(left.node, right.node)
	return &Stream{b: b, node: merge, keySerde: orDefault(o.keySerde, left.keySerde), valueSerde: o.valueSerde}
}

// joinBufferProc puts each record of one side into its buffer, unless it
// is too old for the buffer's retention, and passes it on to the join.
type joinBufferProc struct {
	name  string
	store *taskStore
	spec  joinSpec
	left  bool
	next  []processor
	// rawValues says the buffer's value serde is the bytes serde.
	rawValues bool
}

func joinBufferFactory(store string, spec joinSpec, left bool) processorFactory {
	return func(name string, next []processor, t *task) processor {
		st := t.stores[store]
		st.processor = name
		t.windowed = append(t.windowed, st)
		_, raw := st.valueSerde.(bytesSerde)
		return &joinBufferProc{name: name, store: st, spec: spec, left: left, next: next, rawValues: raw}
	}
}

func (p *joinBufferProc) process(t *task, r record) error {
	if r.value == nil {
		return nil // as Kafka Streams: nothing to join
	}
	st := p.store
	w := st.win
	if r.key == nil {
		// Never buffered: the join emits it alone if its side is outer.
		w.last, w.lastValue, w.lastAdded = nil, nil, nil
		return forward(t, p.next, r)
	}
	inner, err := st.keySerde.Serialize(st.changelogOrName(), r.key)
	if err != nil {
		return t.processingError(p.name, fmt.Errorf("store %q: serializing key: %w", st.spec.name, err))
	}
	vb, err := st.valueBytes(t, r.value)
	if err != nil {
		return err
	}
	// One slice of the task's key arena holds the changelog key (the
	// producer keeps it until sent, the index until it expires) and, for
	// a buffer pebble holds, the pebble key (the store keeps it until the
	// commit): inner, timestamp, sequence number; then storeKey's.
	n := len(inner) + 12
	size := n
	if w.mem == nil {
		size = 2*n + 8
	}
	buf := t.keys.alloc(size)
	buf = append(buf, inner...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.timestamp))
	buf = binary.BigEndian.AppendUint32(buf, w.seq)
	kb := buf[:n:n]
	w.seq++
	w.last, w.lastValue, w.lastAdded = kb, vb, nil
	if r.timestamp < p.spec.visibleFrom(max(w.storedUpTo, r.timestamp)) {
		// Past the buffer's retention: no record could find it there.
		from, to := p.spec.partners(p.left, r.timestamp)
		st.dropLate(t, r, Windowed{Key: r.key, Start: from, End: to})
		return forward(t, p.next, r)
	}
	w.maxSegment = max(w.maxSegment, r.timestamp/w.interval)
	w.stored(r.timestamp)
	if w.mem == nil {
		// Not in memory (no changelog): pebble is its only copy.
		if err := st.db.PutWriteOnly(w.storeKey(buf[n:], kb), vb); err != nil {
			return t.processingError(p.name, fmt.Errorf("writing store %q: %w", st.spec.name, err))
		}
	}
	st.log(t, kb, vb, r.timestamp)
	// The index keeps the value as pebble's bytes decode, so that the
	// joiner sees the same types before and after a restart.
	v := r.value
	switch {
	case p.rawValues:
		// The bytes serde decodes vb as vb itself: boxed over a header
		// of the task's arena, not one allocated per record.
		v = t.headers.box(vb)
	case !st.typed.decodesAs(v):
		if v, err = st.valueSerde.Deserialize(st.changelogOrName(), vb); err != nil {
			return t.processingError(p.name, fmt.Errorf("store %q: decoding value: %w", st.spec.name, err))
		}
	}
	w.lastAdded = w.addIndexed(inner, bufferedRecord{kb: kb, ts: r.timestamp, value: v}, st.joinPartner())
	return forward(t, p.next, r)
}

// streamJoinSide is what one side's join processor needs to know.
type streamJoinSide struct {
	left bool
	// this and other name the two buffers, shared the store of the
	// unmatched records ("" for an inner join).
	this, other, shared string
	// outer says whether this side's unmatched records are emitted.
	outer  bool
	spec   joinSpec
	joiner ValueJoiner
}

// streamJoinProc joins the record its side just buffered with the other
// side's buffered records.
type streamJoinProc struct {
	streamJoinSide
	name        string
	this, other *taskStore
	unmatched   *unmatchedStore
	next        []processor
	matches     []bufferedRecord
}

// bufferedRecord is a record found in a join buffer: its changelog key
// (the serialized key, timestamp and sequence number) and value.
type bufferedRecord struct {
	kb    []byte
	ts    int64
	value any
}

func streamJoinFactory(side streamJoinSide) processorFactory {
	return func(name string, next []processor, t *task) processor {
		p := &streamJoinProc{streamJoinSide: side, name: name, this: t.stores[side.this], other: t.stores[side.other], next: next}
		p.this.otherBuffer = p.other
		if side.shared != "" {
			st := t.stores[side.shared]
			if st.unmatched == nil {
				st.processor = name
				st.unmatched = &unmatchedStore{store: st, spec: side.spec, joiner: side.joiner}
			}
			// The left side's buffer decodes left records, the right's
			// right ones, whichever side emits them.
			if side.left {
				st.unmatched.leftValues = p.this.valueSerde
			} else {
				st.unmatched.rightValues = p.this.valueSerde
			}
			st.unmatched.keys = p.this.keySerde
			p.unmatched = st.unmatched
		}
		return p
	}
}

func (p *streamJoinProc) process(t *task, r record) error {
	last := p.this.win.last
	if last == nil {
		// A record without a key meets nobody.
		if !p.outer {
			return nil
		}
		return p.emitAlone(t, r)
	}
	if p.unmatched != nil {
		if err := p.unmatched.emitClosed(t, p.next, r.headers); err != nil {
			return err
		}
	}
	inner := last[:len(last)-12]
	from, to := p.spec.partners(p.left, r.timestamp)
	from = max(from, p.spec.visibleFrom(p.other.win.storedUpTo))
	// Copied, so that nothing downstream can change them under the loop.
	p.matches = p.matches[:0]
	if theirs := p.partnerRecords(inner); theirs != nil {
		p.matches = append(p.matches, theirs.between(from, to)...)
	}
	for _, m := range p.matches {
		l, rv := r.value, m.value
		if !p.left {
			l, rv = m.value, r.value
		}
		v, err := p.joiner(r.key, l, rv)
		if err != nil {
			return t.processingError(p.name, err)
		}
		if p.unmatched != nil {
			// The partner has met a record now: it is no longer due
			// for an outer result.
			if err := p.unmatched.remove(t, !p.left, m.kb); err != nil {
				return t.processingError(p.name, err)
			}
		}
		if err := forward(t, p.next, record{key: r.key, value: v, timestamp: max(r.timestamp, m.ts), headers: r.headers}); err != nil {
			return err
		}
	}
	found := len(p.matches) > 0
	clear(p.matches)
	switch {
	case found || !p.outer:
		return nil
	case t.streamTime >= p.spec.closesAt(p.left, r.timestamp):
		// Its window closed before it came: no partner can come now.
		return p.emitAlone(t, r)
	}
	if err := p.unmatched.add(t, p.left, last, p.this.win.lastValue, r.timestamp); err != nil {
		return t.processingError(p.name, err)
	}
	return nil
}

// emitAlone emits a record of an outer side joined with nil, at once.
func (p *streamJoinProc) emitAlone(t *task, r record) error {
	l, rv := r.value, any(nil)
	if !p.left {
		l, rv = nil, r.value
	}
	v, err := p.joiner(r.key, l, rv)
	if err != nil {
		return t.processingError(p.name, err)
	}
	return forward(t, p.next, record{key: r.key, value: v, timestamp: r.timestamp, headers: r.headers})
}

// partnerRecords returns the other buffer's records under serialized key
// inner, the key of the record just processed (nil if it has none): the
// partner of the records the record was added to, or, when it was not
// buffered, the other index's.
func (p *streamJoinProc) partnerRecords(inner []byte) *bufferedRecords {
	other := p.other.win
	k := p.this.win.lastAdded
	if k == nil {
		if k = other.index[string(inner)]; k == nil {
			return nil
		}
	}
	return other.records(k)
}

// joinPartner returns the window state of a join buffer's partner, nil if
// it has none.
func (st *taskStore) joinPartner() *windowState {
	if st.otherBuffer == nil {
		return nil
	}
	return st.otherBuffer.win
}

// scanBuffered is bufferedRecords reading pebble's committed data, oldest
// first: what the index must agree with once committed. The buffer's
// pebble keys are in time order, so it reads every record of the time
// range and keeps inner's.
func (st *taskStore) scanBuffered(dst []bufferedRecord, inner []byte, from, to int64) ([]bufferedRecord, error) {
	w := st.win
	from = max(from, 0)
	if to < from {
		return dst, nil
	}
	var decodeErr error
	for seg := max(from/w.interval, w.expiredBelow); seg <= min(to/w.interval, w.maxSegment); seg++ {
		lower := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(seg)), uint64(from))
		upper := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(seg)), uint64(to+1))
		err := st.db.Range(lower, upper, func(sk, vb []byte) bool {
			if !bytes.Equal(sk[8+w.tsBytes:], inner) {
				return true
			}
			kb := w.changelogKey(nil, sk)
			v, err := st.valueSerde.Deserialize(st.changelogOrName(), bytes.Clone(vb))
			if err != nil {
				decodeErr = fmt.Errorf("store %q: decoding buffered value: %w", st.spec.name, err)
				return false
			}
			dst = append(dst, bufferedRecord{kb: kb, ts: w.segmentTime(kb), value: v})
			return true
		})
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// unmatchedStore keeps the records of a left or outer join that have not
// met a partner yet, shared by both sides' processors. A row's key is
//
//	[timestamp][side][sequence number][serialized key]
//
// (side 0 left, 1 right; the sequence number is the record's in its
// buffer) and its value the record's value bytes.
type unmatchedStore struct {
	store  *taskStore
	spec   joinSpec
	joiner ValueJoiner
	keys   Serde
	// leftValues and rightValues decode the two sides' values.
	leftValues, rightValues Serde
	// nextClose is at or before the earliest close of a row in the
	// store: until stream time reaches it, nothing is due and the store
	// is not scanned. Zero at start, so that the first record scans.
	nextClose int64
	due       []unmatchedRow
	// scratch holds the key remove looks up.
	scratch []byte
}

type unmatchedRow struct {
	key []byte
	vb  []byte
}

// unmatchedKey appends the row key of the buffered record with changelog
// key kb on the given side to dst, which has room for len(kb)+1 bytes.
func unmatchedKey(dst []byte, left bool, kb []byte) []byte {
	n := len(kb) - 12
	k := append(dst, kb[n:n+8]...)
	if left {
		k = append(k, 0)
	} else {
		k = append(k, 1)
	}
	k = append(k, kb[n+8:]...)
	return append(k, kb[:n]...)
}

// add keeps a record that met no partner.
func (u *unmatchedStore) add(t *task, left bool, kb, vb []byte, ts int64) error {
	k := unmatchedKey(t.keys.alloc(len(kb)+1), left, kb)
	if err := u.store.db.Put(k, vb); err != nil {
		return fmt.Errorf("writing store %q: %w", u.store.spec.name, err)
	}
	u.store.log(t, k, vb, ts)
	u.nextClose = min(u.nextClose, u.spec.closesAt(left, ts))
	return nil
}

// remove drops the row of a buffered record that met a partner, if it
// has one. The key is looked up in a scratch buffer: only a row found
// takes a key the producer keeps.
func (u *unmatchedStore) remove(t *task, left bool, kb []byte) error {
	u.scratch = unmatchedKey(u.scratch[:0], left, kb)
	if _, ok, err := u.store.db.Get(u.scratch); err != nil || !ok {
		return err
	}
	return u.delete(t, append(t.keys.alloc(len(u.scratch)), u.scratch...))
}

func (u *unmatchedStore) delete(t *task, k []byte) error {
	if err := u.store.db.Delete(k); err != nil {
		return fmt.Errorf("writing store %q: %w", u.store.spec.name, err)
	}
	u.store.log(t, k, nil, t.streamTime)
	return nil
}

// emitClosed emits, joined with nil and at their own timestamps, the
// unmatched records whose window stream time has closed, in Kafka
// Streams' order, and drops them from the store. They carry the headers
// of the record being processed, as in Kafka Streams (the store keeps no
// headers).
func (u *unmatchedStore) emitClosed(t *task, next []processor, headers []kgo.RecordHeader) error {
	now := t.streamTime
	if now < u.nextClose {
		return nil
	}
	// A row may be due only if its timestamp is at most bound; the rows
	// after it close after now.
	bound := now - 1 - min(u.spec.before, u.spec.after) - u.spec.grace
	u.nextClose = now + 1
	if bound < 0 {
		return nil
	}
	u.due = u.due[:0]
	upper := binary.BigEndian.AppendUint64(nil, uint64(bound+1))
	err := u.store.db.Range(nil, upper, func(k, vb []byte) bool {
		ts, left := int64(binary.BigEndian.Uint64(k)), k[8] == 0
		if closes := u.spec.closesAt(left, ts); closes > now {
			u.nextClose = min(u.nextClose, closes)
			return true
		}
		u.due = append(u.due, unmatchedRow{key: bytes.Clone(k), vb: bytes.Clone(vb)})
		return true
	})
	if err != nil {
		return t.processingError(u.store.processor, fmt.Errorf("scanning store %q: %w", u.store.spec.name, err))
	}
	// Kafka Streams' order: by timestamp, right records before left ones
	// (its shared store's keys hold the side as 0 for right), then by
	// key bytes, and at equal keys as buffered.
	slices.SortFunc(u.due, func(a, b unmatchedRow) int {
		return cmp.Or(
			cmp.Compare(binary.BigEndian.Uint64(a.key), binary.BigEndian.Uint64(b.key)),
			cmp.Compare(b.key[8], a.key[8]),
			bytes.Compare(a.key[13:], b.key[13:]),
			bytes.Compare(a.key[9:13], b.key[9:13]))
	})
	for _, row := range u.due {
		if err := u.emit(t, next, row, headers); err != nil {
			return err
		}
	}
	return nil
}

// emit sends one closed unmatched row downstream and deletes it.
func (u *unmatchedStore) emit(t *task, next []processor, row unmatchedRow, headers []kgo.RecordHeader) error {
	topic := u.store.changelogOrName()
	ts, left := int64(binary.BigEndian.Uint64(row.key)), row.key[8] == 0
	key, err := u.keys.Deserialize(topic, row.key[13:])
	if err != nil {
		return t.processingError(u.store.processor, fmt.Errorf("store %q: decoding key: %w", u.store.spec.name, err))
	}
	values := u.rightValues
	if left {
		values = u.leftValues
	}
	v, err := values.Deserialize(topic, row.vb)
	if err != nil {
		return t.processingError(u.store.processor, fmt.Errorf("store %q: decoding value: %w", u.store.spec.name, err))
	}
	var joined any
	if left {
		joined, err = u.joiner(key, v, nil)
	} else {
		joined, err = u.joiner(key, nil, v)
	}
	if err != nil {
		return t.processingError(u.store.processor, err)
	}
	if err := u.delete(t, row.key); err != nil {
		return t.processingError(u.store.processor, err)
	}
	return forward(t, next, record{key: key, value: joined, timestamp: ts, headers: headers})
}
