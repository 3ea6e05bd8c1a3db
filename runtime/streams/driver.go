package streams

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDriver runs a topology in-process, without a broker, the way Kafka
// Streams' TopologyTestDriver does: pipe records into source topics, read
// what the sinks wrote, query the stores. Every task of every
// sub-topology runs in the calling goroutine, on real pebble stores;
// records written to repartition topics are read back at once, changelog
// records are kept like any topic's. Stream time advances only with the
// records piped, as in a running App.
//
// Results that wait in the record cache reach the sinks at Commit, as at a
// commit of a running App; disable caching in the store options to see
// every update at once. Store queries read committed state: call Commit
// first.
//
// A TestDriver is not safe for concurrent use.
type TestDriver struct {
	app *App
	// partitions is the partition count of every topic written or read.
	partitions map[string]int
	// written holds every record produced, by topic, and read how many of
	// them ReadOutput has returned.
	written map[string][]Record
	read    map[string]int
	next    map[TopicPartition]int64
	// changelogs are the changelog topics, whose records name their
	// partition.
	changelogs map[string]bool
	// pending are the tasks with buffered records to process.
	pending []*task
	tempDir string
	// partitioners partition the records by key, one per topic: making
	// one seeds a random source, which cost more than processing a record.
	partitioners map[string]kgo.TopicPartitioner
}

// Record is a record piped into or read from a TestDriver.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// Timestamp is in milliseconds since the epoch.
	Timestamp int64
	Headers   []kgo.RecordHeader
}

// TapRecord is a record an operator forwarded, decoded, as TestDriver's
// Tap sees it. Old is a table row's previous value.
type TapRecord struct {
	Task       TaskID
	Node       string
	Key, Value any
	Old        any
	Timestamp  int64
}

// DriverConfig configures a TestDriver. The zero value works: one
// partition per topic, state in a temporary directory, the Config
// defaults otherwise.
type DriverConfig struct {
	// ApplicationID prefixes internal topics; default "test-driver".
	ApplicationID string
	// StateDir holds the stores; default: a temporary directory that
	// Close removes.
	StateDir string
	// Partitions gives the partition count of source and sink topics by
	// name; a topic not named has one.
	Partitions map[string]int
	// Serdes, error handling, cache size and hooks as in Config.
	DefaultKeySerde, DefaultValueSerde      Serde
	DeserializationErrors, ProcessingErrors ErrorHandling
	CacheMaxBytes                           int64
	Hooks                                   []Hook
	Logger                                  *slog.Logger
	// Tap, if set, is called with every record an operator forwards to
	// the operators after it, sinks included.
	Tap func(TapRecord)
}

