// Package static holds the browser's files — the editor's and the designs
// list's JavaScript and CSS and the vendored libraries under vendor/ — embedded
// in the binary, and names them for the pages: URL gives a file's address
// with a version derived from its content, so that browsers may cache it for
// good, and Vendor lists the vendored scripts and styles in load order.
//
// Every file of this directory except Go files is embedded (the pattern is
// "*", which always matches, so a missing asset never breaks the build);
// names starting with '.' or '_' are left out, as go:embed does.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

//go:embed *
var embedded embed.FS

// files is embedded without the Go sources of this package.
var files fs.FS = servable{embedded}

// FS returns the static files, named as under /static/ ("editor.js",
// "vendor/x6/x6.js"); Go files are not among them.
func FS() fs.FS { return files }

// servable hides the Go files of the package directory.
type servable struct{ fsys embed.FS }

func hidden(name string) bool { return strings.HasSuffix(name, ".go") }

func (s servable) Open(name string) (fs.File, error) {
	if hidden(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return s.fsys.Open(name)
}

func (s servable) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := s.fsys.ReadDir(name)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return !e.IsDir() && hidden(e.Name()) }), nil
}

func (s servable) ReadFile(name string) ([]byte, error) {
	if hidden(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return s.fsys.ReadFile(name)
}

// Has reports whether the file name exists (and is not a directory).
func Has(name string) bool {
	_, ok := index()[name]
	return ok
}

// Version returns a short hash of the content of file name, "" when there
// is no such file.
func Version(name string) string { return index()[name] }

// URL returns the path the server serves file name at, /static/<name>,
// with ?v=<Version> when the file exists, so that a changed file gets a new
// URL.
func URL(name string) string {
	u := "/static/" + name
	if v := Version(name); v != "" {
		u += "?v=" + v
	}
	return u
}

// LoadOrderFile, when present, lists the vendored files the pages load,
// one path relative to this directory a line ("vendor/x6/x6.js"), in
// order; blank lines and lines starting with '#' are skipped, as are
// listed files that do not exist.
const LoadOrderFile = "vendor/load-order.txt"

// Vendor returns the vendored files with extension ext (".js", ".css") the
// pages load, in order. Without LoadOrderFile that is every such file under
// vendor/ in path order, '/' sorting before every other character (so that
// vendor/x6/x6.js comes before vendor/x6-plugin-minimap/index.js), leaving
// out a.js when a.min.js exists (likewise for .css), source maps and
// ES-module builds (*.mjs, *.esm.js).
func Vendor(ext string) []string {
	order, _ := fs.ReadFile(files, LoadOrderFile)
	idx := index()
	names := make([]string, 0, len(idx))
	for name := range idx {
		names = append(names, name)
	}
	return vendor(names, order, ext)
}

// vendor is Vendor over the file names given and the content of
// LoadOrderFile (nil when there is none).
func vendor(names []string, order []byte, ext string) []string {
	has := make(map[string]bool, len(names))
	for _, n := range names {
		has[n] = true
	}
	var out []string
	if order != nil {
		for _, line := range strings.Split(string(order), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") || path.Ext(line) != ext || !has[line] {
				continue
			}
			out = append(out, line)
		}
		return out
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "vendor/") || path.Ext(name) != ext || strings.HasSuffix(name, ".esm"+ext) {
			continue
		}
		if base := strings.TrimSuffix(name, ext); !strings.HasSuffix(base, ".min") && has[base+".min"+ext] {
			continue
		}
		out = append(out, name)
	}
	slices.SortFunc(out, func(a, b string) int {
		return strings.Compare(strings.ReplaceAll(a, "/", "\x00"), strings.ReplaceAll(b, "/", "\x00"))
	})
	return out
}

// index maps every file's name to its Version, computed once.
var index = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(data)
		m[name] = hex.EncodeToString(sum[:6])
		return nil
	})
	return m
})
