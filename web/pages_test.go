package web

import (
	"html"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/braidstream/braid/static"
)

// editorTestIDs are the containers static/editor.js fills.
var editorTestIDs = []string{"palette", "canvas", "properties", "problems", "toolbar", "compile-view", "preview-panel", "revisions", "minimap", "unsaved"}

func TestPages(t *testing.T) {
	ts := start(t, Config{})
	r := ts.do("GET", "/", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{`data-testid="designs-list"`, `data-testid="new-design"`, `data-testid="import-json"`, `data-testid="designs-empty"`, `data-count="0"`} {
		if !strings.Contains(r.String(), want) {
			t.Errorf("empty designs page lacks %s", want)
		}
	}

	orders := readTestdata(t, "orders-windowed.json")
	if r := ts.do("POST", "/api/designs/import", orders); r.status != 201 {
		t.Fatal(r.status, r.String())
	}
	if r := ts.do("POST", "/api/designs", `{"name": "<script>alert(1)</script>"}`); r.status != 201 {
		t.Fatal(r.status, r.String())
	}
	r = ts.do("GET", "/", "")
	page := r.String()
	for _, want := range []string{`data-count="2"`, `data-testid="design-orders-windowed"`, `data-testid="name-orders-windowed"`,
		`href="/designs/orders-windowed"`, `&lt;script&gt;alert(1)&lt;/script&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("designs page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "designs-empty") {
		t.Errorf("designs page: unescaped name or an empty-list note:\n%s", page)
	}
	if static.Has("designs.js") && !strings.Contains(page, `src="`+html.EscapeString(static.URL("designs.js"))+`"`) {
		t.Errorf("designs page does not load designs.js:\n%s", page)
	}
	checkNoInlineScript(t, "/", page)

	r = ts.do("GET", "/designs/orders-windowed", "")
	if r.status != 200 {
		t.Fatalf("editor page: %d", r.status)
	}
	page = r.String()
	for _, id := range editorTestIDs {
		if !regexp.MustCompile(`id="` + id + `"[^>]*data-testid="` + id + `"`).MatchString(page) {
			t.Errorf("editor page lacks the container id=%q data-testid=%q", id, id)
		}
	}
	for _, want := range []string{`data-design-id="orders-windowed"`, `data-design-name="orders-windowed"`, `data-revision="1"`} {
		if !strings.Contains(page, want) {
			t.Errorf("editor page lacks %s", want)
		}
	}
	// Scripts in order: vendored libraries, then the editor.
	var scripts []string
	for _, m := range regexp.MustCompile(`<script src="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		scripts = append(scripts, html.UnescapeString(m[1]))
	}
	var want []string
	for _, name := range append(static.Vendor(".js"), "editor.js") {
		if static.Has(name) {
			want = append(want, static.URL(name))
		}
	}
	if strings.Join(scripts, " ") != strings.Join(want, " ") {
		t.Errorf("editor scripts %q, want %q", scripts, want)
	}
	checkNoInlineScript(t, "/designs/orders-windowed", page)
	// Every script and stylesheet the page names is served.
	for _, m := range regexp.MustCompile(`(?:src|href)="(/static/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		if r := ts.do("GET", html.UnescapeString(m[1]), ""); r.status != 200 {
			t.Errorf("%s: %d", m[1], r.status)
		}
	}

	r = ts.do("GET", "/designs/nope", "")
	if r.status != 404 || !strings.Contains(r.String(), `There is no design &#34;nope&#34;`) {
		t.Errorf("missing design page: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/nowhere", ""); r.status != 404 || !strings.Contains(r.String(), "<html") {
		t.Errorf("unknown page: %d %s", r.status, r.body)
	}
}

// checkNoInlineScript: the CSP allows no inline script, so pages have
// none.
func checkNoInlineScript(t *testing.T, path, page string) {
	t.Helper()
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(page) || strings.Contains(page, " onclick=") || strings.Contains(page, "javascript:") {
		t.Errorf("%s has inline script", path)
	}
}

func TestStaticFiles(t *testing.T) {
	ts := start(t, Config{})
	var names []string
	fs.WalkDir(static.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, name)
		}
		return nil
	})
	if len(names) == 0 {
		t.Skip("no static files yet")
	}
	for _, name := range names {
		r := ts.do("GET", "/static/"+name, "")
		if r.status != 200 {
			t.Errorf("/static/%s: %d", name, r.status)
			continue
		}
		ct := r.header.Get("Content-Type")
		switch {
		case strings.HasSuffix(name, ".js") && ct != "text/javascript; charset=utf-8",
			strings.HasSuffix(name, ".css") && ct != "text/css; charset=utf-8":
			t.Errorf("/static/%s: Content-Type %q", name, ct)
		}
		if r.header.Get("Cache-Control") != "no-cache" || r.header.Get("ETag") == "" {
			t.Errorf("/static/%s without ?v: Cache-Control %q ETag %q", name, r.header.Get("Cache-Control"), r.header.Get("ETag"))
		}
		checkSecurityHeaders(t, "/static/"+name, r.header)
	}
	name := names[0]
	r := ts.do("GET", static.URL(name), "")
	if r.status != 200 || !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Errorf("%s: %d, Cache-Control %q", static.URL(name), r.status, r.header.Get("Cache-Control"))
	}
	if r := ts.do("GET", "/static/"+name, "", "If-None-Match", r.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag: %d, want 304", r.status)
	}
	for _, path := range []string{"/static/static.go", "/static/", "/static/vendor", "/static/../go.mod", "/static/%2e%2e/go.mod", "/static/nope.js", "/static/vendor/../static.go"} {
		if r := ts.do("GET", path, ""); r.status != 404 {
			t.Errorf("%s: %d, want 404", path, r.status)
		}
	}
}
