package compiler

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/broker"
)

// TestExportBuild builds exported programs in a module as ExportModule
// writes it (Braid's runtime source behind a replace, Braid's go.sum) and
// checks what they do against the compiler:
//
//   - every design of the goldens, and the hostile one, compiles and is
//     vet-clean, and its topology describes as Compile's does (the
//     programs as files of one package, checks, for speed);
//   - orders-windowed and stateless run as programs: --describe prints
//     Compile's Describe, and against the embedded broker they write to
//     their sinks what RunPreview gives for the same records;
//   - every translated expression of translatedCases and randomCases gives
//     on every input of exprInputs what the compiled expression gives.
//
// One `go build` makes all the binaries.
func TestExportBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs; skipped with -short")
	}
	start := time.Now()
	dir := t.TempDir()
	writeModule(t, dir)

	designs := exportDesigns(t)
	var names []string
	for name := range designs {
		names = append(names, name)
	}
	sort.Strings(names)

	// The designs and the expressions' check in one package, checks, each
	// file's top-level names made its own with a suffix: one package
	// compiles faster than many.
	var builds strings.Builder
	for i, name := range names {
		src, err := ExportGo(designs[name], ExportOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		suffix := "_d" + strconv.Itoa(i+1)
		writeFile(t, filepath.Join(dir, "checks", "d"+strconv.Itoa(i+1)+".go"), inPackage(t, src, "checks", suffix))
		fmt.Fprintf(&builds, "buildTopology%s, // %s\n", suffix, name)
	}
	// The two programs run as they are exported.
	for _, name := range []string{"orders-windowed", "stateless"} {
		src, err := ExportGo(designs[name], ExportOptions{Revision: 1})
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name, "main.go"), src)
	}
	cases := append(append([]exprCase(nil), translatedCases...), randomCases(300)...)
	fallback := append(append([]exprCase(nil), fallbackCases...), translatedCases...)
	all := append(append([]exprCase(nil), cases...), fallback...)
	inputs := exprInputs()
	checkSrc, want := exprCheckProgram(t, cases, fallback)
	formatted, err := format.Source([]byte(checkSrc))
	if err != nil {
		t.Fatalf("the expression check program does not format: %v", err)
	}
	writeFile(t, filepath.Join(dir, "checks", "expressions.go"), inPackage(t, formatted, "checks", "_x"))
	writeFile(t, filepath.Join(dir, "checks", "checks.go"), []byte(`// Package checks holds the designs' topologies and the expressions' check.
package checks

import (
	"fmt"

	"github.com/braidstream/braid/runtime/streams"
)

// Describe prints the Describe of every design, each ended by a NUL.
func Describe() {
	for _, build := range []func() (*streams.Topology, error){
`+builds.String()+`	} {
		topo, err := build()
		if err != nil {
			fmt.Print("error: ", err, "\x00")
			continue
		}
		fmt.Print(topo.Describe(), "\x00")
	}
}

// Expressions runs the expressions' check.
func Expressions() { main_x() }
`))
	writeFile(t, filepath.Join(dir, "testtool", "main.go"), []byte(testTool))

	bin := filepath.Join(dir, "bin")
	goCommand(t, dir, "build", "-ldflags=-s -w", "-o", bin+string(filepath.Separator), "./...")
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))
	goCommand(t, dir, "vet", "./...")
	t.Logf("vetted after %v", time.Since(start).Round(time.Millisecond))

	t.Run("describe", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(bin, "testtool"), "describe").Output()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(string(out), "\x00")
		for i, name := range names {
			c, err := Compile(designs[name], Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != c.Topology.Describe() {
				t.Errorf("%s: the exported program describes\n%s\nthe compiled design\n%s", name, got[i], c.Topology.Describe())
			}
		}
	})

	t.Run("expressions", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(bin, "testtool"), "expressions").Output()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(got) != len(want) {
			t.Fatalf("%d results, want %d", len(got), len(want))
		}
		bad := 0
		for i := range want {
			if got[i] == want[i] {
				continue
			}
			var c, j int
			fmt.Sscan(want[i], &c, &j)
			if bad++; bad <= 20 {
				how := "written as Go"
				if c >= len(cases) {
					how = "compiled at start-up"
				}
				t.Errorf("%s %q %s, on key %s value %s aggregate %s: the program gives\n\t%s\nthe compiler\n\t%s", all[c].role, all[c].source, how,
					goLiteral(inputs[j].key), goLiteral(inputs[j].value), goLiteral(inputs[j].aggregate), got[i], want[i])
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d results differ", bad, len(want))
		}
		t.Logf("%d expressions written as Go and %d compiled at start-up agree with the compiler on %d inputs", len(cases), len(fallback), len(inputs))
	})

	brk, err := broker.Start(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer brk.Close()
	const t0 = 1_700_000_000_000
	order := func(customer string, amount float64, ts int64, extra ...any) Sample {
		v := map[string]any{"customer": customer, "amount": amount, "ts": ts}
		for i := 0; i+1 < len(extra); i += 2 {
			v[extra[i].(string)] = extra[i+1]
		}
		return Sample{Topic: "orders", Key: "o-" + customer, Value: v, Timestamp: t0}
	}
	for _, run := range []struct {
		name    string
		samples []Sample
	}{
		{"orders-windowed", []Sample{
			order("ann", 60, t0+1000),
			order("bob", 10, t0+2000), // filtered out
			order("ann", 70, t0+9000),
			order("bob", 80, t0+4000),
			order("ann", 90, t0+12000),
			order("bob", 55, t0+15000), // closes [t0, t0+10s)
			order("ann", 99, t0+3000),  // late
			order("cid", 70, t0+41000), // closes [t0+10s, t0+20s)
		}},
		{"stateless", []Sample{
			order("ann", 150, t0+1, "status", "ok", "items", []any{map[string]any{"sku": "a", "qty": 2}, map[string]any{"sku": "b", "qty": 1.5}}),
			order("bob", 50, t0+2, "status", "ok", "items", []any{map[string]any{"sku": "c", "qty": 3}}), // not big
			order("cid", 200, t0+3, "status", "test", "items", []any{}),
			order("dan", 120.5, t0+4, "status", "ok", "items", []any{map[string]any{"sku": "d", "qty": 4}}),
			order("eve", 100, t0+5, "items", []any{map[string]any{"sku": "e", "qty": "x"}}),
		}},
	} {
		t.Run("run/"+run.name, func(t *testing.T) {
			runExported(t, filepath.Join(bin, run.name), filepath.Join(bin, "testtool"), brk.Addr(), designs[run.name], run.samples)
		})
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// exportDesigns returns the designs of the goldens and the hostile one.
func exportDesigns(t *testing.T) map[string]*designer.Design {
	t.Helper()
	designs := map[string]*designer.Design{"hostile": hostileDesign()}
	for _, path := range exportGoldenInputs(t) {
		designs[strings.TrimSuffix(filepath.Base(path), ".json")] = readDesign(t, path)
	}
	return designs
}

// runExported runs the program at bin against the broker at addr on the
// samples and compares what its sinks get with RunPreview's.
func runExported(t *testing.T, bin, tool, addr string, d *designer.Design, samples []Sample) {
	want, err := RunPreview(d, samples, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Errors) > 0 {
		t.Fatalf("the samples fail in the preview: %+v", want.Errors)
	}
	out, err := exec.Command(bin, "--describe").Output()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != c.Topology.Describe() {
		t.Errorf("--describe prints\n%s\nwant\n%s", out, c.Topology.Describe())
	}

	// Topics, then the samples, as the source's serdes encode them.
	sources := map[string]designer.Node{}
	var topics []string
	for _, n := range d.Nodes {
		switch n.Kind {
		case "source-stream", "source-table":
			sources[designer.ParamString(n, "topic")] = n
			topics = append(topics, designer.ParamString(n, "topic"))
		case "sink":
			topics = append(topics, designer.ParamString(n, "topic"))
		}
	}
	var lines bytes.Buffer
	for _, s := range samples {
		src := sources[s.Topic]
		key, err := encodeSample(designer.ParamString(src, "keySerde"), s.Key)
		if err != nil {
			t.Fatal(err)
		}
		value, err := encodeSample(designer.ParamString(src, "valueSerde"), s.Value)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(toolRecord{Topic: s.Topic, Key: key, Value: value, Timestamp: s.Timestamp})
		lines.Write(append(line, '\n'))
	}
	produce := exec.Command(tool, "produce", addr, strings.Join(topics, ","))
	produce.Stdin = &lines
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("producing: %v\n%s", err, out)
	}

	var logs bytes.Buffer
	app := exec.Command(bin, "--brokers", addr, "--state-dir", t.TempDir(), "--app-id", "exported-"+d.Name, "--commit-interval", "100ms")
	app.Stdout, app.Stderr = &logs, &logs
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- app.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			app.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the program's log:\n%s", logs.String())
		}
	}()

	for topic, records := range want.Sinks {
		sink := sinkOf(d, topic)
		consume := exec.Command(tool, "consume", addr, topic, strconv.Itoa(len(records)))
		consume.Stderr = os.Stderr
		out, err := consume.Output()
		if err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		var got []PreviewRecord
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			var r toolRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, PreviewRecord{Key: decodeOutput(designer.ParamString(sink, "keySerde"), r.Key),
				Value: decodeOutput(designer.ParamString(sink, "valueSerde"), r.Value), Timestamp: r.Timestamp})
		}
		if g, w := sortedRecords(got), sortedRecords(records); !reflect.DeepEqual(g, w) {
			t.Errorf("%s got\n%s\nwant (the preview's)\n%s", topic, strings.Join(g, "\n"), strings.Join(w, "\n"))
		} else {
			t.Logf("%s: %d records as in the preview", topic, len(got))
		}
		if len(records) == 0 {
			t.Errorf("the preview writes nothing to %s: a weak test", topic)
		}
	}

	// SIGTERM: the program commits, leaves the group and exits 0.
	stopped = true
	app.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM the program exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		app.Process.Kill()
		<-exited
		t.Errorf("the program did not exit within 20 s of SIGTERM")
	}
}

