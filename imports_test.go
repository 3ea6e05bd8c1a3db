package braid_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the path of this module; M in the rules below.
const module = "github.com/braidstream/braid"

const (
	// std matches the standard library: an import path whose first element
	// has no dot.
	std = "std"
	// anything matches every import path.
	anything = "any"
)

// rule says what the packages matching pkg may import. Patterns are import
// paths, where a trailing "/..." matches the path itself and everything below
// it, or one of the special patterns std and anything. An import is a violation when
// it matches a forbidden pattern or no allowed pattern. Each package is judged
// by the rule with the most specific (longest) matching pkg pattern; a package
// that matches no rule is reported, so every new top-level package needs a line
// here.
type rule struct {
	pkg       string
	allowed   []string
	forbidden []string
}

// The architecture of ARCHITECTURE.md ("Packages and imports").
var rules = []rule{
	{pkg: module, allowed: []string{std}},
	{pkg: module + "/cmd/...", allowed: []string{anything}},
	{pkg: module + "/runtime/...",
		allowed: []string{std, module + "/runtime/...", "github.com/twmb/franz-go/...", "github.com/cockroachdb/pebble/...",
			// snapshots in blob stores (runtime/internal/snapshot), tested
			// against an S3 protocol server on loopback
			"gocloud.dev/...", "github.com/johannesboyne/gofakes3/..."},
		forbidden: []string{"github.com/gofiber/...", "github.com/a-h/templ/...",
			module + "/designer/...", module + "/compiler/...", module + "/web/...",
			module + "/templates/...", module + "/static/...", module + "/monitor/...", module + "/telemetry/...", module + "/deploy/..."}},
	{pkg: module + "/designer/...",
		allowed:   []string{std, module + "/designer/...", "github.com/cockroachdb/pebble/..."},
		forbidden: []string{module + "/runtime/...", module + "/compiler/...", module + "/web/..."}},
	{pkg: module + "/compiler/...",
		// The root package is the runtime's source that exported modules
		// carry; x/mod writes their go.mod.
		allowed:   []string{std, module, module + "/designer/...", module + "/runtime/...", module + "/compiler/...", "github.com/expr-lang/expr/...", "golang.org/x/mod/..."},
		forbidden: []string{module + "/web/...", module + "/monitor/..."}},
	// monitor's tests produce to an embedded broker with franz-go.
	{pkg: module + "/monitor/...",
		allowed:   []string{std, module + "/runtime/...", module + "/monitor/...", "github.com/prometheus/...", "github.com/twmb/franz-go/..."},
		forbidden: []string{module + "/web/...", module + "/designer/...", module + "/compiler/..."}},
	// telemetry turns the reports of processes elsewhere, in the
	// runtime's format (runtime/telemetry), back into the monitor's
	// deployments.
	{pkg: module + "/telemetry/...",
		allowed:   []string{std, module + "/telemetry/...", module + "/runtime/...", module + "/monitor/...", "github.com/twmb/franz-go/..."},
		forbidden: []string{module + "/web/...", module + "/designer/...", module + "/compiler/...", module + "/deploy/..."}},
	// deployconfig is the deployments' config topic, which the designer
	// writes and braid run processes follow; its tests run the embedded
	// broker. A design is JSON to it.
	{pkg: module + "/deployconfig/...",
		allowed:   []string{std, module + "/deployconfig/...", module + "/runtime/broker", "github.com/twmb/franz-go/..."},
		forbidden: []string{module + "/web/...", module + "/deploy/...", module + "/monitor/...", module + "/designer/...", module + "/compiler/..."}},
	// deploy runs designs: it compiles them, runs them on the runtime's
	// Supervisor, feeds the monitor and drives the data generators.
	{pkg: module + "/deploy/...",
		allowed:   []string{std, module + "/deploy/...", module + "/deployconfig/...", module + "/designer/...", module + "/compiler/...", module + "/runtime/...", module + "/monitor/...", module + "/datagen/...", "github.com/twmb/franz-go/..."},
		forbidden: []string{module + "/web/...", module + "/templates/...", module + "/static/..."}},
	{pkg: module + "/templates/...", allowed: []string{std, module + "/templates/...", module + "/static/...", "github.com/a-h/templ/..."}},
	{pkg: module + "/static/...", allowed: []string{std, module + "/static/..."}},
	{pkg: module + "/web/...", allowed: []string{anything}},
	// datagen produces test data with franz-go; nothing else of ours.
	{pkg: module + "/datagen/...", allowed: []string{std, module + "/datagen/...", "github.com/twmb/franz-go/..."}},
	// bench holds hand-written baselines: franz-go and pebble used directly.
	{pkg: module + "/bench/...", allowed: []string{std, module + "/runtime/...", module + "/bench/...", "github.com/twmb/franz-go/...", "github.com/cockroachdb/pebble/..."}},
	// peer/difftest compiles designs and runs them in the runtime's
	// TestDriver, beside Kafka Streams in a JVM.
	{pkg: module + "/peer/...", allowed: []string{std, module + "/compiler", module + "/designer", module + "/designer/designgen", module + "/runtime/streams"}},
	// e2e drives the built binary, real external clients and a browser
	// from outside; like an exported program it may use the public
	// runtime API (to start the embedded broker in-process), nothing else
	// of ours.
	{pkg: module + "/e2e/...", allowed: []string{anything}, forbidden: []string{module + "/designer/...", module + "/compiler/...", module + "/monitor/...", module + "/web/...", module + "/templates/...", module + "/static/...", module + "/cmd/...", module + "/bench/...", module + "/runtime/internal/..."}},
}

