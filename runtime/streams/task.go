package streams

import (
	"fmt"
	"strconv"
	"time"

	"github.com/braidstream/braid/runtime/internal/bytebox"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TaskID names a task: the sub-topology it runs and the input partition
// it owns. Its text form is "<subtopology>_<partition>", as in Kafka
// Streams.
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (id TaskID) String() string {
	return strconv.Itoa(id.Subtopology) + "_" + strconv.Itoa(int(id.Partition))
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// sourceProc decodes records of one source node's topics.
type sourceProc struct {
	name                 string
	keySerde, valueSerde Serde
	timestamps           TimestampExtractor
	next                 []processor
	// rawKeys and rawValues mark the bytes serde, whose values the task
	// boxes over the fetched record instead of calling it (see package
	// bytebox).
	rawKeys, rawValues bool
}

// partitionQueue holds the fetched, not yet processed records of one input
// partition of a task, and what the task has processed of it.
type partitionQueue struct {
	tp  TopicPartition
	src *sourceProc

	batches [][]*kgo.Record
	pos     int // index of the head in batches[0]

	// The head record, decoded once and kept until it is processed, so
	// that choosing the next partition by timestamp costs no decoding.
	head      record
	headErr   error
	headPart  string
	headReady bool

	// next is the offset to commit: one past the last processed record.
	next      kgo.EpochOffset
	committed int64
	// endOffset is the high watermark of the last fetch, -1 before one.
	endOffset int64

	// What task idling (idle.go) knows of the partition: fetched is the
	// offset after the last record or transaction marker the consumer
	// handed over, readable the offset a read can reach (the high
	// watermark, or under exactly-once the last stable offset) as that
	// fetch saw it; -1 while unknown. idleDeadline is when the task stops
	// waiting for the partition while it is empty and caught up (zero
	// when no wait runs), laggingSince when it began to seem to lag
	// while empty (zero when not); listing is set while its lag is being
	// listed, and epoch changes whenever the consumer is rewound, so that
	// a listing begun before is dropped.
	fetched, readable          int64
	idleDeadline, laggingSince time.Time
	listing                    bool
	epoch                      int
}

func (q *partitionQueue) empty() bool { return len(q.batches) == 0 }

func (q *partitionQueue) push(recs []*kgo.Record) {
	if len(recs) > 0 {
		q.batches = append(q.batches, recs)
	}
}

func (q *partitionQueue) peekRaw() *kgo.Record { return q.batches[0][q.pos] }

// decodeHead decodes the head record's key, value and timestamp; raw
// bytes are boxed over the record's own Key and Value fields, which
// nothing writes once fetched (see package bytebox).
func (q *partitionQueue) decodeHead() {
	if q.headReady {
		return
	}
	q.headReady = true
	raw := q.peekRaw()
	// Field by field, each written once: with the collector marking,
	// every pointer written costs a write barrier, and a whole record
	// assigned writes each field twice, zero first (measured in bench
	// windowed's profile with pop's clearing: 0.5 s of 7 s). A head that
	// fails to decode is not processed, so what it keeps of the last
	// record does not matter; old stays nil in heads.
	q.head.timestamp, q.head.headers = raw.Timestamp.UnixMilli(), raw.Headers
	if q.headErr != nil {
		q.headErr, q.headPart = nil, ""
	}
	var err error
	if q.src.rawKeys {
		q.head.key = bytebox.At(&raw.Key)
	} else if q.head.key, err = q.src.keySerde.Deserialize(raw.Topic, raw.Key); err != nil {
		q.headErr, q.headPart = err, "key"
		return
	}
	if q.src.rawValues {
		q.head.value = bytebox.At(&raw.Value)
	} else if q.head.value, err = q.src.valueSerde.Deserialize(raw.Topic, raw.Value); err != nil {
		q.headErr, q.headPart = err, "value"
		return
	}
	if q.src.timestamps != nil {
		ts, err := q.src.timestamps(q.head.key, q.head.value, q.head.timestamp)
		if err != nil {
			q.headErr, q.headPart = err, "timestamp"
			return
		}
		q.head.timestamp = ts
	}
	if q.head.timestamp < 0 {
		q.headErr, q.headPart = fmt.Errorf("timestamp %d is negative", q.head.timestamp), "timestamp"
	}
}

// pop drops the head. The next decodeHead writes over it; it is cleared
// only when its batch is done, so that the batch can go.
func (q *partitionQueue) pop() {
	q.headReady = false
	q.pos++
	if q.pos == len(q.batches[0]) {
		q.batches[0] = nil
		q.batches = q.batches[1:]
		q.pos = 0
		q.head = record{}
	}
}

// task runs one sub-topology for one partition number. It is used by the
// App's processing goroutine only.
type task struct {
	id     TaskID
	app    *App
	queues []*partitionQueue
	// sources holds the task's instantiated source processors by node.
	sources map[*graphNode]*sourceProc
	// stores are the task's state stores by name, and in topology order.
	stores    map[string]*taskStore
	storeList []*taskStore
	// windowed lists the window and session stores, which stream time
	// closes and expires.
	windowed []*taskStore
	// cacheBytes is what the stores' record caches hold together.
	cacheBytes int
	// keys holds the changelog and pebble keys the task's join buffers
	// write.
	keys keyArena
	// records holds the records the task produces (see recordArena).
	records recordArena
	// headers holds the headers of its join buffers' values (see
	// headerArena).
	headers headerArena
	// restoring is set while the stores catch up with their changelogs;
	// the task processes nothing until then. interrupted marks a task
	// suspended mid-restore, which restores again if it stays.
	restoring   *restoration
	interrupted bool

	// For failover measurements: when this instance received the task,
	// from which replica ("standby", "warm-up" or ""), how many changelog
	// records it restored before processing, when it last processed a
	// record, and whether it has reported its first since arriving.
	assignedAt      time.Time
	replica         string
	restoredRecords int64
	lastRecordAt    time.Time
	resumed         bool

	// streamTime is the largest timestamp processed, -1 before the first.
	streamTime int64
	processed  int64
	skipped    int64

	// meters count each node's records when Config.NodeMetrics is set.
	meters map[string]*nodeMeter

	// current is the raw record being processed, for error context.
	current *kgo.Record

	// idle is the task's waiting for empty partitions (idle.go).
	idle taskIdle
}

// addPartition adds an input partition read by source node src.
func (t *task) addPartition(tp TopicPartition, src *sourceProc) {
	// next starts below any offset: a task that processed nothing must
	// commit nothing, or it would rewind the group's committed offset.
	t.queues = append(t.queues, &partitionQueue{tp: tp, src: src, next: kgo.EpochOffset{Epoch: -1, Offset: -1}, committed: -1, endOffset: -1,
		fetched: -1, readable: -1})
}

// nextQueue returns the queue whose head has the lowest timestamp, or nil
// when all are empty. Undecodable heads come first so that they are
// handled at once.
func (t *task) nextQueue() *partitionQueue {
	if len(t.queues) == 1 {
		if q := t.queues[0]; !q.empty() {
			q.decodeHead()
			return q
		}
		return nil
	}
	var best *partitionQueue
	for _, q := range t.queues {
		if q.empty() {
			continue
		}
		q.decodeHead()
		if q.headErr != nil {
			return q
		}
		if best == nil || q.head.timestamp < best.head.timestamp {
			best = q
		}
	}
	return best
}

// processAvailable processes every buffered record, lowest timestamp first.
// It returns a *TaskFailedError when a record fails and the handler says to
// fail; the failing record is then left unprocessed and uncommitted.
func (t *task) processAvailable() error {
	_, err := t.processUpTo(-1)
	return err
}

// processUpTo is processAvailable for at most limit records (all when
// limit < 0); more says records remain buffered.
func (t *task) processUpTo(limit int) (more bool, err error) {
	if len(t.app.hooks.time) > 0 {
		defer t.reportStreamTime(t.streamTime)
	}
	if !t.resumed && !t.assignedAt.IsZero() {
		// A task that arrived here: its recovery ends as its first
		// record is processed, not after the whole batch it missed.
		defer t.noteResumed(time.Now(), t.processed)
	}
	defer t.noteProcessed(t.processed)
	for q := t.nextReady(); q != nil; q = t.nextReady() {
		if limit == 0 {
			t.current = nil
			return true, nil
		}
		limit--
		raw := q.peekRaw()
		t.current = raw
		var err error
		if q.headErr != nil {
			err = &DeserializationError{Task: t.id, Topic: raw.Topic, Partition: raw.Partition, Offset: raw.Offset, Part: q.headPart, Err: q.headErr}
			err = t.app.handle(t, err, t.app.cfg.DeserializationErrors)
		} else {
			advanced := q.head.timestamp > t.streamTime
			if advanced {
				t.streamTime = q.head.timestamp
			}
			err = forward(t, q.src.next, q.head)
			if err == nil && advanced && len(t.windowed) > 0 {
				err = t.advanceWindows()
			}
			if err != nil {
				err = t.app.handle(t, err, t.app.cfg.ProcessingErrors)
			}
		}
		if err != nil {
			return false, err
		}
		q.next = kgo.EpochOffset{Epoch: raw.LeaderEpoch, Offset: raw.Offset + 1}
		t.processed++
		q.pop()
		if t.cacheBytes > 0 && t.cacheBytes > t.app.cacheBudget() {
			if err := t.evictHalf(); err != nil {
				return false, &TaskFailedError{Task: t.id, Err: err}
			}
		}
	}
	t.current = nil
	return false, nil
}

// rank orders tasks for processing: 0 for a task that arrived here and
// has not processed a record yet, 1 for the others.
func (t *task) rank() int {
	if !t.resumed && !t.assignedAt.IsZero() {
		return 0
	}
	return 1
}

// noteProcessed stamps the time of the last processed record, once per
// batch.
func (t *task) noteProcessed(before int64) {
	if t.processed != before {
		t.lastRecordAt = time.Now()
	}
}

// noteResumed reports the first record a task that arrived here
// processed, which it began to process at first.
func (t *task) noteResumed(first time.Time, before int64) {
	if t.processed == before {
		return
	}
	t.resumed = true
	ev := TaskResumedEvent{ApplicationID: t.app.cfg.ApplicationID, InstanceID: t.app.cfg.InstanceID, Task: t.id,
		AssignedAt: t.assignedAt, FirstRecordAt: first, Restored: t.restoredRecords, FromReplica: t.replica}
	for _, h := range t.app.hooks.resumed {
		h.OnTaskResumed(ev)
	}
}

// processingError wraps err, returned by processor node, with the record
// being processed.
func (t *task) processingError(node string, err error) error {
	pe := &ProcessingError{Task: t.id, Node: node, Err: err}
	if r := t.current; r != nil {
		pe.Topic, pe.Partition, pe.Offset = r.Topic, r.Partition, r.Offset
	}
	return pe
}

func (t *task) produce(r *kgo.Record) { t.app.produce(r) }

// partitions lists the task's input partitions.
func (t *task) partitions() []TopicPartition {
	out := make([]TopicPartition, len(t.queues))
	for i, q := range t.queues {
		out[i] = q.tp
	}
	return out
}

// instantiate builds the processors of st's nodes below its sources,
// sharing one processor per node (a merge has several parents).
func instantiate(st *subtopology, t *task, resolve func(n *graphNode, next []processor) processor) map[*graphNode]processor {
	made := make(map[*graphNode]processor, len(st.nodes))
	var build func(n *graphNode) processor
	build = func(n *graphNode) processor {
		if p, ok := made[n]; ok {
			return p
		}
		next := make([]processor, len(n.children))
		var taps []*tapProc
		var meters []*meterProc
		for i, c := range n.children {
			next[i] = build(c)
			if t.app.tap != nil {
				tp := &tapProc{node: n.name, child: next[i], record: i == 0}
				taps, next[i] = append(taps, tp), tp
			}
			if t.meters != nil {
				mp := &meterProc{from: t.meter(n.name), to: t.meter(c.name), child: next[i], countOut: i == 0}
				meters, next[i] = append(meters, mp), mp
			}
		}
		var p processor
		switch n.kind {
		case sourceNode, sinkNode:
			p = resolve(n, next)
		default:
			p = n.makeProcessor(n.name, next, t)
		}
		if _, ok := p.(*branchProc); ok {
			for _, tp := range taps {
				tp.record = true // each branch gets records of its own
			}
			for _, mp := range meters {
				mp.countOut = true
			}
		}
		made[n] = p
		return p
	}
	for _, src := range st.sources {
		build(src)
	}
	return made
}

// meterProc counts the records a node forwards to one of its children
// and the child receives (Config.NodeMetrics). A node forwards each record
// to all its children, so only the meter of its first child counts it
// out, except below a branch, as for tapProc.
type meterProc struct {
	from, to *nodeMeter
	child    processor
	countOut bool
}

// nodeMeter counts one node's records in a task.
type nodeMeter struct{ in, out int64 }

func (p *meterProc) process(t *task, r record) error {
	if p.countOut {
		p.from.out++
	}
	p.to.in++
	return p.child.process(t, r)
}

// meter returns the named node's meter, made on first use.
func (t *task) meter(node string) *nodeMeter {
	m := t.meters[node]
	if m == nil {
		m = &nodeMeter{}
		t.meters[node] = m
	}
	return m
}

// tapProc reports what node forwards to one of its children, for the
// TestDriver's Tap. A node forwards each record to all its children, so
// only the tap of its first child reports, except below a branch, whose
// children each get records of their own.
type tapProc struct {
	node   string
	child  processor
	record bool
}

func (p *tapProc) process(t *task, r record) error {
	if p.record {
		tr := TapRecord{Task: t.id, Node: p.node, Key: r.key, Value: r.value, Old: r.old, Timestamp: r.timestamp}
		if c, ok := r.value.(tableChange); ok {
			// A re-grouped table's row on its way to the aggregation: a
			// value to add, an old one to subtract, or both.
			tr.Value, tr.Old = c.add, c.sub
		}
		t.app.tap(tr)
	}
	return p.child.process(t, r)
}

// process makes sourceProc a processor so that instantiate can treat all
// nodes alike; records enter a task through its queues, never this way.
func (s *sourceProc) process(t *task, r record) error { return forward(t, s.next, r) }

// evictHalf makes room in the record caches: it drops the clean rows and
// flushes the older half of the dirty ones, so that the cache keeps the
// keys updated most recently.
func (t *task) evictHalf() error {
	t.current = nil
	for _, st := range t.storeList {
		if st.win != nil && st.win.final != nil {
			if err := st.evictFinal(t); err != nil {
				return err
			}
			continue
		}
		st.dropClean(t)
		if err := st.evict(t, (len(st.order)+1)/2, false); err != nil {
			return err
		}
	}
	return nil
}

// flushStores empties every record cache into pebble's pending batch, the
// changelogs and downstream.
func (t *task) flushStores() error {
	t.current = nil
	for _, st := range t.storeList {
		if err := st.flush(t); err != nil {
			return err
		}
	}
	return nil
}

// closeStores closes the task's stores; pending writes not committed are
// dropped, and the changelog brings them back on the next restore. The
// join buffers in memory write their snapshots first, unless the App
// crashes: a dead process writes nothing.
func (t *task) closeStores() {
	if !t.app.crashing.Load() {
		t.settleBuffers()
	}
	closeTaskStores(t.storeList)
}

// checkpointStreamTime is the largest stream time the task's stores
// checkpointed: stream time survives a restart or a move with the state.
// The windowed stores decide when the task has any: their stream time
// comes from markers written only once every result emitted before was
// acknowledged, while a key-value store restored from its changelog takes
// the timestamps of its records, which may run ahead of results lost in a
// crash.
func (t *task) checkpointStreamTime() int64 {
	stores := t.storeList
	if len(t.windowed) > 0 {
		stores = t.windowed
	}
	ts := int64(-1)
	for _, st := range stores {
		ts = max(ts, st.committedStreamTime())
	}
	return ts
}

// start readies a task whose stores are current: it takes up the stream
// time they checkpointed and reloads the windows still open at it.
func (t *task) start() error {
	t.streamTime = max(t.streamTime, t.checkpointStreamTime())
	for _, st := range t.windowed {
		if err := st.loadOpenWindows(t.streamTime); err != nil {
			return fmt.Errorf("loading open windows of store %q: %w", st.spec.name, err)
		}
	}
	return nil
}

// advanceWindows lets every windowed store close and expire what stream
// time has reached.
func (t *task) advanceWindows() error {
	for _, st := range t.windowed {
		if err := st.advanceWindows(t); err != nil {
			return err
		}
	}
	return nil
}

func (t *task) reportStreamTime(before int64) {
	if t.streamTime == before {
		return
	}
	ev := StreamTimeEvent{ApplicationID: t.app.cfg.ApplicationID, InstanceID: t.app.cfg.InstanceID, Task: t.id, StreamTime: t.streamTime}
	for _, h := range t.app.hooks.time {
		h.OnStreamTime(ev)
	}
}

// partitionMap lists the task's input partitions as franz-go wants them.
func (t *task) partitionMap() map[string][]int32 {
	m := make(map[string][]int32)
	for _, q := range t.queues {
		m[q.tp.Topic] = append(m[q.tp.Topic], q.tp.Partition)
	}
	return m
}
