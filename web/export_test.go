package web

import (
	"archive/zip"
	"bytes"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func TestExportGoAPI(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	if r := ts.do("POST", "/api/designs/import", orders); r.status != 201 {
		t.Fatal(r.status, r.String())
	}
	isProgram := func(t *testing.T, r *response) {
		t.Helper()
		if ct := r.header.Get("Content-Type"); ct != "text/x-go; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if cd := r.header.Get("Content-Disposition"); cd != "attachment; filename=main.go" {
			t.Errorf("Content-Disposition %q", cd)
		}
		f, err := parser.ParseFile(token.NewFileSet(), "main.go", r.body, 0)
		if err != nil {
			t.Fatalf("not Go: %v\n%s", err, r.body)
		}
		if f.Name.Name != "main" || !strings.Contains(r.String(), `"github.com/braidstream/braid/runtime/streams"`) {
			t.Errorf("package %s, imports of %s", f.Name.Name, r.body)
		}
	}
	isModule := func(t *testing.T, r *response) {
		t.Helper()
		if ct := r.header.Get("Content-Type"); ct != "application/zip" {
			t.Errorf("Content-Type %q", ct)
		}
		if cd := r.header.Get("Content-Disposition"); cd != "attachment; filename=orders-windowed.zip" {
			t.Errorf("Content-Disposition %q", cd)
		}
		z, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
		if err != nil {
			t.Fatalf("not a zip: %v", err)
		}
		files := map[string]*zip.File{}
		for _, f := range z.File {
			files[f.Name] = f
		}
		for _, name := range []string{"main.go", "go.mod", "go.sum", "braid/go.mod", "braid/runtime/streams/app.go"} {
			if files["orders-windowed/"+name] == nil {
				t.Errorf("the zip lacks orders-windowed/%s", name)
			}
		}
		if f := files["orders-windowed/main.go"]; f != nil {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := parser.ParseFile(token.NewFileSet(), "main.go", rc, 0); err != nil {
				t.Errorf("main.go in the zip: %v", err)
			}
		}
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		check                    func(t *testing.T, r *response)
	}{
		{"body", "POST", "/api/export/go", orders, 200, isProgram},
		{"stored", "GET", "/api/designs/orders-windowed/export.go", "", 200, isProgram},
		{"stored revision", "GET", "/api/designs/orders-windowed/export.go?revision=1", "", 200, isProgram},
		{"missing revision", "GET", "/api/designs/orders-windowed/export.go?revision=7", "", 404, nil},
		{"missing design", "GET", "/api/designs/nope/export.go", "", 404, nil},
		{"problems", "POST", "/api/export/go", withParam(t, orders, "filter", "predicate", "value.amount >="), 422, wantProblem("filter", "predicate", "unexpected token")},
		{"not a design", "POST", "/api/export/go", `{"nodes": 1}`, 400, wantError("want a list", 1, 11, "nodes")},
		{"module", "POST", "/api/export/module", orders, 200, isModule},
		{"stored module", "GET", "/api/designs/orders-windowed/export.zip?revision=1", "", 200, isModule},
		{"missing module", "GET", "/api/designs/nope/export.zip", "", 404, nil},
		{"module with problems", "POST", "/api/export/module", withParam(t, orders, "filter", "predicate", "value.amount >="), 422, wantProblem("filter", "predicate", "unexpected token")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if r.status >= 400 {
				r.apiErr(t)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}
