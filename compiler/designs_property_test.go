package compiler

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/designer/designgen"
)

// randomDesigns is how many generated designs TestRandomDesigns checks:
// make test's few hundred, make fuzz's more.
var randomDesigns = flag.Int("designs", 200, "generated designs TestRandomDesigns compiles, exports, builds and runs")

// TestRandomDesigns is the compiler's property test over designs from the
// seeded generator (designer/designgen), seeds 1 to -designs: each design
// compiles; its exported program is vet-clean and builds; the topology it
// builds describes as the compiler's does; and on the generator's records,
// piped into a TestDriver by the exported code, its sinks get exactly what
// the compiler's preview (RunPreview) gives. All the programs are files of
// one package, built once, with one runner over all of them.
func TestRandomDesigns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs; skipped with -short")
	}
	start := time.Now()
	dir := t.TempDir()
	writeModule(t, dir)
	var cases []designgen.Case
	var builds, apps strings.Builder
	for seed := range uint64(*randomDesigns) {
		c := designgen.Generate(seed+1, designgen.Options{UnmatchedStreamJoins: true, PartitionedWindows: true})
		if _, err := Compile(c.Design, Options{}); err != nil {
			t.Fatalf("%s does not compile: %v\n%s", c.Name, err, designJSON(c.Design))
		}
		src, err := ExportGo(c.Design, ExportOptions{})
		if err != nil {
			t.Fatalf("%s does not export: %v\n%s", c.Name, err, designJSON(c.Design))
		}
		suffix := "_r" + strconv.Itoa(len(cases)+1)
		writeFile(t, filepath.Join(dir, "designs", "r"+strconv.Itoa(len(cases)+1)+".go"), inPackage(t, src, "designs", suffix))
		fmt.Fprintf(&builds, "\tbuildTopology%s, // %s\n", suffix, c.Name)
		fmt.Fprintf(&apps, "\t%q,\n", designer.ApplicationID(c.Design))
		cases = append(cases, c)
	}
	writeFile(t, filepath.Join(dir, "designs", "designs.go"), []byte(designsIndex(builds.String(), apps.String())))
	writeFile(t, filepath.Join(dir, "designrun", "main.go"), []byte(designRunner))
	inputs := filepath.Join(dir, "inputs.json")
	writeFile(t, inputs, runnerInputs(t, cases))
	bin := filepath.Join(dir, "bin")
	goCommand(t, dir, "build", "-ldflags=-s -w", "-o", bin+string(filepath.Separator), "./...")
	goCommand(t, dir, "vet", "./...")
	t.Logf("%d designs exported, vetted and built in %v", len(cases), time.Since(start).Round(time.Millisecond))

	out, err := exec.Command(filepath.Join(bin, "designrun"), inputs).Output()
	if err != nil {
		t.Fatalf("running the exported designs: %v", err)
	}
	var runs []runnerResult
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatalf("reading the runner's results: %v", err)
	}
	if len(runs) != len(cases) {
		t.Fatalf("the runner ran %d designs, want %d", len(runs), len(cases))
	}
	records := 0
	for i, c := range cases {
		records += checkRandomDesign(t, c, runs[i])
	}
	t.Logf("%d designs: described and wrote %d sink records as the compiler did, in %v", len(cases), records, time.Since(start).Round(time.Millisecond))
}

// checkRandomDesign compares what the exported program did with case c
// against the compiler's topology and preview, and returns how many sink
// records it compared.
func checkRandomDesign(t *testing.T, c designgen.Case, got runnerResult) int {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Errorf("%s: "+format+"\n%s", append(append([]any{c.Name}, args...), designJSON(c.Design))...)
	}
	compiled, err := Compile(c.Design, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "" {
		fail("the exported program failed: %s", got.Error)
		return 0
	}
	if want := compiled.Topology.Describe(); got.Describe != want {
		fail("the exported program describes\n%s\nthe compiler\n%s", got.Describe, want)
	}
	preview, err := RunPreview(c.Design, previewSamples(c), PreviewOptions{Partitions: casePartitions(c), MaxRecords: 1 << 20})
	if err != nil {
		t.Fatalf("%s: previewing: %v", c.Name, err)
	}
	n := 0
	for _, topic := range slices.Sorted(maps.Keys(preview.Sinks)) {
		sink := sinkOf(c.Design, topic)
		var programs []PreviewRecord
		for _, r := range got.Sinks[topic] {
			programs = append(programs, PreviewRecord{Key: decodeOutput(designer.ParamString(sink, "keySerde"), r.Key),
				Value: decodeOutput(designer.ParamString(sink, "valueSerde"), r.Value), Timestamp: r.Timestamp})
		}
		want, _ := json.Marshal(preview.Sinks[topic])
		have, _ := json.Marshal(programs)
		if string(want) != string(have) && !(len(programs) == 0 && len(preview.Sinks[topic]) == 0) {
			fail("sink %s got from the exported program\n%s\nfrom the preview\n%s", topic, have, want)
		}
		n += len(programs)
	}
	return n
}

// previewSamples are c's records as RunPreview takes them: a JSON value as
// its raw text (encoded as it is), anything else as a string. A
// timestamp of 0 becomes 1, since the preview stamps a record of 0 with
// the wall clock.
func previewSamples(c designgen.Case) []Sample {
	sources := sourcesOf(c.Design)
	out := make([]Sample, 0, len(c.Input))
	for _, in := range c.Input {
		src := sources[in.Topic]
		out = append(out, Sample{Topic: in.Topic, Key: sampleOf(designer.ParamString(src, "keySerde"), in.Key),
			Value: sampleOf(designer.ParamString(src, "valueSerde"), in.Value), Timestamp: max(in.Timestamp, 1)})
	}
	return out
}

