package streams

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/braidstream/braid/runtime/internal/bytebox"
	"github.com/braidstream/braid/runtime/internal/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// taskStore is one key-value store of one task: its pebble store, its
// write-back record cache and its changelog partition. The processing
// goroutine owns it, except while the restorer fills it before the task
// runs.
type taskStore struct {
	spec                 *storeSpec
	db                   *state.Store
	keySerde, valueSerde Serde
	// changelog is the real changelog topic, "" with logging disabled;
	// the store writes partition partition of it, its task's partition.
	changelog  string
	partition  int32
	downstream []processor
	// processor names the node that writes the store, for errors.
	processor string

	// The record cache: dirty rows by serialized key, and the order they
	// became dirty in, which is the order they are flushed and evicted in.
	cache      map[string]*cacheEntry
	order      []string
	cacheBytes int

	// lastOffset is the highest changelog offset the broker acknowledged;
	// promises run on franz-go's goroutines.
	lastOffset atomic.Int64
	promise    func(*kgo.Record, error)
	// restored counts the changelog records applied by the last restore.
	restored int64
	// snaps is the store's snapshot bookkeeping (Config.Snapshots);
	// loadedFrom the snapshot a replica's store started from, for its
	// events.
	snaps      storeSnapshots
	loadedFrom *SnapshotRestore

	// win is set for window and session stores and join buffers;
	// unmatched for the store of a left or outer stream-stream join's
	// unmatched records.
	win       *windowState
	unmatched *unmatchedStore
	// otherBuffer is a join buffer's partner, the other side's buffer of
	// the join, which shares its index's allocations (bufferedRecords);
	// set when the task makes the join's processors, before it loads
	// either index.
	otherBuffer *taskStore
	// scratch is reused for pebble keys of windowed rows: pebble copies
	// keys into its batch and reads them only during the call.
	scratch []byte

	// stamped is set for a timestamped key-value store (Kafka Streams'
	// KIP-258): in pebble each row's value follows the 8-byte big-endian
	// timestamp of the row, the largest timestamp of the records it comes
	// from. The changelog keeps the plain value and carries the row's
	// timestamp as its record's, as Kafka Streams logs it, so that a
	// restore rebuilds the timestamps. rowBuf is reused for the pebble
	// value (pebble copies it); arena holds the values a restore builds
	// until its batch is applied.
	stamped bool
	rowBuf  []byte
	arena   []byte

	// typed is what decodesAs checks of valueSerde, worked out once: the
	// cache asks it of a value several times per record.
	typed typedValues
}

// typedValues says which values a store's serde decodes back to
// themselves (see typedValues.decodesAs): int64 or string values (kind), inside a
// windowed store's stamped values when stamped is set.
type typedValues struct {
	kind    typedKind
	stamped bool
}

type typedKind uint8

const (
	untyped typedKind = iota
	typedInt64
	typedString
)

// typedValuesOf works out typedValues for serde.
func typedValuesOf(serde Serde) typedValues {
	var tv typedValues
	if s, ok := serde.(stampedSerde); ok {
		tv.stamped, serde = true, s.inner
	}
	switch serde {
	case Int64:
		tv.kind = typedInt64
	case String:
		tv.kind = typedString
	}
	return tv
}

// decodesStamped is decodesAs of a windowed store's value sv, not boxed.
func (tv typedValues) decodesStamped(sv stamped) bool {
	if !tv.stamped {
		return false
	}
	switch tv.kind {
	case typedInt64:
		_, ok := sv.value.(int64)
		return ok
	case typedString:
		_, ok := sv.value.(string)
		return ok
	}
	return false
}

// decodesAs reports whether the serde tv was worked out for decodes what
// it encodes of v back to v itself, value and type, so that a cached row
// can be used without the round trip: int64 through Int64 and string
// through String, also inside a windowed store's timestamped values.
func (tv typedValues) decodesAs(v any) bool {
	if tv.stamped {
		sv, ok := v.(stamped)
		if !ok {
			return false
		}
		v = sv.value
	}
	switch tv.kind {
	case typedInt64:
		_, ok := v.(int64)
		return ok
	case typedString:
		_, ok := v.(string)
		return ok
	}
	return false
}