// NewTestDriver creates the tasks of topo, every partition of every
// sub-topology, and starts them.
func NewTestDriver(topo *Topology, cfg DriverConfig) (*TestDriver, error) {
	if topo == nil {
		return nil, errors.New("creating test driver: topology is nil")
	}
	d := &TestDriver{partitions: make(map[string]int), written: make(map[string][]Record), read: make(map[string]int), next: make(map[TopicPartition]int64),
		partitioners: make(map[string]kgo.TopicPartitioner)}
	if cfg.ApplicationID == "" {
		cfg.ApplicationID = "test-driver"
	}
	if cfg.StateDir == "" {
		dir, err := os.MkdirTemp("", "braid-test-driver-")
		if err != nil {
			return nil, fmt.Errorf("creating test driver: %w", err)
		}
		cfg.StateDir, d.tempDir = dir, dir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	appCfg := Config{
		ApplicationID: cfg.ApplicationID, Brokers: []string{"test-driver:0"}, InstanceID: "test-driver",
		StateDir: cfg.StateDir, DefaultKeySerde: cfg.DefaultKeySerde, DefaultValueSerde: cfg.DefaultValueSerde,
		DeserializationErrors: cfg.DeserializationErrors, ProcessingErrors: cfg.ProcessingErrors,
		CacheMaxBytes: cfg.CacheMaxBytes, Hooks: cfg.Hooks, Logger: cfg.Logger,
	}
	app, err := New(topo, appCfg)
	if err != nil {
		d.removeTemp()
		return nil, fmt.Errorf("creating test driver: %w", err)
	}
	d.app = app
	app.capture, app.tap = d.capture, cfg.Tap
	d.changelogs = app.changelogTopics()
	for name, n := range cfg.Partitions {
		if n <= 0 {
			d.removeTemp()
			return nil, fmt.Errorf("creating test driver: topic %q: %d partitions", name, n)
		}
		d.partitions[name] = n
	}
	if err := d.createTasks(); err != nil {
		d.Close()
		return nil, fmt.Errorf("creating test driver: %w", err)
	}
	return d, nil
}

// createTasks sizes the internal topics as an App would and creates and
// starts one task per sub-topology and partition.
func (d *TestDriver) createTasks() error {
	a, topo := d.app, d.app.topo
	widest := func(st *subtopology) int {
		n := 1
		for _, src := range st.sources {
			for _, topic := range src.topics {
				n = max(n, d.partitionsOf(a.realTopic(topic, src.internal)))
			}
		}
		return n
	}
	sizes := make(map[string]int)
	for _, topic := range topo.SourceTopics() {
		sizes[topic] = d.partitionsOf(topic)
	}
	if err := topo.sizeInternalTopics(sizes); err != nil {
		return err
	}
	for _, it := range topo.internalTopics() {
		d.partitions[a.realTopic(it.name, true)] = sizes[it.name]
	}
	for _, st := range topo.subtopologies {
		n := widest(st)
		for _, node := range st.nodes {
			for _, spec := range node.storeSpecs {
				if spec.logged {
					d.partitions[changelogTopic(a.cfg.ApplicationID, spec.name)] = n
				}
			}
		}
		for p := range n {
			id := TaskID{Subtopology: st.id, Partition: int32(p)}
			t, err := a.newTask(st, id, nil)
			if err != nil {
				return err
			}
			a.tasks[id] = t
			for _, src := range st.sources {
				for _, topic := range src.topics {
					tp := TopicPartition{a.realTopic(topic, src.internal), int32(p)}
					t.addPartition(tp, t.sources[src])
					a.byTP[tp] = t.queues[len(t.queues)-1]
					a.taskOf[tp] = t
				}
			}
			if err := t.start(); err != nil {
				return &TaskFailedError{Task: id, Err: err}
			}
		}
	}
	a.publishStats()
	return nil
}

func (d *TestDriver) partitionsOf(topic string) int {
	if n, ok := d.partitions[topic]; ok {
		return n
	}
	return 1
}

// Pipe writes a record with key and value (nil for null) at timestamp ts
// (milliseconds since the epoch) to a source topic, partitioned by its
// key, and processes everything it leads to.
func (d *TestDriver) Pipe(topic string, key, value []byte, ts int64) error {
	return d.PipeRecord(Record{Topic: topic, Partition: -1, Key: key, Value: value, Timestamp: ts})
}

// PipeRecord is Pipe with headers and an explicit partition; a negative
// Partition means partitioned by key (murmur2, as Kafka's clients do).
func (d *TestDriver) PipeRecord(r Record) error {
	if d.app.sources[r.Topic] == nil {
		return fmt.Errorf("piping to %q: the topology reads no such topic", r.Topic)
	}
	n := d.partitionsOf(r.Topic)
	if r.Partition >= int32(n) {
		return fmt.Errorf("piping to %q: partition %d, the topic has %d", r.Topic, r.Partition, n)
	}
	kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp), Headers: r.Headers}
	d.append(kr, r.Partition >= 0)
	return d.run()
}

// Commit does what an App's commit does: it flushes the record caches
// (their results reach the sinks now), writes the stream-time markers and
// commits every store, so that queries see the state.
func (d *TestDriver) Commit() error {
	a := d.app
	// A flush can send records through a repartition topic into another
	// task's cache: flush until every cache is empty.
	for dirty := true; dirty; {
		dirty = false
		for _, t := range d.tasks() {
			for _, st := range t.storeList {
				dirty = dirty || len(st.order) > 0
			}
			if err := t.flushStores(); err != nil {
				return &TaskFailedError{Task: t.id, Err: err}
			}
		}
		if err := d.run(); err != nil {
			return err
		}
	}
	a.markStreamTimes(nil)
	for _, t := range d.tasks() {
		for _, st := range t.storeList {
			if err := st.commit(t.streamTime); err != nil {
				return &TaskFailedError{Task: t.id, Err: err}
			}
		}
	}
	a.publishStats()
	return nil
}

// Output returns every record written to topic so far: sink topics,
// repartition topics and changelogs (internal topics by their full name,
// "<app-id>-<name>-repartition", "<app-id>-<store>-changelog").
func (d *TestDriver) Output(topic string) []Record {
	return slices.Clone(d.written[topic])
}