// forbiddenEverywhere applies to every package in the module.
var forbiddenEverywhere = []string{module + "/cmd/..."}

// badNames may not be the last element of a package path or a package name.
var badNames = map[string]bool{"util": true, "common": true, "types": true}

// pkg is the part of `go list -json` output the checks read.
type pkg struct {
	ImportPath   string
	Name         string
	Doc          string
	GoFiles      []string
	CgoFiles     []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

func matches(pattern, importPath string) bool {
	switch pattern {
	case anything:
		return true
	case std:
		first, _, _ := strings.Cut(importPath, "/")
		return !strings.Contains(first, ".")
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return importPath == base || strings.HasPrefix(importPath, base+"/")
	}
	return importPath == pattern
}

func matchesAny(patterns []string, importPath string) bool {
	for _, p := range patterns {
		if matches(p, importPath) {
			return true
		}
	}
	return false
}

// ruleFor returns the most specific rule whose pkg pattern matches importPath.
func ruleFor(rules []rule, importPath string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if matches(r.pkg, importPath) && (!found || len(r.pkg) > len(best.pkg)) {
			best, found = r, true
		}
	}
	return best, found
}

// check returns one message per violation in pkgs, which must be the
// packages of this module.
func check(pkgs []pkg, rules []rule) []string {
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	for _, p := range pkgs {
		if p.Error != nil {
			// go list could not read the package (for example a syntax
			// error in its import block), so its imports are unknown.
			report("%s: cannot read its imports: %s", p.ImportPath, p.Error.Err)
			continue
		}
		last := path.Base(p.ImportPath)
		if badNames[last] || badNames[p.Name] {
			report("%s: package name %q (path element %q) says nothing; name it after what it provides", p.ImportPath, p.Name, last)
		}
		hasCode := len(p.GoFiles)+len(p.CgoFiles) > 0
		if hasCode && strings.TrimSpace(p.Doc) == "" {
			report("%s: no package doc comment (add // Package %s ... or // Command ... in a doc.go)", p.ImportPath, p.Name)
		}
		r, ok := ruleFor(rules, p.ImportPath)
		if !ok {
			report("%s: no import rule covers this package; add a line to rules in imports_test.go (and a row to ARCHITECTURE.md, section \"Packages and imports\")", p.ImportPath)
			continue
		}
		for _, imps := range []struct {
			what string
			list []string
		}{
			{"imports", p.Imports},
			{"imports in tests", p.TestImports},
			{"imports in external tests", p.XTestImports},
		} {
			for _, imp := range imps.list {
				switch {
				case matchesAny(forbiddenEverywhere, imp):
					report("%s %s %s: no package may import %s", p.ImportPath, imps.what, imp, strings.Join(forbiddenEverywhere, ", "))
				case matchesAny(r.forbidden, imp):
					report("%s %s %s: forbidden by the rule for %s", p.ImportPath, imps.what, imp, r.pkg)
				case !matchesAny(r.allowed, imp) && imp != p.ImportPath:
					report("%s %s %s: not allowed by the rule for %s (allowed: %s)", p.ImportPath, imps.what, imp, r.pkg, strings.Join(r.allowed, ", "))
				}
			}
		}
	}
	return problems
}

// listModule runs `go list -e -deps -json ./...` in the module root and
// returns the packages of this module.
func listModule(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// With -e, go list reports broken packages in its output; a failure
		// here means the whole listing is unusable (go.mod broken, ...).
		t.Fatalf("go list -e -deps -json ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if matches(module+"/...", p.ImportPath) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no packages of %s; stderr:\n%s", module, stderr.String())
	}
	return pkgs
}