// cacheEntry is a row of the record cache: its latest value and, while
// it is dirty, the value it had before it became dirty, which downstream
// table operators need. A key-value store keeps a row in its cache after
// flushing it, clean, so that the next update of the key reads the cache
// rather than pebble: at exactly-once's 100 ms commits most updates
// would otherwise follow a flush.
type cacheEntry struct {
	key      any
	keyBytes []byte
	// cacheKey is keyBytes as the cache's map and order key it, made once
	// so that a row becoming dirty again costs no allocation.
	cacheKey   string
	value      any
	valueBytes []byte // nil deletes the row
	old        any
	oldFound   bool
	timestamp  int64
	dirty      bool
	// stale says valueBytes is not value's encoding yet: an update whose
	// value the serde cannot fail on (see decodesAs) is encoded when the
	// row is flushed, once per flush rather than once per record. A stale
	// row's valueBytes stays non-nil: the row is not a deletion.
	stale bool
	// ownInt or ownStamped, when set, is the box value's interface points
	// into, which nobody but the row has seen: the next update rewrites it
	// rather than allocating (cache_box.go). With both set, the value is
	// a window's count: ownStamped, whose value points at ownInt.
	ownInt     *int64
	ownStamped *stamped
}

// cacheEntryOverhead approximates the bytes a cache entry costs beside its
// key, for the cache's size bound.
const cacheEntryOverhead = 96

func changelogTopic(applicationID, store string) string {
	return applicationID + "-" + store + "-changelog"
}

// openStore opens (or rebuilds) the store of spec for task id.
func (a *App) openStore(spec *storeSpec, id TaskID) (*taskStore, error) {
	if a.beforeStoreOpen != nil {
		a.beforeStoreOpen()
	}
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, id.String(), spec.name)
	layout := ""
	stamped := spec.timestamped && spec.window == nil
	if stamped {
		// Key-value stores once kept the plain value: a store written
		// that way is rebuilt from its changelog, whose records carry
		// the timestamps.
		layout = "timestamped values"
	}
	if spec.window != nil && spec.window.kind == joinWindowKind {
		// Join buffers once kept their keys as other windowed stores do
		// (see windowState.storeKey): a store written that way is rebuilt
		// from its changelog, not misread.
		layout = "join buffer by time"
	}
	db, err := state.Open(state.Options{
		Dir:             dir,
		Identity:        a.cfg.ApplicationID + "/" + id.String() + "/" + spec.name,
		KeyLayout:       layout,
		BlockCacheBytes: a.cfg.StoreBlockCacheBytes,
		Logged:          spec.logged,
		Logger:          a.log,
	})
	if err != nil {
		return nil, fmt.Errorf("opening store %q of task %s: %w", spec.name, id, err)
	}
	if reason := db.Rebuilt(); reason != "" {
		a.log.Warn("state dir not trusted, rebuilding it from the changelog", "store", spec.name, "task", id.String(), "reason", reason)
	}
	st := &taskStore{
		spec:       spec,
		db:         db,
		keySerde:   orDefault(spec.keySerde, a.cfg.DefaultKeySerde),
		valueSerde: orDefault(spec.valueSerde, a.cfg.DefaultValueSerde),
		partition:  id.Partition,
		cache:      make(map[string]*cacheEntry),
		stamped:    stamped,
	}
	if spec.logged {
		st.changelog = changelogTopic(a.cfg.ApplicationID, spec.name)
	}
	if spec.window != nil {
		st.win = newWindowState(spec, st.keySerde)
		// A join buffer keeps records as they came, under their own
		// keys; the other windowed stores keep timestamped aggregates.
		if spec.window.kind != joinWindowKind {
			st.keySerde = st.win.keySerde()
			st.valueSerde = stampedSerde{inner: st.valueSerde}
		}
	}
	st.typed = typedValuesOf(st.valueSerde)
	st.lastOffset.Store(db.Checkpoint().ChangelogOffset - 1)
	st.promise = func(r *kgo.Record, err error) {
		if err != nil {
			a.onProduced(r, err)
			return
		}
		for {
			cur := st.lastOffset.Load()
			if r.Offset <= cur || st.lastOffset.CompareAndSwap(cur, r.Offset) {
				return
			}
		}
	}
	return st, nil
}

