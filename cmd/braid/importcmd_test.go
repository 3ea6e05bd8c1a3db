package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
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
			kinds = append(kinds, n.Kind)
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
