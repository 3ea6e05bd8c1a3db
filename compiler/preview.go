package compiler

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// Sample is a record to preview a design with. Key and Value are given as
// JSON gives them and are encoded with the source node's serdes: a JSON
// serde takes any value, a string serde a string, an int64 serde a whole
// number, a bytes serde a string.
type Sample struct {
	Topic string `json:"topic"`
	Key   any    `json:"key"`
	Value any    `json:"value"`
	// Timestamp is the record's timestamp in milliseconds since the
	// epoch (the event time, unless the source extracts its own).
	Timestamp int64 `json:"timestamp"`
}

// PreviewOptions adjust a preview.
type PreviewOptions struct {
	// Partitions gives source topics more than one partition.
	Partitions map[string]int
	// MaxRecords bounds the records kept per node port and per sink
	// topic; default 1000. Preview.Truncated says when it cut.
	MaxRecords int
}

// Preview is what a design did with the samples.
type Preview struct {
	// Nodes maps a node id and output port to the records the node
	// emitted there, in order.
	Nodes map[string]map[string][]PreviewRecord `json:"nodes"`
	// Sinks maps a sink topic to the records written to it, decoded with
	// the sink's serdes.
	Sinks map[string][]PreviewRecord `json:"sinks"`
	// Windows are the windows that closed, in order; Late the records
	// dropped for coming after their window closed.
	Windows []PreviewWindow `json:"windows"`
	Late    []PreviewLate   `json:"late"`
	// Errors are the samples that failed: they were skipped and the
	// others went on.
	Errors []PreviewError `json:"errors"`
	// StreamTime is each task's stream time at the end, by task id.
	StreamTime map[string]int64 `json:"streamTime"`
	Truncated  bool             `json:"truncated,omitempty"`
}

// PreviewRecord is one record, its key and value as JSON would show
// them; a windowed key is {"key":...,"start":...,"end":...}.
type PreviewRecord struct {
	Key       any   `json:"key"`
	Value     any   `json:"value"`
	Timestamp int64 `json:"timestamp"`
	// Old is a table row's previous value, when it had one.
	Old any `json:"old,omitempty"`
}

// PreviewWindow is a window that stream time closed.
type PreviewWindow struct {
	Node       string `json:"node"`
	Store      string `json:"store"`
	Task       string `json:"task"`
	Start      int64  `json:"start"`
	End        int64  `json:"end"`
	ClosesAt   int64  `json:"closesAt"`
	StreamTime int64  `json:"streamTime"`
	Keys       int    `json:"keys"`
	Emitted    bool   `json:"emitted"`
}

// PreviewLate is a record dropped as late.
type PreviewLate struct {
	Node        string `json:"node"`
	Store       string `json:"store"`
	Sample      int    `json:"sample"`
	Timestamp   int64  `json:"timestamp"`
	StreamTime  int64  `json:"streamTime"`
	WindowStart int64  `json:"windowStart"`
	WindowEnd   int64  `json:"windowEnd"`
}

// PreviewError is a sample that failed, with the node where it failed
// when that is known.
type PreviewError struct {
	Sample  int    `json:"sample"`
	Node    string `json:"node,omitempty"`
	Message string `json:"message"`
}

// RunPreview compiles d and runs it on samples in-process, without a
// broker (streams.TestDriver), then commits, so that results waiting in
// record caches come out too. A design with problems returns them
// (designer.Problems) and runs nothing.
func RunPreview(d *designer.Design, samples []Sample, opts PreviewOptions) (*Preview, error) {
	c, err := Compile(d, Options{})
	if err != nil {
		return nil, err
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = 1000
	}
	run := newPreviewRun(c, opts)
	driver, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{
		ApplicationID:         designer.ApplicationID(d),
		Partitions:            opts.Partitions,
		DeserializationErrors: streams.LogAndContinue,
		ProcessingErrors:      streams.LogAndContinue,
		Hooks:                 []streams.Hook{run},
		Tap:                   run.tap,
	})
	if err != nil {
		return nil, fmt.Errorf("previewing %q: %w", d.Name, err)
	}
	defer driver.Close()
	for i, s := range samples {
		run.sample = i
		if err := run.pipe(driver, s); err != nil {
			run.p.Errors = append(run.p.Errors, PreviewError{Sample: i, Message: err.Error()})
		}
	}
	run.sample = -1
	if err := driver.Commit(); err != nil {
		return nil, fmt.Errorf("previewing %q: committing: %w", d.Name, err)
	}
	run.readSinks(driver)
	for _, t := range driver.Stats().Tasks {
		run.p.StreamTime[t.ID.String()] = t.StreamTime
	}
	return run.p, nil
}

// previewRun collects a preview; it is the driver's hook and tap.
type previewRun struct {
	c      *Compiled
	opts   PreviewOptions
	p      *Preview
	sample int
	// ports maps an operator to the node ports whose records leave
	// through it; storeNode a store to its node.
	ports     map[string][][2]string
	storeNode map[string]string
	sources   map[string]designer.Node
}

func newPreviewRun(c *Compiled, opts PreviewOptions) *previewRun {
	r := &previewRun{c: c, opts: opts, sample: -1, ports: map[string][][2]string{}, storeNode: c.StoreNodes,
		p: &Preview{Nodes: map[string]map[string][]PreviewRecord{}, Sinks: map[string][]PreviewRecord{}, StreamTime: map[string]int64{}}}
	for node, ports := range c.Outputs {
		for port, op := range ports {
			r.ports[op] = append(r.ports[op], [2]string{node, port})
		}
	}
	r.sources = sourcesOf(c.Design)
	return r
}