func orDefault(s, def Serde) Serde {
	if s == nil {
		return def
	}
	return s
}

// get returns the current value of key: the cache's, else pebble's. Both
// are decoded from bytes, so an aggregator sees the same types whether its
// row was cached or stored.
func (st *taskStore) get(key any) (any, bool, error) {
	kb, err := st.keyBytes(key)
	if err != nil {
		return nil, false, err
	}
	return st.getBytes(kb)
}

// getStamped is get that also returns the row's timestamp (see
// ValueAndTimestamp). In a window or session store, whose key is a
// Windowed, it returns the aggregate and its timestamp, not the stored
// form of the two that get returns there.
func (st *taskStore) getStamped(key any) (value any, ts int64, found bool, err error) {
	kb, err := st.keyBytes(key)
	if err != nil {
		return nil, 0, false, err
	}
	if value, ts, found, err = st.getBytesStamped(kb); err != nil || !found {
		return nil, 0, found, err
	}
	if sv, ok := value.(stamped); ok && st.win != nil {
		return sv.value, sv.ts, true, nil
	}
	return value, ts, true, nil
}

// keyBytes serializes key as the store's changelog keys it.
func (st *taskStore) keyBytes(key any) ([]byte, error) {
	kb, err := st.keySerde.Serialize(st.changelogOrName(), key)
	if err != nil {
		return nil, fmt.Errorf("store %q: serializing key: %w", st.spec.name, err)
	}
	return kb, nil
}

// getBytes is get with the key serialized.
func (st *taskStore) getBytes(kb []byte) (any, bool, error) {
	v, _, found, err := st.getBytesStamped(kb)
	return v, found, err
}

// getBytesStamped is getStamped with the key serialized.
func (st *taskStore) getBytesStamped(kb []byte) (any, int64, bool, error) {
	if st.win != nil && st.win.final != nil {
		if v, found, hit := st.win.final.getFinal(kb); hit {
			return v, 0, found, nil // a window store's rows carry no row timestamp
		}
	}
	return st.getRow(st.row(keyView(kb)), kb)
}

// getRow is getBytesStamped with kb's cached row looked up already: e,
// or nil when the cache does not hold it.
func (st *taskStore) getRow(e *cacheEntry, kb []byte) (any, int64, bool, error) {
	vb, ok, ts := []byte(nil), false, int64(0)
	var err error
	if e != nil {
		if st.stamped {
			ts = e.timestamp
		}
		if e.valueBytes != nil && st.typed.decodesAs(e.value) {
			e.disown() // the caller may keep the value
			return e.value, ts, true, nil
		}
		vb, ok = e.valueBytes, e.valueBytes != nil
	} else {
		dbKey := kb
		if st.win != nil && !st.win.writeThrough && st.win.notStored(kb) {
			return nil, 0, false, nil
		}
		if st.win != nil {
			dbKey = st.win.storeKey(st.scratch[:0], kb)
			st.scratch = dbKey
		}
		if vb, ok, err = st.db.Get(dbKey); err != nil {
			return nil, 0, false, err
		}
		if ok && st.stamped {
			if ts, vb, err = splitStamped(vb); err != nil {
				return nil, 0, false, fmt.Errorf("store %q: %w", st.spec.name, err)
			}
		}
	}
	if !ok {
		return nil, 0, false, nil
	}
	v, err := st.valueSerde.Deserialize(st.changelogOrName(), vb)
	if err != nil {
		return nil, 0, false, fmt.Errorf("store %q: decoding stored value: %w", st.spec.name, err)
	}
	return v, ts, true, nil
}