func sinkOf(d *designer.Design, topic string) designer.Node {
	for _, n := range d.Nodes {
		if n.Kind == "sink" && designer.ParamString(n, "topic") == topic {
			return n
		}
	}
	return designer.Node{}
}

// sortedRecords writes records as JSON lines, sorted: a repartition topic
// of several partitions may interleave them in any order.
func sortedRecords(records []PreviewRecord) []string {
	out := []string{}
	for _, r := range records {
		line, _ := json.Marshal(r)
		out = append(out, string(line))
	}
	sort.Strings(out)
	return out
}

// toolRecord is a record as testtool reads and writes it, one JSON
// object a line (keys and values in base64).
type toolRecord struct {
	Topic     string `json:"topic,omitempty"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// testTool is the program of the test module that runs the designs'
// BuildTopology and the expressions' check, and produces and consumes
// records: package compiler may not import franz-go (imports_test.go), the
// test module may.
const testTool = `// Command testtool serves TestExportBuild.
//
//	testtool describe                          prints the Describe of every design, each ended by a NUL
//	testtool expressions                       runs the expressions' check
//	testtool produce BROKER TOPICS < records   creates TOPICS, produces JSON lines
//	testtool consume BROKER TOPIC N            prints the records of TOPIC once N arrived
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"exported/checks"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type record struct {
	Topic     string ` + "`json:\"topic,omitempty\"`" + `
	Key       []byte ` + "`json:\"key\"`" + `
	Value     []byte ` + "`json:\"value\"`" + `
	Timestamp int64  ` + "`json:\"timestamp\"`" + `
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testtool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	switch {
	case len(args) == 1 && args[0] == "describe":
		checks.Describe()
		return nil
	case len(args) == 1 && args[0] == "expressions":
		checks.Expressions()
		return nil
	case len(args) == 3 && args[0] == "produce":
		cl, err := kgo.NewClient(kgo.SeedBrokers(args[1]))
		if err != nil {
			return err
		}
		defer cl.Close()
		if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, strings.Split(args[2], ",")...); err != nil {
			return err
		}
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var r record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return err
			}
			kr := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}
			if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
				return err
			}
		}
		return sc.Err()
	case len(args) == 4 && args[0] == "consume":
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(args[1]), kgo.ConsumeTopics(args[2]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return err
		}
		defer cl.Close()
		var got []record
		var quiet time.Time // after the N-th record, a little longer for extra ones
		for {
			pollCtx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
			fetches := cl.PollFetches(pollCtx)
			stop()
			fetches.EachRecord(func(r *kgo.Record) {
				got = append(got, record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()})
			})
			if ctx.Err() != nil {
				return fmt.Errorf("%d of %d records of %s arrived", len(got), n, args[2])
			}
			if len(got) >= n {
				if quiet.IsZero() {
					quiet = time.Now().Add(700 * time.Millisecond)
				} else if time.Now().After(quiet) {
					break
				}
			}
		}
		out := json.NewEncoder(os.Stdout)
		for _, r := range got {
			if err := out.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("usage: testtool describe | expressions | produce BROKER TOPICS | consume BROKER TOPIC N")
}
`

// writeModule writes into dir the module ExportModule writes, but for
// main.go: go.mod, go.sum and Braid's runtime under braid/.
func writeModule(t *testing.T, dir string) {
	t.Helper()
	m, err := newModule("exported", []string{streamsPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
}

// goCommand runs the go command in dir as a user would in an exported
// module: modules come from the module cache or the proxy, go.mod and
// go.sum as they were written (no -mod=mod, so a missing requirement or
// checksum fails).
func goCommand(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// inPackage turns a program into a file of package pkg, every name it
// declares (main included) ending in suffix.
func inPackage(t *testing.T, src []byte, pkg, suffix string) []byte {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	f.Name.Name = pkg
	top := map[*ast.Object]bool{}
	for _, obj := range f.Scope.Objects {
		top[obj] = true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Obj != nil && top[id.Obj] {
			id.Name += suffix
		}
		return true
	})
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