// sourcesOf maps each topic a source of d reads to that source: the node
// whose serdes encode a sample of the topic.
func sourcesOf(d *designer.Design) map[string]designer.Node {
	out := map[string]designer.Node{}
	for _, n := range d.Nodes {
		if n.Kind == designer.KindSourceStream || n.Kind == designer.KindSourceTable {
			out[designer.ParamString(n, "topic")] = n
		}
	}
	return out
}

func (r *previewRun) tap(t streams.TapRecord) {
	for _, np := range r.ports[t.Node] {
		ports := r.p.Nodes[np[0]]
		if ports == nil {
			ports = map[string][]PreviewRecord{}
			r.p.Nodes[np[0]] = ports
		}
		if len(ports[np[1]]) >= r.opts.MaxRecords {
			r.p.Truncated = true
			continue
		}
		ports[np[1]] = append(ports[np[1]], PreviewRecord{Key: jsonable(t.Key), Value: jsonable(t.Value), Old: jsonable(t.Old), Timestamp: t.Timestamp})
	}
}

func (r *previewRun) OnWindowClosed(e streams.WindowClosedEvent) {
	r.p.Windows = append(r.p.Windows, PreviewWindow{Node: r.storeNode[e.Store], Store: e.Store, Task: e.Task.String(),
		Start: e.Start, End: e.End, ClosesAt: e.ClosesAt, StreamTime: e.StreamTime, Keys: e.Keys, Emitted: e.Emitted})
}

func (r *previewRun) OnLateRecordDropped(e streams.LateRecordEvent) {
	r.p.Late = append(r.p.Late, PreviewLate{Node: r.storeNode[e.Store], Store: e.Store, Sample: r.sample,
		Timestamp: e.Timestamp, StreamTime: e.StreamTime, WindowStart: e.WindowStart, WindowEnd: e.WindowEnd})
}

func (r *previewRun) OnRecordSkipped(e streams.SkippedRecord) {
	pe := PreviewError{Sample: r.sample, Message: e.Err.Error()}
	var perr *streams.ProcessingError
	if errors.As(e.Err, &perr) {
		pe.Node = r.nodeOf(perr.Node)
	}
	r.p.Errors = append(r.p.Errors, pe)
}

// nodeOf returns the node that added operator op, or "".
func (r *previewRun) nodeOf(op string) string {
	for node, parts := range r.c.Parts {
		if slices.Contains(parts, op) {
			return node
		}
	}
	for node, main := range r.c.Operators {
		if main == op {
			return node
		}
	}
	return ""
}

// pipe encodes a sample with its source's serdes and pipes it.
func (r *previewRun) pipe(d *streams.TestDriver, s Sample) error {
	src, ok := r.sources[s.Topic]
	if !ok {
		return fmt.Errorf("no source of the design reads topic %q", s.Topic)
	}
	key, err := encodeSample(designer.ParamString(src, "keySerde"), s.Key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	value, err := encodeSample(designer.ParamString(src, "valueSerde"), s.Value)
	if err != nil {
		return fmt.Errorf("value: %w", err)
	}
	ts := s.Timestamp
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	return d.Pipe(s.Topic, key, value, ts)
}

// encodeSample encodes a JSON value with the named serde.
func encodeSample(serde string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch serde {
	case "json":
		return json.Marshal(v)
	case "int64":
		var n int64
		switch x := v.(type) {
		case float64:
			if x != float64(int64(x)) {
				return nil, fmt.Errorf("%v is not a whole number, as the int64 serde needs", x)
			}
			n = int64(x)
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return nil, fmt.Errorf("%v is not a whole number, as the int64 serde needs", x)
			}
			n = i
		case int64:
			n = x
		case int:
			n = int64(x)
		default:
			return nil, fmt.Errorf("%v (%T) is not a number, as the int64 serde needs", v, v)
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	default: // string, bytes
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%v (%T) is not a string, as the %s serde needs", v, v, serde)
		}
		return []byte(s), nil
	}
}

// readSinks decodes what each sink topic got with the sink's serdes.
func (r *previewRun) readSinks(d *streams.TestDriver) {
	for _, n := range r.c.Design.Nodes {
		if n.Kind != designer.KindSink {
			continue
		}
		topic := designer.ParamString(n, "topic")
		if _, done := r.p.Sinks[topic]; done {
			continue
		}
		recs := d.Output(topic)
		out := make([]PreviewRecord, 0, min(len(recs), r.opts.MaxRecords))
		for i, rec := range recs {
			if i == r.opts.MaxRecords {
				r.p.Truncated = true
				break
			}
			out = append(out, PreviewRecord{Key: decodeOutput(designer.ParamString(n, "keySerde"), rec.Key),
				Value: decodeOutput(designer.ParamString(n, "valueSerde"), rec.Value), Timestamp: rec.Timestamp})
		}
		r.p.Sinks[topic] = out
	}
}

// decodeOutput shows bytes written to a topic with serde, the sink's
// serde parameter: an int64 as its number; JSON as its value; other UTF-8
// text as a string; anything else as its bytes (base64 in JSON). Without
// a serde (the stream's own), 8 bytes holding control characters are
// taken for an int64.
func decodeOutput(serde string, b []byte) any {
	if b == nil {
		return nil
	}
	if len(b) == 8 && (serde == "int64" || serde == "" && hasControl(b)) {
		return int64(binary.BigEndian.Uint64(b))
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		return v
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return b
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// jsonable turns a decoded record part into what JSON can show: bytes
// become text when they are UTF-8.
func jsonable(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
	case streams.Windowed:
		x.Key = jsonable(x.Key)
		return x
	}
	return v
}
