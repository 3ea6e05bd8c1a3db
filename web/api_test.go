package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// apiCase is one request of a table and what its answer must be.
type apiCase struct {
	name         string
	method, path string
	body         string
	headers      []string
	status       int
	// contains are substrings the answer's body must hold.
	contains []string
	// check, if set, looks at the answer further.
	check func(t *testing.T, r *response)
}

func runCases(t *testing.T, ts *testServer, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(tc.method, tc.path, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("%s %s: status %d, want %d; body: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
			if r.status != http.StatusNoContent && r.status < 300 && tc.method != http.MethodHead {
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
			}
			if r.status >= 400 {
				r.apiErr(t)
			}
			for _, s := range tc.contains {
				if !strings.Contains(string(r.body), s) {
					t.Errorf("answer lacks %q: %s", s, r.body)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// wantError checks an error answer's message, position and path.
func wantError(msg string, line, col int, path string) func(t *testing.T, r *response) {
	return func(t *testing.T, r *response) {
		t.Helper()
		e := r.apiErr(t)
		if !strings.Contains(e.Error, msg) {
			t.Errorf("error %q, want it to contain %q", e.Error, msg)
		}
		if e.Line != line || e.Column != col || e.Path != path {
			t.Errorf("error at %d:%d %q, want %d:%d %q (%s)", e.Line, e.Column, e.Path, line, col, path, e.Error)
		}
	}
}

// wantProblem checks a 422 answer (or a validate answer) holds a problem
// on node and param whose message contains msg.
func wantProblem(node, param, msg string) func(t *testing.T, r *response) {
	return func(t *testing.T, r *response) {
		t.Helper()
		var a struct {
			Problems []map[string]string `json:"problems"`
		}
		r.decode(t, &a)
		for _, p := range a.Problems {
			for _, k := range []string{"node", "kind", "param", "message"} {
				if _, ok := p[k]; !ok {
					t.Errorf("problem %v lacks %q", p, k)
				}
			}
			if p["node"] == node && p["param"] == param && strings.Contains(p["message"], msg) {
				return
			}
		}
		t.Errorf("no problem on node %q, param %q containing %q in %s", node, param, msg, r.body)
	}
}

// withParam returns the JSON of design with one parameter of one node set.
func withParam(t *testing.T, design, node, param string, value any) string {
	t.Helper()
	d, err := designer.Decode([]byte(design))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := d.Node(node)
	if !ok {
		t.Fatalf("no node %q", node)
	}
	n.Params[param] = value
	data, err := designer.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCatalogAPI(t *testing.T) {
	ts := start(t, Config{})
	r := ts.do("GET", "/api/catalog", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var a struct {
		Kinds  []designer.KindSpec `json:"kinds"`
		Groups []string            `json:"groups"`
		Serdes []string            `json:"serdes"`
		Roles  map[string][]string `json:"roles"`
	}
	r.decode(t, &a)
	if len(a.Kinds) != len(designer.Catalog()) || len(a.Kinds) == 0 {
		t.Errorf("%d kinds, want the catalog's %d", len(a.Kinds), len(designer.Catalog()))
	}
	if !reflect.DeepEqual(a.Groups, designer.Groups) || !reflect.DeepEqual(a.Serdes, designer.Serdes) {
		t.Errorf("groups %v serdes %v", a.Groups, a.Serdes)
	}
	if got := a.Roles["predicate"]; !reflect.DeepEqual(got, []string{"key", "value", "timestamp", "headers"}) {
		t.Errorf("predicate variables %v", got)
	}
	if got, ok := a.Roles["initializer"]; !ok || len(got) != 0 {
		t.Errorf("initializer variables %v (present %v), want an empty list", got, ok)
	}
	// Every role a catalog parameter uses is listed.
	for _, k := range a.Kinds {
		for _, p := range k.Params {
			if p.Expr != "" {
				if _, ok := a.Roles[string(p.Expr)]; !ok {
					t.Errorf("kind %s param %s: role %q not in roles", k.Name, p.Name, p.Expr)
				}
			}
		}
	}
}

// TestDesignsAPI walks the designs endpoints through their answers, in
// order: the table shares one store.
func TestDesignsAPI(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	var created designAnswer
	putBad := `{"message": "m", "design": {"version": 1, "nodes": [{"id": "a", "kind": "filter", "colour": 1}]}}`
	putBadLine, putBadCol := lineColumnOf(t, putBad, `"colour"`)
	putBad2 := "{\n  \"message\": \"m\",\n  \"design\": {\"version\": 1,\n    \"nodes\": [{\"id\": \"a\", \"position\": {\"x\": \"left\"}}]}}"
	putBad2Line, putBad2Col := lineColumnOf(t, putBad2, `"left"`)
	importBadCol := strings.Index(`{"version": 1, "nodes": 3}`, "3") + 1

	runCases(t, ts, []apiCase{
		{name: "list empty", method: "GET", path: "/api/designs", status: 200, check: func(t *testing.T, r *response) {
			if strings.TrimSpace(r.String()) != "[]" {
				t.Errorf("want [], got %s", r.body)
			}
		}},
		{name: "create from {}", method: "POST", path: "/api/designs", body: `{}`, status: 201, check: func(t *testing.T, r *response) {
			r.decode(t, &created)
			d := created.Design
			if d == nil || d.ID == "" || d.Name != "untitled" || d.Version != designer.FormatVersion || d.Nodes == nil || d.Edges == nil {
				t.Errorf("created %+v", d)
			}
			if created.Revision.Number != 1 || created.Revision.Message != "created" {
				t.Errorf("revision %+v", created.Revision)
			}
			if !strings.Contains(r.String(), `"nodes":[]`) {
				t.Errorf("nodes not an empty list: %s", r.body)
			}
		}},
		{name: "create without a body", method: "POST", path: "/api/designs", status: 201, contains: []string{`"name":"untitled"`}},
		{name: "create named, id ignored", method: "POST", path: "/api/designs", body: `{"id": "mine", "name": "orders"}`, status: 201, check: func(t *testing.T, r *response) {
			var a designAnswer
			r.decode(t, &a)
			if a.Design.Name != "orders" || !regexp.MustCompile(`^orders(-[0-9]+)?$`).MatchString(a.Design.ID) {
				t.Errorf("created %+v; want the name kept and an id of it, orders or orders-N", a.Design)
			}
		}},
		{name: "create with a syntax error", method: "POST", path: "/api/designs", body: "{\n  \"name\": }", status: 400,
			check: wantError("invalid character '}'", 2, 11, "")},
		{name: "create with an unknown field", method: "POST", path: "/api/designs", body: `{"nodes": [{"id": "a", "colour": 1}]}`, status: 400,
			check: wantError(`unknown field "colour"`, 1, 24, "nodes[0].colour")},
		{name: "create with another version", method: "POST", path: "/api/designs", body: `{"version": 7}`, status: 400,
			check: wantError("version 7 is not supported", 1, 13, "version")},
		{name: "create with null", method: "POST", path: "/api/designs", body: `null`, status: 400, contains: []string{"must hold a design"}},
		{name: "create with an invalid name", method: "POST", path: "/api/designs", body: `{"name": "--"}`, status: 400, contains: []string{`\"name\" must hold a letter or a digit`}},
		{name: "import", method: "POST", path: "/api/designs/import", body: orders, status: 201, check: func(t *testing.T, r *response) {
			var a designAnswer
			r.decode(t, &a)
			if a.Design.ID != "orders-windowed" || len(a.Design.Nodes) != 7 || a.Revision.Message != "imported" {
				t.Errorf("imported %+v %+v", a.Design, a.Revision)
			}
		}},
		{name: "import again gets a new id", method: "POST", path: "/api/designs/import", body: orders, status: 201, check: func(t *testing.T, r *response) {
			var a designAnswer
			r.decode(t, &a)
			if a.Design.ID == "orders-windowed" || a.Design.ID == "" {
				t.Errorf("second import has id %q", a.Design.ID)
			}
		}},
		{name: "import needs a version", method: "POST", path: "/api/designs/import", body: `{"name": "x"}`, status: 400,
			check: wantError("version is missing", 0, 0, "version")},
		{name: "import with a wrong type", method: "POST", path: "/api/designs/import", body: `{"version": 1, "nodes": 3}`, status: 400,
			check: wantError("want a list, not a number", 1, importBadCol, "nodes")},
		{name: "list", method: "GET", path: "/api/designs", status: 200, check: func(t *testing.T, r *response) {
			var list []designer.Summary
			r.decode(t, &list)
			if len(list) != 5 {
				t.Fatalf("%d designs, want 5: %s", len(list), r.body)
			}
			for i := 1; i < len(list); i++ {
				if list[i].Updated.After(list[i-1].Updated) {
					t.Errorf("list not most recently updated first: %s", r.body)
				}
			}
		}},
		{name: "get", method: "GET", path: "/api/designs/orders-windowed", status: 200, contains: []string{`"id":"orders-windowed"`, `"predicate":"value.amount >= 50"`, `"number":1`}},
		{name: "get missing", method: "GET", path: "/api/designs/nope", status: 404, contains: []string{`design \"nope\" not found`}},
		{name: "get invalid id", method: "GET", path: "/api/designs/..", status: 404},
		{name: "save", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": ` + withParam(t, orders, "filter", "predicate", "value.amount >= 60") + `, "message": "raise the bar"}`,
			status: 200, check: func(t *testing.T, r *response) {
				var a revisionAnswer
				r.decode(t, &a)
				if a.Revision.Number != 2 || a.Revision.Message != "raise the bar" {
					t.Errorf("revision %+v", a.Revision)
				}
				if strings.Contains(r.String(), `"design"`) {
					t.Errorf("save answer carries the design: %s", r.body)
				}
			}},
		{name: "save with the base revision", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": ` + orders + `, "baseRevision": 2}`,
			status: 200, contains: []string{`"number":3`}},
		{name: "save from a stale revision", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": ` + orders + `, "baseRevision": 2}`,
			status: 409, contains: []string{"revision 3 was saved after revision 2"}},
		{name: "save without an id takes the address's", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": {"name": "n", "nodes": []}}`,
			status: 200, contains: []string{`"number":4`}},
		{name: "save another id", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": {"id": "other", "version": 1}}`,
			status: 400, contains: []string{`the design's id \"other\" is not \"orders-windowed\"`}},
		{name: "save a missing design", method: "PUT", path: "/api/designs/nope", body: `{"design": {"version": 1}}`, status: 404},
		{name: "save without a design", method: "PUT", path: "/api/designs/orders-windowed", body: `{"message": "m"}`, status: 400,
			contains: []string{`field \"design\" must hold a design`}},
		{name: "save with an unknown field", method: "PUT", path: "/api/designs/orders-windowed", body: `{"design": {}, "mesage": "m"}`, status: 400,
			check: wantError(`unknown field "mesage"`, 0, 0, "")},
		{name: "save with a bad design, positions in the body", method: "PUT", path: "/api/designs/orders-windowed", body: putBad, status: 400,
			check: wantError(`unknown field "colour"`, putBadLine, putBadCol, "design.nodes[0].colour")},
		{name: "save with a bad design on a later line", method: "PUT", path: "/api/designs/orders-windowed", body: putBad2, status: 400,
			check: wantError("want a number, not a string", putBad2Line, putBad2Col, "design.nodes[0].position.x")},
		{name: "save with a syntax error", method: "PUT", path: "/api/designs/orders-windowed", body: "{\"design\": {,}}", status: 400,
			check: wantError("invalid character ','", 1, 13, "")},
		{name: "rename", method: "POST", path: "/api/designs/orders-windowed/rename", body: `{"name": "big orders"}`, status: 200,
			contains: []string{`"number":5`, `renamed from \"n\" to \"big orders\"`}},
		{name: "rename to blank", method: "POST", path: "/api/designs/orders-windowed/rename", body: `{"name": "  "}`, status: 400, contains: []string{"name"}},
		{name: "rename without a name", method: "POST", path: "/api/designs/orders-windowed/rename", body: `{}`, status: 400},
		{name: "rename to a name with a line break", method: "POST", path: "/api/designs/orders-windowed/rename", body: `{"name": "big\norders"}`, status: 400, contains: []string{"control character"}},
		{name: "rename missing", method: "POST", path: "/api/designs/nope/rename", body: `{"name": "x"}`, status: 404},
		{name: "revisions", method: "GET", path: "/api/designs/orders-windowed/revisions", status: 200, check: func(t *testing.T, r *response) {
			var revs []designer.Revision
			r.decode(t, &revs)
			if len(revs) != 5 || revs[0].Number != 1 || revs[4].Number != 5 || revs[0].Message != "imported" {
				t.Errorf("revisions %+v", revs)
			}
		}},
		{name: "revisions of a missing design", method: "GET", path: "/api/designs/nope/revisions", status: 404},
		{name: "revision 2", method: "GET", path: "/api/designs/orders-windowed/revisions/2", status: 200,
			contains: []string{`"predicate":"value.amount >= 60"`, `"number":2`, `"message":"raise the bar"`}},
		{name: "revision 99", method: "GET", path: "/api/designs/orders-windowed/revisions/99", status: 404, contains: []string{"has no revision 99"}},
		{name: "revision x", method: "GET", path: "/api/designs/orders-windowed/revisions/x", status: 400},
		{name: "revision 0", method: "GET", path: "/api/designs/orders-windowed/revisions/0", status: 400},
		{name: "export", method: "GET", path: "/api/designs/orders-windowed/export.json", status: 200, check: func(t *testing.T, r *response) {
			if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename=big-orders.json` {
				t.Errorf("Content-Disposition %q", cd)
			}
			d, err := designer.Decode(r.body)
			if err != nil || d.Name != "big orders" {
				t.Errorf("exported %v, %v", d, err)
			}
		}},
		{name: "export an older revision", method: "GET", path: "/api/designs/orders-windowed/export.json?revision=1", status: 200, check: func(t *testing.T, r *response) {
			if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename=orders-windowed.json` {
				t.Errorf("Content-Disposition %q", cd)
			}
			if r.String() != orders {
				t.Errorf("revision 1 exported as\n%s\nwant the imported file\n%s", r.body, orders)
			}
		}},
		{name: "export missing", method: "GET", path: "/api/designs/nope/export.json", status: 404},
		{name: "delete", method: "DELETE", path: "/api/designs/orders-windowed", status: 204},
		{name: "get deleted", method: "GET", path: "/api/designs/orders-windowed", status: 404},
		{name: "delete again", method: "DELETE", path: "/api/designs/orders-windowed", status: 404},
		{name: "unknown endpoint", method: "GET", path: "/api/nothing", status: 404, contains: []string{"no such API endpoint"}},
	})
}

func TestValidateAPI(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	runCases(t, ts, []apiCase{
		{name: "valid", method: "POST", path: "/api/validate", body: orders, status: 200, check: func(t *testing.T, r *response) {
			if got := strings.TrimSpace(r.String()); got != `{"problems":[]}` {
				t.Errorf("got %s, want no problems", got)
			}
		}},
		{name: "expression syntax", method: "POST", path: "/api/validate", body: withParam(t, orders, "filter", "predicate", "value.amount >="), status: 200,
			check: wantProblem("filter", "predicate", "unexpected token")},
		{name: "predicate gives a number", method: "POST", path: "/api/validate", body: withParam(t, orders, "filter", "predicate", "value.amount + 1"), status: 200,
			check: wantProblem("filter", "predicate", "expected a bool (true or false), but it gives a number")},
		{name: "expression type", method: "POST", path: "/api/validate", body: withParam(t, orders, "window", "grace", "soon"), status: 200,
			check: wantProblem("window", "grace", "")},
		{name: "unconnected", method: "POST", path: "/api/validate", body: `{"nodes": [{"id": "f", "kind": "filter", "params": {"predicate": "true"}}]}`, status: 200,
			check: wantProblem("f", "", "")},
		{name: "empty design", method: "POST", path: "/api/validate", body: `{}`, status: 200, contains: []string{`"problems":[{`}},
		{name: "not JSON", method: "POST", path: "/api/validate", body: `{"nodes": [}`, status: 400, check: wantError("invalid character", 1, 12, "")},
		{name: "a list", method: "POST", path: "/api/validate", body: `[]`, status: 400, contains: []string{"a design is a JSON object"}},
	})
}

func TestExpressionAPI(t *testing.T) {
	ts := start(t, Config{})
	check := func(ok bool, line, col int, msg string) func(t *testing.T, r *response) {
		return func(t *testing.T, r *response) {
			var a struct {
				OK    bool `json:"ok"`
				Error *struct {
					Line    int    `json:"line"`
					Column  int    `json:"column"`
					Message string `json:"message"`
				} `json:"error"`
			}
			r.decode(t, &a)
			if a.OK != ok {
				t.Fatalf("ok %v, want %v: %s", a.OK, ok, r.body)
			}
			if ok {
				if a.Error != nil {
					t.Errorf("ok with an error: %s", r.body)
				}
				return
			}
			if a.Error == nil || a.Error.Line != line || a.Error.Column != col || !strings.Contains(a.Error.Message, msg) {
				t.Errorf("error %s, want %d:%d %q", r.body, line, col, msg)
			}
		}
	}
	runCases(t, ts, []apiCase{
		{name: "predicate", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "value.amount >= 50"}`, status: 200, check: check(true, 0, 0, "")},
		{name: "syntax", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "value.amount >= "}`, status: 200, check: check(false, 1, 16, "unexpected token")},
		{name: "unknown name", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "valu.amount > 1"}`, status: 200, check: check(false, 1, 1, "unknown name valu")},
		{name: "second line", method: "POST", path: "/api/expression", body: `{"role": "key", "source": "let x = 1;\nx +"}`, status: 200, check: check(false, 2, 3, "unexpected token EOF")},
		{name: "not a bool", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "'yes'"}`, status: 200, check: check(false, 0, 0, "bool")},
		{name: "aggregate in an aggregator", method: "POST", path: "/api/expression", body: `{"role": "aggregator", "source": "aggregate + value.amount"}`, status: 200, check: check(true, 0, 0, "")},
		{name: "aggregate in a predicate", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "aggregate > 1"}`, status: 200, check: check(false, 1, 1, "unknown name aggregate")},
		{name: "empty", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": " "}`, status: 200, check: check(false, 0, 0, "empty")},
		{name: "unknown role", method: "POST", path: "/api/expression", body: `{"role": "guess", "source": "1"}`, status: 400, contains: []string{`unknown expression role \"guess\"`}},
		{name: "no source", method: "POST", path: "/api/expression", body: `{"role": "predicate"}`, status: 400},
		{name: "source a number", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": 1}`, status: 400, check: wantError("want string, not number", 1, 33, "source")},
		// expr-lang's parser would overflow the stack on these, which
		// ends the process: they are refused unparsed, and the server
		// answers the next request.
		{name: "1.2 MB nested", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "` + strings.Repeat("(", 600000) + "true" + strings.Repeat(")", 600000) + `"}`, status: 422, contains: []string{"1200004 bytes long; at most 16384"}},
		{name: "nested too deep", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "` + strings.Repeat("[", 101) + "1" + strings.Repeat("]", 101) + ` != nil"}`, status: 422, contains: []string{"nested more than 100 deep (1:101)"}},
		{name: "brackets in strings do not nest", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "'` + strings.Repeat("(", 200) + `' != ''"}`, status: 200, check: check(true, 0, 0, "")},
		{name: "still serving", method: "POST", path: "/api/expression", body: `{"role": "predicate", "source": "value.amount >= 50"}`, status: 200, check: check(true, 0, 0, "")},
	})
}

// TestDeepExpressionInADesign saves a design whose predicate would
// overflow expr-lang's parser, then validates it: the problem is on the
// node's predicate, and the server keeps serving.
func TestDeepExpressionInADesign(t *testing.T) {
	ts := start(t, Config{})
	deep := strings.Repeat("(", 600000) + "true" + strings.Repeat(")", 600000)
	design := withParam(t, readTestdata(t, "orders-windowed.json"), "filter", "predicate", deep)
	if r := ts.do("POST", "/api/designs/import", design); r.status != 201 {
		t.Fatalf("saving the design: %d %.300s", r.status, r.body)
	}
	r := ts.do("POST", "/api/validate", design)
	if r.status != 200 || !strings.Contains(r.String(), `"node":"filter"`) || !strings.Contains(r.String(), "bytes long") {
		t.Fatalf("validating the design: %d %.500s", r.status, r.body)
	}
	if r := ts.do("GET", "/api/designs/orders-windowed", ""); r.status != 200 {
		t.Fatalf("the server stopped answering: %d", r.status)
	}
}

func TestCompileAPI(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	runCases(t, ts, []apiCase{
		{name: "windowed", method: "POST", path: "/api/compile", body: orders, status: 200, check: func(t *testing.T, r *response) {
			var a compileAnswer
			r.decode(t, &a)
			d, _ := designer.Decode([]byte(orders))
			c, err := compiler.Compile(d, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if a.Describe != c.Topology.Describe() || a.AppID != designer.ApplicationID(d) {
				t.Errorf("describe %q app %q", a.Describe, a.AppID)
			}
			want := []subtopologyAnswer{
				{ID: 0, Nodes: []string{"source", "filter", "group", "window", "count"}},
				{ID: 1, Nodes: []string{"count", "to-stream", "sink"}},
			}
			if !reflect.DeepEqual(a.Subtopologies, want) {
				t.Errorf("subtopologies %+v, want %+v", a.Subtopologies, want)
			}
			if n := a.Nodes["count"]; n.Operator != "KSTREAM-AGGREGATE-0000000003" || !reflect.DeepEqual(n.Subtopologies, []int{0, 1}) || len(n.Parts) != 4 {
				t.Errorf("count node %+v", n)
			}
			if n := a.Nodes["window"]; n.Operator != "" || !reflect.DeepEqual(n.Subtopologies, []int{0}) || n.Parts == nil {
				t.Errorf("window node %+v", n)
			}
			if len(a.Topics) != 2 || a.Topics[0].Name != designer.ApplicationID(d)+"-big-orders-per-10s-repartition" || a.Topics[0].Kind != "repartition" ||
				a.Topics[1].Kind != "changelog" || a.Topics[1].CleanupPolicy != "compact,delete" || a.Topics[1].Retention == "" || a.Topics[1].Store != "big-orders-per-10s" ||
				!reflect.DeepEqual(a.Topics[0].PartitionsOf, []string{"orders"}) {
				t.Errorf("topics %+v", a.Topics)
			}
			wantStore := storeAnswer{Name: "big-orders-per-10s", Node: "count", Type: "window", Processor: "KSTREAM-AGGREGATE-0000000003", Subtopology: 1,
				Logged: true, Cached: true, Retention: "15s", RetentionMs: 15000, Grace: "5s", GraceMs: 5000, Emit: "on-window-close"}
			if len(a.Stores) != 1 || a.Stores[0] != wantStore {
				t.Errorf("stores %+v, want %+v", a.Stores, wantStore)
			}
			if !reflect.DeepEqual(a.SourceTopics, []string{"orders"}) || !reflect.DeepEqual(a.SinkTopics, []string{"big-orders-per-10s"}) {
				t.Errorf("source topics %v, sink topics %v", a.SourceTopics, a.SinkTopics)
			}
		}},
		{name: "app id", method: "POST", path: "/api/compile?appId=prod", body: orders, status: 200, contains: []string{`"appId":"prod"`, `"prod-big-orders-per-10s-changelog"`}},
		{name: "problems", method: "POST", path: "/api/compile", body: withParam(t, orders, "filter", "predicate", "value.amount >="), status: 422,
			contains: []string{`"error":"1 problem in the design"`}, check: wantProblem("filter", "predicate", "unexpected token")},
		{name: "not a design", method: "POST", path: "/api/compile", body: `{"nodes": {}}`, status: 400, check: wantError("want a list", 1, 11, "nodes")},
	})
	// Every testdata design compiles through the API as it does directly.
	for _, name := range []string{"click-sessions.json", "credit-per-country.json", "payments-branches.json"} {
		body := readTestdata(t, name)
		d, err := designer.Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, cerr := compiler.Compile(d, compiler.Options{})
		r := ts.do("POST", "/api/compile", body)
		if (cerr == nil) != (r.status == 200) || (cerr != nil && r.status != 422) {
			t.Errorf("%s: status %d, Compile: %v", name, r.status, cerr)
			continue
		}
		if r.status == 200 {
			var a compileAnswer
			r.decode(t, &a)
			seen := map[string]bool{}
			for _, st := range a.Subtopologies {
				for _, n := range st.Nodes {
					seen[n] = true
				}
			}
			for _, n := range d.Nodes {
				if !seen[n.ID] {
					t.Errorf("%s: node %s in no sub-topology: %+v", name, n.ID, a.Subtopologies)
				}
			}
		}
	}
}

func TestPreviewAPI(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	const t0 = 1_700_000_000_000
	sample := func(customer string, amount float64, ts int64) compiler.Sample {
		return compiler.Sample{Topic: "orders", Key: "o", Value: map[string]any{"customer": customer, "amount": amount, "ts": ts}, Timestamp: 1}
	}
	samples := mustJSON(t, []compiler.Sample{
		sample("ann", 60, t0+1000), sample("bob", 10, t0+2000), sample("ann", 70, t0+9000),
		sample("bob", 80, t0+12000), sample("ann", 90, t0+15000), sample("ann", 55, t0+3000),
	})
	runCases(t, ts, []apiCase{
		{name: "windowed", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `, "samples": ` + samples + `}`, status: 200, check: func(t *testing.T, r *response) {
			var p compiler.Preview
			r.decode(t, &p)
			if len(p.Nodes["filter"]["out"]) != 5 || len(p.Windows) != 1 || len(p.Late) != 1 || p.Late[0].Sample != 5 {
				t.Errorf("preview %s", r.body)
			}
			got := mustJSON(t, p.Sinks["big-orders-per-10s"])
			if want := `[{"key":{"end":1700000010000,"key":"ann","start":1700000000000},"value":2,"timestamp":1700000009000}]`; got != want {
				t.Errorf("sink %s, want %s", got, want)
			}
		}},
		{name: "partitions", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `, "samples": ` + samples + `, "partitions": {"orders": 3}}`, status: 200,
			contains: []string{`"streamTime":{`}},
		{name: "no samples", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `}`, status: 200, contains: []string{`"sinks":{`}},
		{name: "bad sample topic", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `, "samples": [{"topic": "other", "value": 1}]}`, status: 200,
			contains: []string{`no source of the design reads topic \"other\"`}},
		{name: "problems", method: "POST", path: "/api/preview", body: `{"design": ` + withParam(t, orders, "group", "key", "valu.customer") + `, "samples": []}`, status: 422,
			check: wantProblem("group", "key", "unknown name valu")},
		{name: "bad partitions", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `, "partitions": {"orders": 0}}`, status: 400, contains: []string{"partitions of topic"}},
		{name: "samples not a list", method: "POST", path: "/api/preview", body: `{"design": ` + orders + `, "samples": {}}`, status: 400, check: func(t *testing.T, r *response) {
			if e := r.apiErr(t); e.Path != "samples" {
				t.Errorf("path %q, want samples", e.Path)
			}
		}},
		{name: "no design", method: "POST", path: "/api/preview", body: `{"samples": []}`, status: 400, contains: []string{"must hold a design"}},
	})
}

func TestImportDescribeAPI(t *testing.T) {
	ts := start(t, Config{})
	// The compiler's test file: a comment, "---", then the text.
	_, windowedDescribe, _ := strings.Cut(readTestdata(t, "../../compiler/testdata/describe-import/kafka-windowed-count-suppress.txt"), "\n---\n")
	text := "Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n      --> KSTREAM-FILTER-0000000001\n" +
		"    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n      --> KSTREAM-SINK-0000000002\n      <-- KSTREAM-SOURCE-0000000000\n" +
		"    Sink: KSTREAM-SINK-0000000002 (topic: output)\n      <-- KSTREAM-FILTER-0000000001\n\n"
	runCases(t, ts, []apiCase{
		{name: "import", method: "POST", path: "/api/import/describe", body: mustJSON(t, map[string]string{"text": text, "name": "wordcount"}), status: 200, check: func(t *testing.T, r *response) {
			var a struct {
				Design *designer.Design `json:"design"`
			}
			r.decode(t, &a)
			if a.Design == nil || a.Design.Name != "wordcount" || len(a.Design.Nodes) != 3 {
				t.Fatalf("design %s", r.body)
			}
			// What it answers is a design the API takes back.
			if res := ts.do("POST", "/api/designs", mustJSON(t, a.Design)); res.status != 201 {
				t.Errorf("saving the imported design: %d %s", res.status, res.body)
			}
			if list, _ := ts.store.List(); len(list) != 1 {
				t.Errorf("store holds %d designs, want the one saved (import does not save)", len(list))
			}
		}},
		{name: "default name", method: "POST", path: "/api/import/describe", body: mustJSON(t, map[string]string{"text": text}), status: 200, contains: []string{`"name":"imported"`}},
		{name: "notes", method: "POST", path: "/api/import/describe", body: mustJSON(t, map[string]string{"text": windowedDescribe}), status: 200, check: func(t *testing.T, r *response) {
			var a struct {
				Notes []compiler.ImportNote `json:"notes"`
			}
			r.decode(t, &a)
			var windowed bool
			for _, n := range a.Notes {
				windowed = windowed || n.Kind == "windowed-by" && n.Node != "" && strings.Contains(n.Message, "window")
			}
			if !windowed {
				t.Errorf("no note on the windowed-by node the suppress became: %s", r.body)
			}
		}},
		{name: "no notes", method: "POST", path: "/api/import/describe", body: mustJSON(t, map[string]string{"text": text}), status: 200, contains: []string{`"notes":[]`}},
		{name: "bad line", method: "POST", path: "/api/import/describe", body: mustJSON(t, map[string]string{"text": "Topologies:\n   Sub-topology: 0\n    Frobnicator: x\n"}), status: 400,
			check: func(t *testing.T, r *response) {
				e := r.apiErr(t)
				if e.Line != 3 || !strings.Contains(e.Error, "line 3") {
					t.Errorf("error %+v, want line 3", e)
				}
			}},
		{name: "no text", method: "POST", path: "/api/import/describe", body: `{"name": "x"}`, status: 400, contains: []string{`\"text\" is required`}},
	})
}

// TestConcurrentSaves: saves from many clients each get their own
// revision number.
func TestConcurrentSaves(t *testing.T) {
	ts := start(t, Config{})
	orders := readTestdata(t, "orders-windowed.json")
	if r := ts.do("POST", "/api/designs/import", orders); r.status != 201 {
		t.Fatal(r.status, r.String())
	}
	const n = 16
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			body := fmt.Sprintf(`{"design": %s, "message": "save %d"}`, orders, i)
			req, _ := http.NewRequest("PUT", ts.base+"/api/designs/orders-windowed", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			res, err := ts.client.Do(req)
			if err == nil {
				res.Body.Close()
				if res.StatusCode != 200 {
					err = fmt.Errorf("status %d", res.StatusCode)
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	revs, err := ts.store.Revisions("orders-windowed")
	if err != nil {
		t.Fatal(err)
	}
	nums := make([]int, len(revs))
	for i, r := range revs {
		nums[i] = r.Number
	}
	if len(revs) != n+1 || !slices.IsSorted(nums) || nums[n] != n+1 {
		t.Errorf("revisions %v, want 1..%d", nums, n+1)
	}
}

// TestDesignSizeLimit: a design over designer.MaxNodes (or MaxEdges) is
// a 400 answer naming the limit wherever the API takes a design, and the
// catalog tells the editor the limits.
func TestDesignSizeLimit(t *testing.T) {
	ts := start(t, Config{})
	r := ts.do("POST", "/api/designs", `{"name": "big"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: status %d: %s", r.status, r.body)
	}
	var created designAnswer
	r.decode(t, &created)
	id := created.Design.ID

	design := func(nodes, edges int) string {
		d := &designer.Design{ID: id, Name: "big", Version: designer.FormatVersion}
		for i := range nodes {
			d.Nodes = append(d.Nodes, designer.Node{ID: fmt.Sprintf("n%d", i), Kind: "sink", Params: map[string]any{"topic": "t"}})
		}
		for range edges {
			d.Edges = append(d.Edges, designer.Edge{From: "n0", FromPort: "out", To: "n1", ToPort: "in"})
		}
		data, err := designer.Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	nodes := design(5000, 0)
	edges := design(2, designer.MaxEdges+1)
	const tooMany = "the design has 5000 nodes; at most 1000 are supported"
	refused := func(msg, param string) func(t *testing.T, r *response) {
		return func(t *testing.T, r *response) {
			t.Helper()
			wantError(msg, 0, 0, "")(t, r)
			wantProblem("", param, msg)(t, r)
		}
	}
	runCases(t, ts, []apiCase{
		{name: "catalog", method: "GET", path: "/api/catalog", status: 200,
			contains: []string{fmt.Sprintf(`"limits":{"edges":%d,"nodes":%d}`, designer.MaxEdges, designer.MaxNodes)}},
		{name: "validate", method: "POST", path: "/api/validate", body: nodes, status: 400, check: refused(tooMany, "nodes")},
		{name: "validate edges", method: "POST", path: "/api/validate", body: edges, status: 400, check: refused("the design has 2001 edges; at most 2000 are supported", "edges")},
		{name: "import", method: "POST", path: "/api/designs/import", body: nodes, status: 400, check: refused(tooMany, "nodes")},
		{name: "create", method: "POST", path: "/api/designs", body: nodes, status: 400, check: refused(tooMany, "nodes")},
		{name: "save", method: "PUT", path: "/api/designs/" + id, body: `{"message": "big", "design": ` + nodes + `}`, status: 400, check: refused(tooMany, "nodes")},
		{name: "compile", method: "POST", path: "/api/compile", body: nodes, status: 400, check: refused(tooMany, "nodes")},
		{name: "at the limit", method: "PUT", path: "/api/designs/" + id, body: `{"message": "at the limit", "design": ` + design(designer.MaxNodes, 0) + `}`, status: 200},
	})
}
