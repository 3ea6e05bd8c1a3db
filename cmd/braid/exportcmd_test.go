package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	rprocess "github.com/braidstream/braid/runtime/process"
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
	// It lists the exported program's flags: braid run's, from the
	// runtime, and --describe.
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	rprocess.DefineFlags(fs, "", "")
	want := []string{"describe"}
	fs.VisitAll(func(f *flag.Flag) { want = append(want, f.Name) })
	for _, name := range want {
		if !strings.Contains(out.String(), "\n  -"+name+" ") && !strings.Contains(out.String(), "\n  -"+name+"\n") {
			t.Errorf("export --help lacks the program's flag -%s:\n%s", name, out.String())
		}
	}
}

// flagNames returns the flags a flag package usage lists, sorted.
func flagNames(usage string) []string {
	var names []string
	for _, line := range strings.Split(usage, "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	slices.Sort(names)
	return names
}

// TestExportModuleBuilds does what a user does with `braid export -o`:
// builds the module outside this repository with the go command as it
// is (modules from the cache or the proxy, no -mod=mod) and runs the
// program's --help.
func TestExportModuleBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program; skipped with -short")
	}
	dir := buildExportedDemo(t)
	help, err := exec.Command(filepath.Join(dir, "program"), "--help").CombinedOutput()
	// The default --app-id is braid run's, so that both join one group.
	if err != nil || !strings.Contains(string(help), "-brokers") || !strings.Contains(string(help), "-instances") ||
		!strings.Contains(string(help), fmt.Sprintf("(default %q)", readDemoTopics(t).appID)) {
		t.Errorf("the exported program's --help: %v\n%s", err, help)
	}

	// The flags of telemetry and control are there too, from the runtime.
	for _, f := range []string{"-telemetry-topic", "-control-topic", "-control-secret-file"} {
		if !strings.Contains(string(help), f) {
			t.Errorf("the exported program's --help lacks %s:\n%s", f, help)
		}
	}

	// braid export --help lists the flags the program takes, each of them.
	var usage bytes.Buffer
	if err := runExport(context.Background(), []string{"--help"}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	program := flagNames(string(help))
	listed := flagNames(usage.String()[strings.Index(usage.String(), "The exported program's flags:"):strings.Index(usage.String(), "\nFlags:")])
	if !slices.Equal(program, listed) {
		t.Errorf("braid export --help lists the program's flags %q, the program takes %q", listed, program)
	}

	// A second export into the same folder is refused: it would overwrite the program.
	var out bytes.Buffer
	if err := runExport(context.Background(), []string{"-o", dir, "orders-demo.json"}, &out); err == nil || !strings.Contains(err.Error(), "already there") {
		t.Errorf("export -o into an exported module: %v, want a refusal", err)
	}
}

// buildExportedDemo exports orders-demo.json with `braid export -o` and
// builds the module outside this repository with the go command as it
// is (modules from the cache or the proxy, no -mod=mod), as a user does.
// It returns the module's folder, where the program is, named program.
func buildExportedDemo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "orders")
	var out bytes.Buffer
	if err := runExport(context.Background(), []string{"-o", dir, "orders-demo.json"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "wrote module orders-demo to "+dir) {
		t.Errorf("export -o said %q", out.String())
	}
	for _, f := range []string{"main.go", "go.mod", "go.sum", "braid/go.mod", "braid/runtime/streams/app.go", "braid/runtime/process/process.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the module lacks %s: %v", f, err)
		}
	}
	build := exec.Command("go", "build", "-o", "program", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in the exported module: %v\n%s", err, b)
	}
	return dir
}

// sourceFlag is a flag as a flag.Kind(name, default, usage) call in
// source defines it.
type sourceFlag struct{ kind, def, usage string }
