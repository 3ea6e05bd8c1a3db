package compiler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/braidstream/braid/designer"
)

const namesGolden = "testdata/names.golden"

// TestCompiledNamesGolden: the operator and store names Compile gives each
// node (Operators, Parts, Outputs, Stores, StoreNodes), which the live
// page credits metrics by, are those of testdata/names.golden
// for the example designs, the same designs with every node named, and
// aggregations sharing a grouping's repartition; go test -run
// TestCompiledNamesGolden -update rewrites it.
func TestCompiledNamesGolden(t *testing.T) {
	designs := namesDesigns(t)
	got := map[string]any{}
	for _, d := range designs {
		c, err := Compile(d, Options{})
		if err != nil {
			got[d.ID] = err.Error()
			continue
		}
		got[d.ID] = map[string]any{"operators": c.Operators, "parts": c.Parts, "outputs": c.Outputs,
			"stores": c.Stores, "storeNodes": c.StoreNodes}
	}
	data, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(namesGolden, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(namesGolden)
	if err != nil {
		t.Fatalf("%v (go test ./compiler -run TestCompiledNamesGolden -update writes it)", err)
	}
	if string(append(data, '\n')) != string(want) {
		t.Errorf("the names differ from %s (rerun with -update if the change is meant):\n%s", namesGolden, firstDifference(string(data)+"\n", string(want)))
	}
}

// namesDesigns are the designs of TestCompiledNamesGolden.
func namesDesigns(t *testing.T) []*designer.Design {
	files, _ := filepath.Glob("../designer/testdata/*.json")
	more, _ := filepath.Glob("testdata/compile/*.json")
	var designs []*designer.Design
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := designer.Decode(data)
		if err != nil {
			t.Fatal(f, err)
		}
		d.ID = filepath.Base(f)
		designs = append(designs, d)
	}
	designs = append(designs, sharedGroupings()...)
	for _, d := range designs[:len(designs):len(designs)] {
		designs = append(designs, everyNodeNamed(d))
	}
	return designs
}

// sharedGroupings are stream groupings, named and not, by group-by and
// group-by-key after a key change, each feeding several aggregations
// (windowed too), and a table grouping feeding two.
func sharedGroupings() []*designer.Design {
	ed := func(from, to string) designer.Edge {
		return designer.Edge{From: from, FromPort: "out", To: to, ToPort: "in"}
	}
	var designs []*designer.Design
	for _, name := range []string{"g", ""} {
		for _, kind := range []designer.Kind{designer.KindGroupBy, designer.KindGroupByKey} {
			params := map[string]any{"name": name}
			if kind == designer.KindGroupBy {
				params["key"] = "value.k"
			}
			d := design([]designer.Node{
				node("s", designer.KindSourceStream, map[string]any{"topic": "in"}),
				node("m", designer.KindSelectKey, map[string]any{"key": "value.k"}),
				node("g", kind, params),
				node("c1", designer.KindCount, nil),
				node("c2", designer.KindCount, map[string]any{"store": "x"}),
				node("a", designer.KindAggregate, map[string]any{"initializer": "0", "aggregator": "aggregate + 1"}),
				node("w", designer.KindWindowedBy, map[string]any{"type": "sliding", "size": "1m"}),
				node("wc", designer.KindCount, nil),
				node("w2", designer.KindWindowedBy, map[string]any{"type": "session", "gap": "1m"}),
				node("wc2", designer.KindCount, map[string]any{"logging": "off"}),
				node("t", designer.KindSourceTable, map[string]any{"topic": "tt"}),
				node("tg", designer.KindGroupBy, map[string]any{"key": "value.k", "name": name + name}),
				node("tc1", designer.KindCount, nil),
				node("tc2", designer.KindReduce, map[string]any{"reducer": "value", "subtractor": "value"}),
			}, ed("s", "m"), ed("m", "g"), ed("g", "c1"), ed("g", "c2"), ed("g", "a"), ed("g", "w"), ed("w", "wc"),
				ed("g", "w2"), ed("w2", "wc2"), ed("t", "tg"), ed("tg", "tc1"), ed("tg", "tc2"))
			d.ID = "shared-" + string(kind) + "-" + name
			designs = append(designs, d)
		}
	}
	return designs
}

// everyNodeNamed is a copy of d whose nodes all have a Node.Name (but
// group-by-key and windowed-by, which add no operator).
func everyNodeNamed(d *designer.Design) *designer.Design {
	data, _ := designer.Encode(d)
	c, _ := designer.Decode(data)
	c.ID = d.ID + "+named"
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Kind == designer.KindGroupByKey || n.Kind == designer.KindWindowedBy {
			continue
		}
		n.Name = "nm-" + n.ID
		if n.Kind != designer.KindGroupBy && n.Kind != designer.KindRepartition {
			delete(n.Params, "name")
		}
	}
	return c
}