// sampleOf is a record's key or value as a Sample holds it for serde.
func sampleOf(serde string, s *string) any {
	switch {
	case s == nil:
		return nil
	case serde == "json":
		return json.RawMessage(*s)
	default:
		return *s
	}
}

// casePartitions is c's partition count of every source topic, as the
// preview and the TestDriver take it.
func casePartitions(c designgen.Case) map[string]int {
	if c.Partitions <= 1 {
		return nil
	}
	out := map[string]int{}
	for topic := range sourcesOf(c.Design) {
		out[topic] = c.Partitions
	}
	return out
}

func designJSON(d *designer.Design) []byte {
	b, _ := json.MarshalIndent(d, "", "  ")
	return b
}

// runnerInput is one design's run for the runner: its records encoded as
// the preview encodes them, and its sinks' topics.
type runnerInput struct {
	Partitions map[string]int `json:"partitions"`
	Records    []runnerRecord `json:"records"`
	Sinks      []string       `json:"sinks"`
}

// runnerRecord is a record piped in or written to a sink.
type runnerRecord struct {
	Topic     string `json:"topic,omitempty"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// runnerResult is what the runner did with one design.
type runnerResult struct {
	Describe string                    `json:"describe"`
	Error    string                    `json:"error"`
	Sinks    map[string][]runnerRecord `json:"sinks"`
}

// runnerInputs encodes every case's records for the runner.
func runnerInputs(t *testing.T, cases []designgen.Case) []byte {
	t.Helper()
	var all []runnerInput
	for _, c := range cases {
		in := runnerInput{Partitions: casePartitions(c)}
		sources := sourcesOf(c.Design)
		for _, s := range previewSamples(c) {
			src := sources[s.Topic]
			key, err := encodeSample(designer.ParamString(src, "keySerde"), s.Key)
			if err != nil {
				t.Fatalf("%s: key: %v", c.Name, err)
			}
			value, err := encodeSample(designer.ParamString(src, "valueSerde"), s.Value)
			if err != nil {
				t.Fatalf("%s: value: %v", c.Name, err)
			}
			in.Records = append(in.Records, runnerRecord{Topic: s.Topic, Key: key, Value: value, Timestamp: s.Timestamp})
		}
		for _, n := range c.Design.Nodes {
			if topic := designer.ParamString(n, "topic"); n.Kind == designer.KindSink && !slices.Contains(in.Sinks, topic) {
				in.Sinks = append(in.Sinks, topic)
			}
		}
		all = append(all, in)
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// designsIndex is the designs package's index of its topologies and
// their application ids.
func designsIndex(builds, apps string) string {
	return `// Package designs holds the generated designs' exported topologies.
package designs

import "github.com/braidstream/braid/runtime/streams"

// Builds are the designs' topologies, in seed order.
var Builds = []func() (*streams.Topology, error){
` + builds + `}

// Apps are the designs' application ids.
var Apps = []string{
` + apps + `}
`
}

// designRunner runs each exported topology of package designs in a
// TestDriver over its records (the JSON file its argument names), as
// RunPreview runs the compiler's, and prints what each did as JSON.
const designRunner = `// Command designrun runs the exported designs in TestDrivers.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"exported/designs"

	"github.com/braidstream/braid/runtime/streams"
)

type record struct {
	Topic     string ` + "`json:\"topic,omitempty\"`" + `
	Key       []byte ` + "`json:\"key\"`" + `
	Value     []byte ` + "`json:\"value\"`" + `
	Timestamp int64  ` + "`json:\"timestamp\"`" + `
}

type input struct {
	Partitions map[string]int ` + "`json:\"partitions\"`" + `
	Records    []record       ` + "`json:\"records\"`" + `
	Sinks      []string       ` + "`json:\"sinks\"`" + `
}

type result struct {
	Describe string              ` + "`json:\"describe\"`" + `
	Error    string              ` + "`json:\"error\"`" + `
	Sinks    map[string][]record ` + "`json:\"sinks\"`" + `
}

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var inputs []input
	if err := json.Unmarshal(b, &inputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var results []result
	for i, in := range inputs {
		results = append(results, run(i, in))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(i int, in input) result {
	topo, err := designs.Builds[i]()
	if err != nil {
		return result{Error: "building: " + err.Error()}
	}
	res := result{Describe: topo.Describe(), Sinks: map[string][]record{}}
	d, err := streams.NewTestDriver(topo, streams.DriverConfig{ApplicationID: designs.Apps[i], Partitions: in.Partitions,
		DeserializationErrors: streams.LogAndContinue, ProcessingErrors: streams.LogAndContinue})
	if err != nil {
		return result{Error: "starting the driver: " + err.Error()}
	}
	defer d.Close()
	for _, r := range in.Records {
		_ = d.Pipe(r.Topic, r.Key, r.Value, r.Timestamp) // a failing record is skipped, as in the preview
	}
	if err := d.Commit(); err != nil {
		return result{Error: "committing: " + err.Error()}
	}
	for _, topic := range in.Sinks {
		for _, r := range d.Output(topic) {
			res.Sinks[topic] = append(res.Sinks[topic], record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
		}
	}
	return res
}
`