func TestArchitecture(t *testing.T) {
	t.Run("self-check", func(t *testing.T) {
		doc := "Package x does x."
		for _, tc := range []struct {
			name string
			pkg  pkg
			want string // substring of the one expected problem; "" for none
		}{
			{"runtime imports web", pkg{ImportPath: module + "/runtime/streams", Name: "streams", Doc: doc, GoFiles: []string{"a.go"},
				Imports: []string{"context", module + "/runtime/state", module + "/web"}}, "runtime/streams imports " + module + "/web"},
			{"runtime test imports monitor", pkg{ImportPath: module + "/runtime", Name: "runtime", Doc: doc, GoFiles: []string{"a.go"},
				XTestImports: []string{module + "/monitor"}}, "external tests " + module + "/monitor"},
			{"runtime imports unlisted third party", pkg{ImportPath: module + "/runtime", Name: "runtime", Doc: doc, GoFiles: []string{"a.go"},
				Imports: []string{"github.com/stretchr/testify/assert"}}, "not allowed"},
			{"runtime clean", pkg{ImportPath: module + "/runtime", Name: "runtime", Doc: doc, GoFiles: []string{"a.go"},
				Imports: []string{"sync", "github.com/twmb/franz-go/pkg/kgo", "github.com/cockroachdb/pebble/v2"}}, ""},
			{"web imports cmd", pkg{ImportPath: module + "/web", Name: "web", Doc: doc, GoFiles: []string{"a.go"},
				Imports: []string{module + "/cmd/braid"}}, "no package may import"},
			{"designer imports runtime", pkg{ImportPath: module + "/designer", Name: "designer", Doc: doc, GoFiles: []string{"a.go"},
				Imports: []string{module + "/runtime"}}, "forbidden"},
			{"prefix is not a path prefix", pkg{ImportPath: module + "/runtimex", Name: "runtimex", Doc: doc, GoFiles: []string{"a.go"}}, "no import rule"},
			{"util name", pkg{ImportPath: module + "/runtime/util", Name: "util", Doc: doc, GoFiles: []string{"a.go"}}, "says nothing"},
			{"no doc", pkg{ImportPath: module + "/runtime/state", Name: "state", GoFiles: []string{"a.go"}}, "no package doc"},
			{"test-only package needs no doc", pkg{ImportPath: module + "/e2e", Name: "e2e", TestImports: []string{"testing"}}, ""},
			{"unreadable", pkg{ImportPath: module + "/runtime", Error: &struct{ Err string }{"expected ')'"}}, "cannot read"},
		} {
			got := check([]pkg{tc.pkg}, rules)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("%s: want no problems, got %q", tc.name, got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("%s: want one problem containing %q, got %q", tc.name, tc.want, got)
			}
		}
	})

	t.Run("module", func(t *testing.T) {
		pkgs := listModule(t)
		for _, problem := range check(pkgs, rules) {
			t.Error(problem)
		}
		t.Logf("checked %d packages of %s", len(pkgs), module)
	})
}

// archDoc is the map of the repository: it explains the rules above and
// names every top-level folder.
const archDoc = "ARCHITECTURE.md"

// docGaps returns what doc (the text of archDoc) fails to name: each
// top-level folder of files (slash-separated paths from the repository
// root) without a row of its own in the folder table, a line starting
// "| `folder/`", and each rule of rules without a row in the rules table,
// a line starting "| `cmd/...`" (or "| root `braid`" for the module root).
func docGaps(files []string, rules []rule, doc string) []string {
	var gaps []string
	var folders []string
	for _, f := range files {
		if dir, _, ok := strings.Cut(f, "/"); ok && !slices.Contains(folders, dir) {
			folders = append(folders, dir)
		}
	}
	slices.Sort(folders)
	for _, dir := range folders {
		if !strings.Contains(doc, "\n| `"+dir+"/`") {
			gaps = append(gaps, fmt.Sprintf("folder %s/ has no row (| `%s/` | ...) in the folder table", dir, dir))
		}
	}
	for _, r := range rules {
		row := "\n| root `braid`"
		if r.pkg != module {
			row = "\n| `" + strings.TrimPrefix(r.pkg, module+"/") + "`"
		}
		if !strings.Contains(doc, row) {
			gaps = append(gaps, fmt.Sprintf("the rule for %s has no row (%s | ...) in the rules table", r.pkg, strings.TrimPrefix(row, "\n")))
		}
	}
	return gaps
}

// trackedFiles lists the repository's files: git's tracked files, or in a
// tree that is not a git checkout the entries of the root (enough for the
// folder check: a folder is named "dir/x").
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err == nil {
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	t.Logf("git ls-files: %v; reading the directory instead", err)
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" {
			files = append(files, e.Name()+"/x")
		}
	}
	return files
}

// TestArchitectureDoc keeps the map from falling behind the territory: a
// new top-level folder or a new import rule needs its row in archDoc.
func TestArchitectureDoc(t *testing.T) {
	t.Run("self-check", func(t *testing.T) {
		doc := "# Map\n| `bench/` | benchmarks |\n| root `braid` | std |\n| `bench/...` | std |\nsee `cmd/braid`\n"
		rules := []rule{{pkg: module}, {pkg: module + "/bench/..."}, {pkg: module + "/cmd/..."}}
		got := docGaps([]string{"go.mod", "bench/a.go", "bench/b/c.go", "cmd/braid/main.go", ".ci/run"}, rules, doc)
		want := []string{"folder .ci/", "folder cmd/", "rule for " + module + "/cmd/..."}
		if len(got) != len(want) {
			t.Fatalf("got %q, want problems about %q", got, want)
		}
		for i := range want {
			if !strings.Contains(got[i], want[i]) {
				t.Errorf("problem %d: got %q, want it about %q", i, got[i], want[i])
			}
		}
	})

	t.Run("repository", func(t *testing.T) {
		doc, err := os.ReadFile(archDoc)
		if err != nil {
			t.Fatalf("the map of the repository is missing: %v", err)
		}
		for _, gap := range docGaps(trackedFiles(t), rules, string(doc)) {
			t.Errorf("%s: %s", archDoc, gap)
		}
	})
}