// splitStamped splits a timestamped store's pebble value into the row's
// timestamp and the value's serde bytes.
func splitStamped(b []byte) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("decoding stored value: %d bytes is too short for a timestamped row", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), b[8:], nil
}

// appendStamped appends a timestamped store's pebble value of vb at ts.
func appendStamped(dst []byte, ts int64, vb []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return append(dst, vb...)
}

func (st *taskStore) changelogOrName() string {
	if st.changelog != "" {
		return st.changelog
	}
	return st.spec.name
}

// put records a new value (nil deletes) for key. It serializes at once,
// while the record is current, so that a serde error goes to the error
// handler with the record's coordinates. With the cache on the row is held
// until the next flush; otherwise it goes to pebble, the changelog and
// downstream at once.
func (st *taskStore) put(t *task, key, value, old any, oldFound bool, ts int64) error {
	kb, err := st.keyBytes(key)
	if err != nil {
		return t.processingError(st.processor, err)
	}
	vb, err := st.valueBytes(t, value)
	if err != nil {
		return err
	}
	return st.putBytes(t, kb, key, value, vb, old, oldFound, ts)
}

// valueBytes serializes a value to store; nil stays nil, a deletion.
func (st *taskStore) valueBytes(t *task, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	vb, err := st.valueSerde.Serialize(st.changelogOrName(), value)
	if err != nil {
		return nil, t.processingError(st.processor, fmt.Errorf("store %q: serializing value: %w", st.spec.name, err))
	}
	if vb == nil {
		vb = []byte{} // a value, not a deletion
	}
	return vb, nil
}

// putBytes is put with key and value serialized.
func (st *taskStore) putBytes(t *task, kb []byte, key, value any, vb []byte, old any, oldFound bool, ts int64) error {
	if !st.spec.cached {
		return st.flushEntry(t, &cacheEntry{key: key, keyBytes: kb, value: value, valueBytes: vb, old: old, oldFound: oldFound, timestamp: ts})
	}
	e := st.row(keyView(kb))
	if e == nil {
		e = st.insert(t, kb, key)
	}
	st.set(e, value, vb, old, oldFound, ts)
	return nil
}

// insert adds a row for key (serialized kb) to the cache, which does not
// hold it. The cache's key shares the row's copy of kb, which nothing
// writes: one allocation less per new row.
func (st *taskStore) insert(t *task, kb []byte, key any) *cacheEntry {
	e := &cacheEntry{keyBytes: append([]byte(nil), kb...)}
	e.cacheKey = unsafe.String(unsafe.SliceData(e.keyBytes), len(e.keyBytes))
	e.key = ownKey(&e.keyBytes, key)
	st.addRow(e)
	st.account(t, len(kb))
	return e
}

// account counts a new row with a key of n bytes in the cache's size.
func (st *taskStore) account(t *task, n int) { st.charge(t, n+cacheEntryOverhead) }

// charge adds n bytes (a negative n: takes them) to what the store's and
// its task's caches are counted to hold.
func (st *taskStore) charge(t *task, n int) {
	st.cacheBytes += n
	t.cacheBytes += n
}

// ownKey is the key a new row keeps for key, given the row's own copy of
// the key's serialization, *kb: a raw []byte key that is its own
// serialization (the bytes serde) is taken over the copy. A fetched
// record's key lies in the batch it was fetched in, which a row kept long
// (a key-value store's rows stay cached) would otherwise keep alive, its
// record with it, outside the cache's budget.
func ownKey(kb *[]byte, key any) any {
	if b, ok := key.([]byte); ok && len(b) > 0 && bytes.Equal(b, *kb) {
		return bytebox.At(kb)
	}
	return key
}

