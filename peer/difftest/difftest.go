// Package difftest runs Braid designs side by side in Braid's TestDriver
// and in Kafka Streams' TopologyTestDriver (the peer's DesignRunner,
// peer/kstreams), over the same input records, and compares their outputs
// record for record. Its tests are the differential tests of the design
// runner's subset of the catalog: hand-written designs and a seeded
// generator of them (designer/designgen).
package difftest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/designer/designgen"
	"github.com/braidstream/braid/runtime/streams"
)

// Input is a record piped into a source topic, and Case a design and
// the records to run it on: the generator's (designer/designgen), whose
// cases these tests run.
type (
	Input = designgen.Input
	Case  = designgen.Case
)

// Output is a record a sink wrote; Key and Value are nil for null.
type Output struct {
	Topic     string `json:"topic"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// sourceTopics lists the topics d's sources read.
func sourceTopics(d *designer.Design) []string {
	var out []string
	for _, n := range d.Nodes {
		if n.Kind == "source-stream" || n.Kind == "source-table" {
			out = append(out, designer.ParamString(n, "topic"))
		}
	}
	return out
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// sinkTopics lists the topics d's sinks write, sorted: the order in which
// both sides read their outputs after each input record.
func sinkTopics(d *designer.Design) []string {
	var out []string
	for _, n := range d.Nodes {
		if n.Kind == "sink" {
			out = append(out, designer.ParamString(n, "topic"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RunBraid runs c in Braid's TestDriver. After each input record it
// commits, as TopologyTestDriver does after every record, and reads what
// each sink topic got, in the order of sinkTopics.
func RunBraid(c Case) ([]Output, error) {
	comp, err := compiler.Compile(c.Design, compiler.Options{})
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", c.Name, err)
	}
	cfg := streams.DriverConfig{}
	if c.Partitions > 1 {
		cfg.Partitions = map[string]int{}
		for _, t := range sourceTopics(c.Design) {
			cfg.Partitions[t] = c.Partitions
		}
	}
	d, err := streams.NewTestDriver(comp.Topology, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the test driver of %s: %w", c.Name, err)
	}
	defer d.Close()
	topics := sinkTopics(c.Design)
	var out []Output
	for i, in := range c.Input {
		if err := d.Pipe(in.Topic, bytesOf(in.Key), bytesOf(in.Value), in.Timestamp); err != nil {
			return nil, fmt.Errorf("piping record %d of %s: %w", i, c.Name, err)
		}
		if err := d.Commit(); err != nil {
			return nil, fmt.Errorf("committing after record %d of %s: %w", i, c.Name, err)
		}
		for _, t := range topics {
			for _, r := range d.ReadOutput(t) {
				out = append(out, Output{Topic: t, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
			}
		}
	}
	return out, nil
}

// RunPeer runs every case in one JVM of Kafka Streams' DesignRunner, with
// classpath the peer's (scripts/peer.sh classpath), and returns each
// case's outputs. dir holds the files exchanged.
func RunPeer(ctx context.Context, classpath, dir string, cases []Case) ([][]Output, error) {
	args := []string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath, "io.braidstream.peer.DesignRunner"}
	for i, c := range cases {
		design, err := designer.Encode(c.Design)
		if err != nil {
			return nil, fmt.Errorf("encoding the design of %s: %w", c.Name, err)
		}
		var in bytes.Buffer
		enc := json.NewEncoder(&in)
		for _, r := range c.Input {
			if err := enc.Encode(r); err != nil {
				return nil, fmt.Errorf("encoding the input of %s: %w", c.Name, err)
			}
		}
		base := filepath.Join(dir, fmt.Sprintf("case-%d", i))
		if err := os.WriteFile(base+".design.json", design, 0o644); err != nil {
			return nil, fmt.Errorf("writing the design of %s: %w", c.Name, err)
		}
		if err := os.WriteFile(base+".in.jsonl", in.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("writing the input of %s: %w", c.Name, err)
		}
		args = append(args, base+".design.json", base+".in.jsonl", base+".out.jsonl")
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running DesignRunner: %w\n%s", err, stderr.String())
	}
	outs := make([][]Output, len(cases))
	for i, c := range cases {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("case-%d.out.jsonl", i)))
		if err != nil {
			return nil, fmt.Errorf("reading the output of %s: %w", c.Name, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var o Output
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
				f.Close()
				return nil, fmt.Errorf("reading the output of %s: %w", c.Name, err)
			}
			outs[i] = append(outs[i], o)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading the output of %s: %w", c.Name, err)
		}
	}
	return outs, nil
}

// ByKey returns out ordered by topic and key, each key's records in
// their order: how outputs of several partitions compare. Braid's
// TestDriver runs the records a step wrote to an internal topic one task
// after the other, so records of keys in different partitions come out in
// the order of their tasks, not of their writing (in a running
// application, in no defined order); each key's stay in order.
func ByKey(out []Output) []Output {
	s := slices.Clone(out)
	slices.SortStableFunc(s, func(a, b Output) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return s
}

// sameBytes tells whether a and b are the same key or value: equal bytes,
// or JSON documents that decode alike (field order and number spelling
// aside: Jackson and Go write them differently).
func sameBytes(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Diff returns "" when braid and peer are equal record for record, else
// both lists side by side with the first difference marked.
func Diff(braid, peer []Output) string {
	same := len(braid) == len(peer)
	first := min(len(braid), len(peer))
	for i := range first {
		b, p := braid[i], peer[i]
		if b.Topic != p.Topic || b.Timestamp != p.Timestamp || !sameBytes(b.Key, p.Key) || !sameBytes(b.Value, p.Value) {
			same, first = false, i
			break
		}
	}
	if same {
		return ""
	}
	var s strings.Builder
	fmt.Fprintf(&s, "first difference at record %d (braid %d records, kafka streams %d)\n", first, len(braid), len(peer))
	for i := range max(len(braid), len(peer)) {
		mark := " "
		if i == first {
			mark = ">"
		}
		fmt.Fprintf(&s, "%s %3d braid: %-50s kstreams: %s\n", mark, i, show(braid, i), show(peer, i))
	}
	return s.String()
}

func show(os []Output, i int) string {
	if i >= len(os) {
		return "-"
	}
	o := os[i]
	return fmt.Sprintf("%s %s=%s @%d", o.Topic, showBytes(o.Key), showBytes(o.Value), o.Timestamp)
}

func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", b)
		}
	}
	return string(b)
}
