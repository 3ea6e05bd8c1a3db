package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

func TestExportCommand(t *testing.T) {
	const path = "../../designer/testdata/orders-windowed.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := compiler.ExportGo(d, compiler.ExportOptions{Revision: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"--revision", "4", path}, ""},
		{[]string{path, "--revision=4"}, ""},
		{[]string{"--revision", "4", "-"}, string(data)},
	} {
		exportStdin = strings.NewReader(tc.stdin)
		var out bytes.Buffer
		if err := runExport(context.Background(), tc.args, &out); err != nil {
			t.Fatalf("export %q: %v", tc.args, err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("export %q wrote\n%s\nwant compiler.ExportGo's\n%s", tc.args, out.String(), want)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "main.go", out.Bytes(), 0); err != nil {
			t.Errorf("export %q: %v", tc.args, err)
		}
		if !strings.Contains(out.String(), `(id "orders-windowed", revision 4)`) {
			t.Errorf("export %q: the header does not name the revision:\n%s", tc.args, out.String())
		}
	}
}

func TestExportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	design := `{"id": "b", "name": "b", "version": 1, "nodes": [
		{"id": "src", "kind": "source-stream", "params": {"topic": "in"}, "position": {"x": 0, "y": 0}},
		{"id": "f", "kind": "filter", "params": {"predicate": "value.x >"}, "position": {"x": 0, "y": 0}},
		{"id": "out", "kind": "sink", "params": {"topic": "out"}, "position": {"x": 0, "y": 0}}],
		"edges": [{"from": "src", "fromPort": "out", "to": "f", "toPort": "in"}, {"from": "f", "fromPort": "out", "to": "out", "toPort": "in"}]}`
	if err := os.WriteFile(broken, []byte(design), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want one design file"},
		{[]string{"a.json", "b.json"}, "want one design file"},
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--revision", "-1", broken}, "negative"},
		{[]string{broken}, "1 problem:\n  node f (filter) predicate: "},
	} {
		var out bytes.Buffer
		err := runExport(context.Background(), tc.args, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("export %q: %v, want an error with %q", tc.args, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("export %q wrote %q", tc.args, out.String())
		}
	}
	var out bytes.Buffer
	if err := runExport(context.Background(), []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: braid export") {
		t.Errorf("export --help: %v\n%s", err, out.String())
	}
}