// set gives the cached row e value (serialized vb), as putBytes does; old
// is the value before it, kept if the row becomes dirty.
func (st *taskStore) set(e *cacheEntry, value any, vb []byte, old any, oldFound bool, ts int64) {
	if !e.dirty {
		e.dirty = true
		e.old, e.oldFound = old, oldFound
		st.order = append(st.order, e.cacheKey)
	}
	e.disown()
	e.value, e.valueBytes, e.timestamp, e.stale = value, vb, ts, false
}

// cachedTyped returns key kb's row when it is in the record cache with a
// value that needs no decoding (see decodesAs), the common case of a key
// updated again, else nil.
func (st *taskStore) cachedTyped(kb []byte) *cacheEntry {
	e := st.row(keyView(kb))
	if e == nil || e.valueBytes == nil || !st.typed.decodesAs(e.value) {
		return nil
	}
	return e
}

// update gives the row e that cachedTyped returned a new value (not nil)
// at ts, as putBytes would but without looking the key up again; it
// encodes the value at the flush when the serde cannot fail on it.
func (st *taskStore) update(t *task, e *cacheEntry, value any, ts int64) error {
	st.markDirty(e)
	e.disown()
	e.value, e.timestamp = value, ts
	return st.refresh(t, e)
}

// markDirty makes the cached row e dirty, its current value the old one,
// if it is not dirty already.
func (st *taskStore) markDirty(e *cacheEntry) {
	if !e.dirty {
		e.dirty = true
		e.disown()
		e.old, e.oldFound = e.value, true
		st.order = append(st.order, e.cacheKey)
	}
}

// refresh brings an updated row's valueBytes in line with its value: at
// the flush when the serde cannot fail on it, else now.
func (st *taskStore) refresh(t *task, e *cacheEntry) error {
	if st.typed.decodesAs(e.value) {
		e.stale = true
		return nil
	}
	vb, err := st.valueBytes(t, e.value)
	if err != nil {
		return err
	}
	e.valueBytes, e.stale = vb, false
	return nil
}

// cachedTimestamp is the timestamp of the cached row e once a record at ts
// updates it, as getBytesStamped and rowTimestamp make it: only a
// timestamped store keeps its rows' timestamps.
func (st *taskStore) cachedTimestamp(e *cacheEntry, ts int64) int64 {
	rowTS := int64(0)
	if st.stamped {
		rowTS = e.timestamp
	}
	return rowTimestamp(ts, rowTS, true)
}

// encode brings a stale row's valueBytes up to date.
func (st *taskStore) encode(e *cacheEntry) error {
	if !e.stale {
		return nil
	}
	vb, err := st.valueSerde.Serialize(st.changelogOrName(), e.value)
	if err != nil {
		return fmt.Errorf("store %q: serializing value: %w", st.spec.name, err)
	}
	if vb == nil {
		vb = []byte{} // a value, not a deletion
	}
	e.valueBytes, e.stale = vb, false
	return nil
}

// flushEntry writes one row to pebble's pending batch and the changelog
// and sends the change downstream. A row created and deleted between two
// flushes never existed for anyone else: it is dropped.
func (st *taskStore) flushEntry(t *task, e *cacheEntry) error {
	if e.valueBytes == nil && !e.oldFound {
		return nil
	}
	if err := st.encode(e); err != nil {
		return err
	}
	if err := st.writeRow(e); err != nil {
		return err
	}
	st.log(t, e.keyBytes, e.valueBytes, e.timestamp)
	e.disown() // downstream may keep the value
	if st.win != nil {
		return st.forwardWindowed(t, e)
	}
	old := e.old
	if !e.oldFound {
		old = nil
	}
	return forward(t, st.downstream, record{key: e.key, value: e.value, old: old, timestamp: e.timestamp})
}

