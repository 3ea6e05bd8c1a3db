package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
)

const importText = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: output)
      <-- KSTREAM-FILTER-0000000001

`

func TestImportCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "orders app.describe.txt")
	if err := os.WriteFile(file, []byte(importText), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		stdin string
		name  string
	}{
		{[]string{file}, "", "orders-app.describe"},
		{[]string{"--name", "orders", file}, "", "orders"},
		{[]string{file, "--name", "late-flag"}, "", "late-flag"},
		{[]string{"-"}, importText, "imported"},
		{[]string{"--name=from-stdin", "-"}, strings.ReplaceAll(importText, "\n", "\r\n"), "from-stdin"},
	} {
		importStdin = strings.NewReader(tc.stdin)
		var out bytes.Buffer
		if err := runImport(context.Background(), tc.args, &out); err != nil {
			t.Fatalf("import %q: %v", tc.args, err)
		}
		if !strings.Contains(out.String(), "\n  \"nodes\": [\n") {
			t.Errorf("import %q: output is not indented JSON:\n%s", tc.args, out.String())
		}
		var d designer.Design
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("import %q: %v\n%s", tc.args, err, out.String())
		}
		var kinds []string
		for _, n := range d.Nodes {
			kinds = append(kinds, string(n.Kind))
		}
		if d.Name != tc.name || d.Version != designer.FormatVersion || strings.Join(kinds, " ") != "source-stream filter sink" || len(d.Edges) != 2 {
			t.Errorf("import %q: name %q, version %d, kinds %q, %d edges", tc.args, d.Name, d.Version, kinds, len(d.Edges))
		}
	}
	importStdin = os.Stdin
}

func TestImportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("Topologies:\n   Sub-topology: 0\n    Source: a (topics: [x])\n    Sink: b (topic: y)\n      <-- a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "expected one describe() text file"},
		{[]string{bad, bad}, "got 2 arguments"},
		{[]string{filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{bad}, `import ` + bad + `: line 4: expected "--> " after source "a"`},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		err := runImport(context.Background(), tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("import %q: %v, want an error containing %s", tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if err := runImport(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: braid import") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
}

// TestImportCommandWindowedNotes imports a windowed count (issue 18): the
// notes on what the text does not tell go to stderr, naming the node, and
// braid compile of the design reports the window's missing size on the
// windowed-by node the suppress became.
func TestImportCommandWindowedNotes(t *testing.T) {
	defer func(w io.Writer) { importStderr = w }(importStderr)
	file := filepath.Join("..", "..", "compiler", "testdata", "describe-import", "kafka-windowed-count-suppress.txt")
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, describe, _ := strings.Cut(string(text), "\n---\n")
	in := filepath.Join(t.TempDir(), "clicks.txt")
	if err := os.WriteFile(in, []byte(describe), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, notes bytes.Buffer
	importStderr = &notes
	if err := runImport(context.Background(), []string{in}, &out); err != nil {
		t.Fatalf("import: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(notes.String(), "\n"), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "braid import: "+in+`: note: node "n3" (windowed-by), KTABLE-SUPPRESS-0000000003: taken for suppress(Suppressed.untilWindowCloses(...))`) ||
		!strings.Contains(lines[0], "describe() does not print the window: set its type (tumbling unless set), size") ||
		!strings.HasPrefix(lines[1], "braid import: "+in+`: note: node "n4" (aggregate), KSTREAM-AGGREGATE-0000000002: describe() names a count() as it names an aggregate()`) {
		t.Errorf("notes on stderr:\n%s", notes.String())
	}
	if strings.Contains(out.String(), "braid import") {
		t.Errorf("notes in the design's JSON on stdout:\n%s", out.String())
	}

	design := filepath.Join(t.TempDir(), "clicks.json")
	if err := os.WriteFile(design, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var compiled bytes.Buffer
	err = runCompile(context.Background(), []string{design}, &compiled)
	if err == nil || !strings.Contains(err.Error(), "3 problems") {
		t.Errorf("compile of the imported design: %v, want 3 problems\n%s", err, compiled.String())
	}
	if !strings.Contains(compiled.String(), "node n3 (windowed-by) size: required for tumbling windows\n") {
		t.Errorf("compile does not report the window's size on n3:\n%s", compiled.String())
	}
}
