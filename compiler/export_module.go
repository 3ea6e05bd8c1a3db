package compiler

import (
	"archive/zip"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/braidstream/braid"
	"github.com/braidstream/braid/designer"
)

// braidModule is the path of Braid's own module, which exported programs
// require and replace with the copy they carry.
const braidModule = "github.com/braidstream/braid"

// moduleBraidDir is where an exported module keeps its copy of Braid, and
// what its replace directive points at.
const moduleBraidDir = "braid"

// Module is an exported program as a Go module: main.go, go.mod, go.sum
// and, under braid/, the source of Braid's runtime that the program
// builds with. `go build` in its directory works on any machine that
// reaches a module proxy (or has the modules in its cache).
type Module struct {
	// Name is the module path, made from the design's name.
	Name string
	// Files are the module's files by slash-separated path, in path order.
	Files []ModuleFile
}

// ModuleFile is one file of a Module.
type ModuleFile struct {
	Path string
	Data []byte
}

// ExportModule writes d as ExportGo does, in a module of its own. The
// module requires Braid at the version of this binary, carried as source
// (braid.Source) behind a local replace, since Braid is on no module
// proxy; every other requirement is Braid's own, at the versions of its
// go.mod, with its go.sum, so the program builds with the module versions
// Braid was tested with. Requirements the program does not need stay
// listed, as in Braid's go.mod: `go mod tidy` may drop them.
func ExportModule(d *designer.Design, opts ExportOptions) (*Module, error) {
	src, err := ExportGo(d, opts)
	if err != nil {
		return nil, err
	}
	imports, err := importPaths(src)
	if err != nil {
		return nil, fmt.Errorf("exporting design %q as a module: %w", d.ID, err)
	}
	m, err := newModule(moduleName(d), imports)
	if err != nil {
		return nil, fmt.Errorf("exporting design %q as a module: %w", d.ID, err)
	}
	m.add("main.go", src)
	return m, nil
}

// newModule makes a module named name with no package of its own: its
// go.mod and go.sum, and Braid's source under braid/. The requirements
// that provide imports (the import paths of its packages) are direct.
func newModule(name string, imports []string) (*Module, error) {
	m := &Module{Name: name}
	braidMod, err := fs.ReadFile(braid.Source, "go.mod")
	if err != nil {
		return nil, fmt.Errorf("reading Braid's go.mod: %w", err)
	}
	goMod, err := moduleGoMod(name, braidMod, imports)
	if err != nil {
		return nil, err
	}
	goSum, err := fs.ReadFile(braid.Source, "go.sum")
	if err != nil {
		return nil, fmt.Errorf("reading Braid's go.sum: %w", err)
	}
	m.add("go.mod", goMod)
	m.add("go.sum", goSum)
	err = fs.WalkDir(braid.Source, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if e.Name() == "testdata" {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := fs.ReadFile(braid.Source, p)
		if err != nil {
			return err
		}
		m.add(path.Join(moduleBraidDir, p), data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copying Braid's source: %w", err)
	}
	return m, nil
}

// moduleGoMod is the go.mod of module name: Braid's go directive and
// requirements, Braid itself required and replaced by ./braid. A
// requirement is direct if it provides one of imports, as go mod tidy
// would mark it.
func moduleGoMod(name string, braidMod []byte, imports []string) ([]byte, error) {
	bm, err := modfile.ParseLax("go.mod", braidMod, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing Braid's go.mod: %w", err)
	}
	if bm.Go == nil {
		return nil, fmt.Errorf("parsing Braid's go.mod: no go directive")
	}
	f := &modfile.File{Syntax: &modfile.FileSyntax{}}
	f.AddComment("// This module runs a Braid design; `braid export` wrote it. Braid's\n" +
		"// module is on no module proxy: the runtime is in ./" + moduleBraidDir + ", as the braid\n" +
		"// binary that wrote this had it. The other requirements are Braid's own.")
	if err := f.AddModuleStmt(name); err != nil {
		return nil, fmt.Errorf("naming the module %q: %w", name, err)
	}
	if err := f.AddGoStmt(bm.Go.Version); err != nil {
		return nil, fmt.Errorf("adding go %s: %w", bm.Go.Version, err)
	}
	// Replaced by a directory, Braid's version is only a placeholder.
	f.AddNewRequire(braidModule, "v0.0.0", false)
	for _, r := range bm.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, !provides(r.Mod.Path, imports))
	}
	if err := f.AddReplace(braidModule, "", "./"+moduleBraidDir, ""); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", braidModule, err)
	}
	f.SetRequireSeparateIndirect(f.Require)
	f.Cleanup()
	return f.Format()
}

// provides says whether the module at modPath holds one of the packages
// imports. Nested modules are not told apart (franz-go's kmsg is a module
// of its own inside franz-go's path): a wrongly direct requirement only
// moves a line, it changes no version.
func provides(modPath string, imports []string) bool {
	for _, p := range imports {
		if p == modPath || strings.HasPrefix(p, modPath+"/") {
			return true
		}
	}
	return false
}

// importPaths lists the imports of a Go file.
func importPaths(src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("reading the program's imports: %w", err)
	}
	var paths []string
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("reading the program's imports: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// moduleName is a module path for d: its name (or id) in lower case, each
// character a module path may not have as a dash.
func moduleName(d *designer.Design) string {
	name := d.Name
	if name == "" {
		name = d.ID
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if s := strings.Trim(b.String(), ".-_"); s != "" {
		return s
	}
	return "braid-design"
}

func (m *Module) add(p string, data []byte) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= p })
	if i < len(m.Files) && m.Files[i].Path == p {
		m.Files[i].Data = data
		return
	}
	m.Files = append(m.Files, ModuleFile{})
	copy(m.Files[i+1:], m.Files[i:])
	m.Files[i] = ModuleFile{Path: p, Data: data}
}

// File returns the data of the file at p, and whether there is one.
func (m *Module) File(p string) ([]byte, bool) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= p })
	if i < len(m.Files) && m.Files[i].Path == p {
		return m.Files[i].Data, true
	}
	return nil, false
}

// WriteDir writes the module's files into dir, making it and the folders
// they need. It refuses a dir that already has a go.mod or main.go, so
// that an export never overwrites a program.
func (m *Module) WriteDir(dir string) error {
	for _, p := range []string{"go.mod", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return fmt.Errorf("writing module %s into %s: %s is already there", m.Name, dir, p)
		}
	}
	for _, f := range m.Files {
		name := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("writing module %s: %w", m.Name, err)
		}
		if err := os.WriteFile(name, f.Data, 0o644); err != nil {
			return fmt.Errorf("writing module %s: %w", m.Name, err)
		}
	}
	return nil
}

// WriteZip writes the module as a zip archive whose files are under one
// folder named as the module, as a downloaded module unpacks.
func (m *Module) WriteZip(w io.Writer) error {
	z := zip.NewWriter(w)
	for _, f := range m.Files {
		fw, err := z.Create(m.Name + "/" + f.Path)
		if err != nil {
			return fmt.Errorf("zipping module %s: %w", m.Name, err)
		}
		if _, err := io.Copy(fw, bytes.NewReader(f.Data)); err != nil {
			return fmt.Errorf("zipping %s: %w", f.Path, err)
		}
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("zipping module %s: %w", m.Name, err)
	}
	return nil
}
