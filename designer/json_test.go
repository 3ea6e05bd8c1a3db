package designer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func testdataFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata designs: %v", err)
	}
	return files
}

func readDesign(t testing.TB, name string) *Design {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// Every design in testdata decodes, is valid, and is written exactly as
// Encode writes it, so that the files double as goldens of the format.
func TestTestdataDesigns(t *testing.T) {
	for _, f := range testdataFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if ps := Validate(d); len(ps) > 0 {
				t.Errorf("problems:\n%v", ps)
			}
			out, err := Encode(d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, data) {
				t.Errorf("Encode(Decode(file)) differs from the file:\n%s", out)
			}
		})
	}
}

func TestOrdersWindowed(t *testing.T) {
	d := readDesign(t, "orders-windowed.json")
	if d.ID != "orders-windowed" || d.Name != "orders-windowed" || d.Version != FormatVersion {
		t.Errorf("header: %+v", d)
	}
	var kinds []Kind
	for _, n := range d.Nodes {
		kinds = append(kinds, n.Kind)
	}
	want := []Kind{"source-stream", "filter", "group-by", "windowed-by", "count", "to-stream", "sink"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	for i := 1; i < len(d.Nodes); i++ {
		if d.Nodes[i].Position.X <= d.Nodes[i-1].Position.X {
			t.Errorf("node %s is not right of %s", d.Nodes[i].ID, d.Nodes[i-1].ID)
		}
	}
	w, _ := d.Node("window")
	if ParamString(*w, "type") != Tumbling || ParamDuration(*w, "size").String() != "10s" ||
		ParamDuration(*w, "grace").String() != "5s" || ParamString(*w, "emit") != EmitOnWindowClose {
		t.Errorf("window params %v", w.Params)
	}
	src, _ := d.Node("source")
	if ParamString(*src, "topic") != "orders" || ParamString(*src, "timestamp") != "value.ts" ||
		ParamString(*src, "keySerde") != "string" || ParamString(*src, "valueSerde") != "json" {
		t.Errorf("source params %v", src.Params)
	}
	sink, _ := d.Node("sink")
	if ParamString(*sink, "topic") != "big-orders-per-10s" || ParamString(*sink, "keySerde") != "windowed-json" ||
		ParamString(*sink, "valueSerde") != "int64" {
		t.Errorf("sink params %v", sink.Params)
	}
	c, _ := d.Node("count")
	if ParamString(*c, "store") != "big-orders-per-10s" {
		t.Errorf("count params %v", c.Params)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		line, col int
		path      string
		msg       string
	}{
		{"syntax", "{\"id\": \"x\",\n  \"name\": }", 2, 11, "", "invalid character '}'"},
		{"syntax after a multibyte character", "{\"id\": \"é\" \"name\"}", 1, 12, "", "invalid character"},
		{"unexpected end", `{"version": 1,`, 1, 15, "", "unexpected end"},
		{"empty", ``, 1, 1, "", "unexpected end"},
		{"trailing data", "{\"version\": 1}\nx", 2, 1, "", "after top-level value"},
		{"not an object", `[1, 2]`, 1, 1, "", "a design is a JSON object, not a list"},
		{"null", `null`, 1, 1, "", "a design is a JSON object, not null"},
		{"unknown field", "{\"version\": 1,\n \"nodez\": []}", 2, 2, "nodez", `unknown field "nodez"`},
		{"unknown node field", `{"version": 1, "nodes": [{"id": "a"}, {"id": "b", "params": {}, "colour": "red"}]}`, 1, 65, "nodes[1].colour", `unknown field "colour"`},
		{"field in the wrong case", `{"version": 1, "nodes": [{"ID": "a"}]}`, 1, 27, "nodes[0].ID", `unknown field "ID"`},
		{"unknown edge field", `{"version": 1, "edges": [{"from": "a", "port": "out"}]}`, 1, 40, "edges[0].port", `unknown field "port"`},
		{"unknown position field", `{"version": 1, "nodes": [{"position": {"x": 1, "z": 2}}]}`, 1, 48, "nodes[0].position.z", `unknown field "z"`},
		{"duplicate field", `{"version": 1, "name": "a", "name": "b"}`, 1, 29, "name", `field "name" given twice`},
		{"duplicate parameter", `{"version": 1, "nodes": [{"params": {"topic": "a", "topic": "b"}}]}`, 1, 52, "nodes[0].params.topic", "given twice"},
		{"version missing", `{"name": "x"}`, 0, 0, "version", "version is missing; this Braid reads version 1 (FormatVersion)"},
		{"version 2", "{\n  \"version\": 2}", 2, 14, "version", "version 2 is not supported; this Braid reads version 1 (FormatVersion)"},
		{"version 1.0", `{"version": 1.0}`, 1, 13, "version", "version 1.0 is not supported"},
		{"version a string", `{"version": "1"}`, 1, 13, "version", "version must be a number, not a string; this Braid reads version 1 (FormatVersion)"},
		{"version null", `{"version": null}`, 1, 13, "version", "not null"},
		{"id a number", `{"version": 1, "id": 7}`, 1, 22, "id", "want a string, not a number"},
		{"position a string", "{\"version\": 1, \"nodes\": [\n  {\"id\": \"a\"},\n  {\"id\": \"b\", \"position\": {\"x\": \"left\"}}]}", 3, 33, "nodes[1].position.x", "want a number, not a string"},
		{"position out of range", `{"version": 1, "nodes": [{"position": {"y": 1e999}}]}`, 1, 45, "nodes[0].position.y", "number 1e999 is out of range"},
		{"params a list", `{"version": 1, "nodes": [{}, {}, {}, {"id": "f", "params": ["x"]}]}`, 1, 60, "nodes[3].params", "want an object, not a list"},
		{"nodes an object", `{"version": 1, "nodes": {}}`, 1, 25, "nodes", "want a list, not an object"},
		{"edge a string", `{"version": 1, "edges": ["a->b"]}`, 1, 26, "edges[0]", "want an object, not a string"},
		{"nested too deeply", `{"version": 1, "nodes": [{"params": {"a": ` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}]}`, 1, 104, "nodes[0].params.a" + strings.Repeat("[0]", 61), "nested more than 64 levels deep"},
		{"edge port a bool", `{"version": 1, "edges": [{}, {"toPort": true}]}`, 1, 41, "edges[1].toPort", "want a string, not a boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("no error; got %+v", d)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T %v, want a *DecodeError", err, err)
			}
			if de.Line != tc.line || de.Column != tc.col || de.Path != tc.path || !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("got line %d, column %d, path %q, %q;\nwant line %d, column %d, path %q, %q", de.Line, de.Column, de.Path, de.Msg, tc.line, tc.col, tc.path, tc.msg)
			}
			if !strings.Contains(err.Error(), tc.msg) || (tc.path != "" && !strings.Contains(err.Error(), tc.path)) {
				t.Errorf("Error() = %q lacks the message or the path", err)
			}
		})
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := Decode([]byte("{\"version\": 1, \"nodes\": [\n{\"id\": 1}]}"))
	want := `design JSON, line 2, column 8, nodes[0].id: want a string, not a number`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestDecodeNormalizes(t *testing.T) {
	d, err := Decode([]byte(`{"version": 1, "nodes": [{"id": "a", "params": {}}, {"id": "b", "params": {"partitions": 6, "x": 1.50}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Nodes == nil || d.Edges == nil || len(d.Edges) != 0 {
		t.Errorf("nodes %v, edges %#v: want non-nil slices", d.Nodes, d.Edges)
	}
	if d.Nodes[0].Params != nil {
		t.Errorf("empty params %#v, want nil", d.Nodes[0].Params)
	}
	if got := d.Nodes[1].Params["partitions"]; got != json.Number("6") {
		t.Errorf("partitions %#v, want json.Number 6", got)
	}
	if got := d.Nodes[1].Params["x"]; got != json.Number("1.50") {
		t.Errorf("x %#v, want json.Number 1.50 as written", got)
	}
}

func TestEncode(t *testing.T) {
	d := &Design{ID: "e", Name: "e", Nodes: []Node{{ID: "f", Kind: "filter",
		Params: map[string]any{"predicate": "value.a < 3 && value.b > 2", "name": "z", "alpha": 1}}}}
	out, err := Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "id": "e",
  "name": "e",
  "version": 1,
  "nodes": [
    {
      "id": "f",
      "kind": "filter",
      "params": {
        "alpha": 1,
        "name": "z",
        "predicate": "value.a < 3 && value.b > 2"
      },
      "position": {
        "x": 0,
        "y": 0
      }
    }
  ],
  "edges": []
}
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if d.Version != 0 {
		t.Errorf("Encode changed its argument's version to %d", d.Version)
	}
	again, _ := Encode(d)
	if !bytes.Equal(out, again) {
		t.Error("Encode is not stable")
	}
	if _, err := Encode(nil); err == nil {
		t.Error("Encode(nil): no error")
	}
	if _, err := Encode(&Design{Nodes: []Node{{Params: map[string]any{"f": func() {}}}}}); err == nil {
		t.Error("Encode of a func parameter: no error")
	}
}

func FuzzDecode(f *testing.F) {
	for _, file := range testdataFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"version": 1}`, `{"version": 1, "nodes": [null, {}], "edges": null}`,
		`{"version": 1, "nodes": [{"params": {"a": [1, {"b": null}], "c": 1e5, "d": -0}}]}`,
		`{"version": 1, "nodes": [{"position": {"x": -0, "y": 1e308}}]}`,
		`{"version": 1, "name": "\u00e9\ud800"}`, `{"version": 1, "nodes": {"id": 1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			return
		}
		_ = Validate(d)
		out, err := Encode(d)
		if err != nil {
			t.Fatalf("Encode of a decoded design: %v", err)
		}
		d2, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(Encode(d)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("Decode(Encode(d)) differs:\n%#v\n%#v", d, d2)
		}
		out2, err := Encode(d2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("Encode not stable: %v\n%s\n%s", err, out, out2)
		}
	})
}