// log sends a row to the store's changelog, if it has one. The producer
// keeps kb and vb until the record is sent.
func (st *taskStore) log(t *task, kb, vb []byte, ts int64) {
	if st.changelog == "" {
		return
	}
	r := t.records.alloc()
	r.Topic, r.Partition, r.Key, r.Value = st.changelog, st.partition, kb, vb
	r.Timestamp = time.UnixMilli(ts)
	t.app.send(r, st.promise)
}

// writeRow writes a flushed row to pebble's pending batch. A windowed row
// is already there when the store writes through, and is not written when
// its window expired meanwhile: its segment may be dropped.
func (st *taskStore) writeRow(e *cacheEntry) error {
	if st.win != nil {
		if st.win.writeThrough || st.win.expired(e.keyBytes) {
			return nil
		}
		return st.writeWindow(e.keyBytes, e.valueBytes)
	}
	var err error
	switch {
	case e.valueBytes == nil:
		err = st.db.Delete(e.keyBytes)
	case st.stamped:
		st.rowBuf = appendStamped(st.rowBuf[:0], e.timestamp, e.valueBytes)
		err = st.db.Put(e.keyBytes, st.rowBuf)
	default:
		err = st.db.Put(e.keyBytes, e.valueBytes)
	}
	if err != nil {
		return fmt.Errorf("writing store %q: %w", st.spec.name, err)
	}
	return nil
}

// flush writes every dirty row, in the order rows became dirty; a
// key-value store keeps them cached, clean.
func (st *taskStore) flush(t *task) error {
	if st.win != nil && st.win.final != nil {
		return st.flushFinal(t)
	}
	return st.evict(t, len(st.order), st.win == nil)
}

// evict writes the n oldest dirty rows, and keeps them cached, clean, when
// keep is set; else they leave the cache before they are written, so that
// a failure leaves the cache consistent.
func (st *taskStore) evict(t *task, n int, keep bool) error {
	done := 0
	// The rest moves to the front of the same array, rather than the
	// order being resliced past what was written: its capacity is kept
	// for the rows that become dirty next (a time window's new rows
	// would grow it again from nothing after every commit). Moved, or
	// cleared, the written keys no longer hold their bytes alive.
	defer func() {
		rest := copy(st.order, st.order[done:])
		clear(st.order[rest:])
		st.order = st.order[:rest]
	}()
	for ; done < n; done++ {
		k := st.order[done]
		e := st.row(k)
		if e == nil || !e.dirty {
			continue // flushed early: a window closed and emitted
		}
		if !keep {
			st.forget(t, k)
		}
		e.dirty = false
		if err := st.flushEntry(t, e); err != nil {
			done++
			return err
		}
	}
	return nil
}

// forget drops the row of key k from the cache.
func (st *taskStore) forget(t *task, k string) {
	st.dropRow(k)
	st.charge(t, -(len(k) + cacheEntryOverhead))
}

// dropClean drops the clean rows from the cache, when it is over its
// budget: they cost a pebble read if used again, a dirty row a write.
func (st *taskStore) dropClean(t *task) {
	st.eachRow(func(k string, e *cacheEntry) bool {
		if !e.dirty {
			st.forget(t, k)
		}
		return true
	})
}

// commit applies the pending writes with the checkpoint: the changelog
// offset after the last acknowledged record, and the task's stream time.
// The caller flushed the producer first, so every pending write has its
// changelog record acknowledged.
func (st *taskStore) commit(streamTime int64) error {
	if st.win != nil && st.win.mem != nil {
		return st.commitBuffer(streamTime)
	}
	cp := state.Checkpoint{ChangelogOffset: st.lastOffset.Load() + 1, StreamTime: streamTime}
	if st.db.Pending() == 0 && cp == st.db.Checkpoint() {
		// An idle store's last commit must reach the disk too: without
		// pebble's WAL it is in the memtable only (state.Options.Logged).
		st.db.FlushIfOld()
		return nil
	}
	if err := st.db.Commit(cp); err != nil {
		return fmt.Errorf("committing store %q: %w", st.spec.name, err)
	}
	return nil
}
