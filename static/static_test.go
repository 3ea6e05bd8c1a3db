package static

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func TestVendorOrder(t *testing.T) {
	names := []string{
		"editor.js", "vendor/x6-plugin-minimap/index.js", "vendor/x6/x6.js", "vendor/x6/x6.min.js",
		"vendor/dagre/dagre.min.js", "vendor/dagre/LICENSE", "vendor/x6/x6.esm.js", "vendor/x6/x6.css",
		"vendor/x6/x6.min.js.map", "vendor/lib.mjs", "vendor/a/b/c.js",
	}
	for _, tc := range []struct {
		ext   string
		order string
		want  []string
	}{
		{".js", "", []string{"vendor/a/b/c.js", "vendor/dagre/dagre.min.js", "vendor/x6/x6.min.js", "vendor/x6-plugin-minimap/index.js"}},
		{".css", "", []string{"vendor/x6/x6.css"}},
		{".js", "# load order\nvendor/x6/x6.js\n\nvendor/missing.js\n vendor/dagre/dagre.min.js \nvendor/x6/x6.css\n", []string{"vendor/x6/x6.js", "vendor/dagre/dagre.min.js"}},
		{".css", "vendor/x6/x6.css", []string{"vendor/x6/x6.css"}},
	} {
		var order []byte
		if tc.order != "" {
			order = []byte(tc.order)
		}
		if got := vendor(names, order, tc.ext); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("vendor(%s, order %q) = %q, want %q", tc.ext, tc.order, got, tc.want)
		}
	}
}

func TestFiles(t *testing.T) {
	err := fs.WalkDir(FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, ".go") {
			t.Errorf("%s is served", name)
		}
		if !d.IsDir() && (!Has(name) || len(Version(name)) != 12 || URL(name) != "/static/"+name+"?v="+Version(name)) {
			t.Errorf("%s: Has %v, Version %q, URL %q", name, Has(name), Version(name), URL(name))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"static.go", "static_test.go", "nope.js"} {
		if Has(name) {
			t.Errorf("Has(%q)", name)
		}
		if _, err := fs.ReadFile(FS(), name); err == nil {
			t.Errorf("FS serves %s", name)
		}
	}
	if got := URL("nope.js"); got != "/static/nope.js" {
		t.Errorf("URL of a missing file: %q", got)
	}
}