// ReadOutput returns the records written to topic since the last
// ReadOutput of it.
func (d *TestDriver) ReadOutput(topic string) []Record {
	all := d.written[topic]
	out := slices.Clone(all[d.read[topic]:])
	d.read[topic] = len(all)
	return out
}

// Topics lists the topics written to so far, sorted.
func (d *TestDriver) Topics() []string {
	var out []string
	for t := range d.written {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Get, GetWithTimestamp, Range, RangeWithTimestamps, FetchWindows and
// OpenWindows query the stores as the App's
// methods of the same names do, on committed state.
func (d *TestDriver) Get(store string, key any) (any, bool, error) { return d.app.Get(store, key) }

// GetWithTimestamp: see App.GetWithTimestamp.
func (d *TestDriver) GetWithTimestamp(store string, key any) (ValueAndTimestamp, bool, error) {
	return d.app.GetWithTimestamp(store, key)
}

// RangeWithTimestamps: see App.RangeWithTimestamps.
func (d *TestDriver) RangeWithTimestamps(store string, from, to any, fn func(key any, row ValueAndTimestamp) bool) error {
	return d.app.RangeWithTimestamps(store, from, to, fn)
}

// Range: see App.Range.
func (d *TestDriver) Range(store string, from, to any, fn func(key, value any) bool) error {
	return d.app.Range(store, from, to, fn)
}

// FetchWindows: see App.FetchWindows.
func (d *TestDriver) FetchWindows(store string, key any, from, to int64) ([]WindowResult, error) {
	return d.app.FetchWindows(store, key, from, to)
}

// OpenWindows: see App.OpenWindows.
func (d *TestDriver) OpenWindows(store string) ([]OpenWindow, error) { return d.app.OpenWindows(store) }

// Stats returns the tasks' state, as App.Stats does.
func (d *TestDriver) Stats() Stats {
	d.app.publishStats()
	return d.app.Stats()
}

// Close closes the stores, dropping what was not committed, and removes
// the state directory if the driver made it.
func (d *TestDriver) Close() error {
	for _, t := range d.tasks() {
		t.closeStores()
	}
	clear(d.app.tasks)
	return d.removeTemp()
}

func (d *TestDriver) removeTemp() error {
	if d.tempDir == "" {
		return nil
	}
	err := os.RemoveAll(d.tempDir)
	d.tempDir = ""
	return err
}

func (d *TestDriver) tasks() []*task {
	out := make([]*task, 0, len(d.app.tasks))
	for _, t := range d.app.tasks {
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y *task) int { return compareTaskIDs(x.id, y.id) })
	return out
}

// capture is the driver's broker: it assigns the record a partition (a
// changelog record names its own) and an offset, keeps it, acknowledges
// it at once, and queues it for the task that reads the topic, if any.
func (d *TestDriver) capture(r *kgo.Record, promise func(*kgo.Record, error)) {
	d.append(r, d.changelogs[r.Topic])
	promise(r, nil)
}

// append writes r to its topic, to r.Partition if keepPartition, else to
// the partition of its key.
func (d *TestDriver) append(r *kgo.Record, keepPartition bool) {
	if !keepPartition {
		p := d.partitioners[r.Topic]
		if p == nil {
			p = keyPartitioner.ForTopic(r.Topic)
			d.partitioners[r.Topic] = p
		}
		r.Partition = int32(p.Partition(r, d.partitionsOf(r.Topic)))
	}
	tp := TopicPartition{r.Topic, r.Partition}
	r.Offset = d.next[tp]
	d.next[tp]++
	d.written[r.Topic] = append(d.written[r.Topic], Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli(), Headers: r.Headers})
	if q := d.app.byTP[tp]; q != nil {
		q.push([]*kgo.Record{r})
		if t := d.app.taskOf[tp]; !slices.Contains(d.pending, t) {
			d.pending = append(d.pending, t)
		}
	}
}

// run processes buffered records until none are left: records written to
// repartition topics on the way are processed too.
func (d *TestDriver) run() error {
	for len(d.pending) > 0 {
		t := d.pending[0]
		d.pending = d.pending[1:]
		if err := t.processAvailable(); err != nil {
			d.app.publishStats()
			return err
		}
	}
	d.app.publishStats()
	return nil
}
