package compiler

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/braidstream/braid"
	"github.com/braidstream/braid/designer"
)

// TestExportModule checks the module ExportModule writes: the program of
// ExportGo, a go.mod that requires and replaces Braid and pins every other
// module at Braid's version, Braid's go.sum, and under braid/ every
// non-test file of Braid's runtime and nothing else. TestExportBuild
// builds such a module.
func TestExportModule(t *testing.T) {
	d := loadDesign(t, "../designer/testdata/orders-windowed.json")
	m, err := ExportModule(d, ExportOptions{Revision: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "orders-windowed" {
		t.Errorf("module name %q, want orders-windowed", m.Name)
	}
	main, _ := m.File("main.go")
	want, err := ExportGo(d, ExportOptions{Revision: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(main, want) {
		t.Errorf("main.go is not ExportGo's program:\n%s", main)
	}

	goMod, _ := m.File("go.mod")
	f, err := modfile.Parse("go.mod", goMod, nil)
	if err != nil {
		t.Fatalf("the module's go.mod does not parse: %v\n%s", err, goMod)
	}
	braidMod, err := fs.ReadFile(braid.Source, "go.mod")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := modfile.Parse("go.mod", braidMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != m.Name || f.Go.Version != bf.Go.Version {
		t.Errorf("go.mod says module %q go %s, want %q go %s", f.Module.Mod.Path, f.Go.Version, m.Name, bf.Go.Version)
	}
	required := map[string]*modfile.Require{}
	for _, r := range f.Require {
		required[r.Mod.Path] = r
	}
	if r := required[braidModule]; r == nil || r.Indirect {
		t.Errorf("go.mod does not require %s directly:\n%s", braidModule, goMod)
	}
	for _, r := range bf.Require {
		got := required[r.Mod.Path]
		if got == nil || got.Mod.Version != r.Mod.Version {
			t.Errorf("go.mod requires %s at %v, want Braid's %s", r.Mod.Path, got, r.Mod.Version)
		}
	}
	if len(required) != len(bf.Require)+1 {
		t.Errorf("go.mod has %d requirements, want Braid's %d and Braid", len(required), len(bf.Require))
	}
	if len(f.Replace) != 1 || f.Replace[0].Old.Path != braidModule || f.Replace[0].New.Path != "./"+moduleBraidDir {
		t.Errorf("go.mod replaces %v, want %s => ./%s", f.Replace, braidModule, moduleBraidDir)
	}
	goSum, _ := m.File("go.sum")
	braidSum, err := fs.ReadFile(braid.Source, "go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(goSum, braidSum) {
		t.Error("go.sum is not Braid's")
	}

	// braid/ is the runtime as this repository has it, tests left out.
	wantCopy := map[string]bool{"braid/go.mod": true, "braid/go.sum": true}
	err = filepath.WalkDir("../runtime", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel("..", p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, "_test.go") && !strings.Contains(rel, "/testdata/") {
			wantCopy["braid/"+rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !wantCopy["braid/runtime/streams/app.go"] {
		t.Fatal("found no runtime source to compare with")
	}
	for _, file := range m.Files {
		if !strings.HasPrefix(file.Path, moduleBraidDir+"/") {
			continue
		}
		if !wantCopy[file.Path] {
			t.Errorf("the module carries %s, which is no runtime source", file.Path)
			continue
		}
		delete(wantCopy, file.Path)
		onDisk, err := os.ReadFile(filepath.Join("..", strings.TrimPrefix(file.Path, moduleBraidDir+"/")))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, file.Data) {
			t.Errorf("the module's %s differs from this repository's", file.Path)
		}
	}
	for p := range wantCopy {
		t.Errorf("the module lacks %s", p)
	}
}

// TestExportModuleDirect marks direct the requirements main.go imports,
// as go mod tidy would: a program that compiles an expression at start-up
// imports expr-lang.
func TestExportModuleDirect(t *testing.T) {
	goMod, err := moduleGoMod("m", []byte("module github.com/braidstream/braid\n\ngo 1.26\n\nrequire (\n\tgithub.com/expr-lang/expr v1.17.8 // indirect\n\tgithub.com/twmb/franz-go v1.22.3\n)\n"),
		[]string{"fmt", streamsPath, "github.com/expr-lang/expr/vm"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", goMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	indirect := map[string]bool{}
	for _, r := range f.Require {
		indirect[r.Mod.Path] = r.Indirect
	}
	want := map[string]bool{braidModule: false, "github.com/expr-lang/expr": false, "github.com/twmb/franz-go": true}
	for p, ind := range want {
		if got, ok := indirect[p]; !ok || got != ind {
			t.Errorf("%s: indirect %v (listed %v), want %v\n%s", p, got, ok, ind, goMod)
		}
	}
}

func TestModuleName(t *testing.T) {
	for _, tc := range []struct{ name, id, want string }{
		{"orders-demo", "x", "orders-demo"},
		{"Orders_Demo.v2", "x", "orders_demo.v2"},
		{"", "click-sessions", "click-sessions"},
		{"my design/é", "x", "my-design"},
		{"..", "x", "braid-design"},
	} {
		got := moduleName(&designer.Design{Name: tc.name, ID: tc.id})
		if got != tc.want {
			t.Errorf("moduleName(%q, %q) = %q, want %q", tc.name, tc.id, got, tc.want)
		}
		if err := (&modfile.File{}).AddModuleStmt(got); err != nil {
			t.Errorf("moduleName(%q): %v", tc.name, err)
		}
	}
}

func TestModuleWriteDirAndZip(t *testing.T) {
	m := &Module{Name: "m"}
	m.add("main.go", []byte("package main\n"))
	m.add("braid/go.mod", []byte("module x\n"))
	m.add("go.mod", []byte("module m\n"))
	m.add("go.mod", []byte("module m\n\ngo 1.26\n"))
	if len(m.Files) != 3 || m.Files[0].Path != "braid/go.mod" || m.Files[2].Path != "main.go" {
		t.Fatalf("files %v, want three in path order", m.Files)
	}

	dir := filepath.Join(t.TempDir(), "out")
	if err := m.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s: read %q (%v), want %q", f.Path, got, err, f.Data)
		}
	}
	if err := m.WriteDir(dir); err == nil || !strings.Contains(err.Error(), "go.mod is already there") {
		t.Errorf("writing over a module: %v, want a refusal naming go.mod", err)
	}

	var b bytes.Buffer
	if err := m.WriteZip(&b); err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(z.File) != len(m.Files) {
		t.Fatalf("the zip has %d files, want %d", len(z.File), len(m.Files))
	}
	for i, zf := range z.File {
		r, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if zf.Name != "m/"+m.Files[i].Path || !bytes.Equal(got, m.Files[i].Data) {
			t.Errorf("zip entry %s holds %q, want m/%s holding %q", zf.Name, got, m.Files[i].Path, m.Files[i].Data)
		}
	}
}
