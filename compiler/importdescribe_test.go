package compiler

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
)

// Braid's describe() goldens (which match Kafka Streams byte for byte) and
// the importer's own texts, most copied from Kafka's tests and docs (each
// file says where from). Both kinds of file hold "# " comment lines, a
// "---" line and then the text.
const (
	braidGolden = "../runtime/streams/testdata/describe/"
	importData  = "testdata/describe-import/"
)

// describeText reads the describe() text of a golden or test file.
func describeText(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if i := strings.Index(text, "\n---\n"); i >= 0 {
		text = text[i+len("\n---\n"):]
	}
	return text
}

// describeFiles lists every golden and test file.
func describeFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{braidGolden, importData} {
		fs, err := filepath.Glob(filepath.FromSlash(dir) + "*.txt")
		if err != nil || len(fs) == 0 {
			t.Fatalf("no describe() texts in %s (%v)", dir, err)
		}
		files = append(files, fs...)
	}
	return files
}

// summarize prints a design one line per node and edge, for comparison:
// "n1 source-stream name=X topic=t" (parameters in name order, branches as
// [a,b]) and "n1 -> n2" ("n3.big -> n4" from a port other than out,
// "n1 -> n5:left" into a port other than in).
func summarize(d *designer.Design) string {
	var b strings.Builder
	for _, n := range d.Nodes {
		fmt.Fprintf(&b, "%s %s", n.ID, n.Kind)
		keys := make([]string, 0, len(n.Params))
		for k := range n.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := n.Params[k].(type) {
			case []any:
				var names []string
				for _, br := range v {
					m, _ := br.(map[string]any)
					name, _ := m["name"].(string)
					names = append(names, name)
				}
				fmt.Fprintf(&b, " %s=[%s]", k, strings.Join(names, ","))
			default:
				fmt.Fprintf(&b, " %s=%v", k, v)
			}
		}
		b.WriteString("\n")
	}
	for _, e := range d.Edges {
		from := e.From
		if e.FromPort != "out" {
			from += "." + e.FromPort
		}
		to := e.To
		if e.ToPort != "in" {
			to += ":" + e.ToPort
		}
		fmt.Fprintf(&b, "%s -> %s\n", from, to)
	}
	return b.String()
}

// TestImportDescribe imports describe() texts and compares the designs'
// nodes (kinds and parameters) and edges.
func TestImportDescribe(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string
	}{
		{braidGolden + "stateless.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 filter name=KSTREAM-FILTER-0000000001
n3 map-values name=KSTREAM-MAPVALUES-0000000002
n4 sink name=KSTREAM-SINK-0000000003 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
`},
		{braidGolden + "all-stateless-ops.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 filter name=KSTREAM-FILTER-0000000001
n3 map name=KSTREAM-MAP-0000000002
n4 flat-map name=KSTREAM-FLATMAP-0000000003
n5 flat-map-values name=KSTREAM-FLATMAPVALUES-0000000004
n6 select-key name=KSTREAM-KEY-SELECT-0000000005
n7 peek name=KSTREAM-PEEK-0000000006
n8 map-values name=KSTREAM-MAPVALUES-0000000007
n9 sink name=KSTREAM-SINK-0000000008 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
n6 -> n7
n7 -> n8
n8 -> n9
`},
		{braidGolden + "named.txt", `
n1 source-stream name=orders-source topic=input
n2 opaque name=only-big
n3 opaque name=to-upper
n4 sink name=out-sink topic=output
n1 -> n2
n2 -> n3
n3 -> n4
`},
		{braidGolden + "merge.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 source-stream name=KSTREAM-SOURCE-0000000001 topic=b
n3 merge name=KSTREAM-MERGE-0000000002
n4 sink name=KSTREAM-SINK-0000000003 topic=out
n1 -> n3
n2 -> n3
n3 -> n4
`},
		{braidGolden + "multi-topic-source.txt", `
n1 source-stream topic=a
n2 source-stream topic=b
n3 merge name=KSTREAM-SOURCE-0000000000
n4 sink name=KSTREAM-SINK-0000000001 topic=out
n1 -> n3
n2 -> n3
n3 -> n4
`},
		{braidGolden + "branch.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 branch branches=[big,rest,small] name=split-
n3 sink name=KSTREAM-SINK-0000000005 topic=out-big
n4 sink name=KSTREAM-SINK-0000000006 topic=out-small
n5 sink name=KSTREAM-SINK-0000000007 topic=out-rest
n1 -> n2
n2.big -> n3
n2.small -> n4
n2.rest -> n5
`},
		{braidGolden + "repartition.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=KSTREAM-REPARTITION-0000000002
n4 filter name=KSTREAM-FILTER-0000000006
n5 sink name=KSTREAM-SINK-0000000007 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		{braidGolden + "repartition-named.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=by-customer
n4 map-values name=KSTREAM-MAPVALUES-0000000005
n5 sink name=KSTREAM-SINK-0000000006 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		{braidGolden + "two-repartitions.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=first
n4 select-key name=KSTREAM-KEY-SELECT-0000000005
n5 repartition name=second
n6 sink name=KSTREAM-SINK-0000000009 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
`},
		{braidGolden + "two-sources.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 sink name=KSTREAM-SINK-0000000001 topic=x
n3 source-stream name=KSTREAM-SOURCE-0000000002 topic=b
n4 sink name=KSTREAM-SINK-0000000003 topic=y
n1 -> n2
n3 -> n4
`},
		{braidGolden + "groupby-count.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n4 group-by-key
n5 aggregate name=KSTREAM-AGGREGATE-0000000003 store=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		{braidGolden + "groupby-windowed-reduce.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=in
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=KSTREAM-REDUCE-STATE-STORE-0000000002
n4 group-by-key
n5 reduce name=KSTREAM-REDUCE-0000000003 store=KSTREAM-REDUCE-STATE-STORE-0000000002
n6 to-stream name=KTABLE-TOSTREAM-0000000007
n7 sink name=KSTREAM-SINK-0000000008 topic=out
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
n6 -> n7
`},
		{braidGolden + "windowed-tumbling-count.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=in
n2 group-by-key
n3 aggregate name=KSTREAM-AGGREGATE-0000000002 store=KSTREAM-AGGREGATE-STATE-STORE-0000000001
n4 to-stream name=KTABLE-TOSTREAM-0000000003
n5 sink name=KSTREAM-SINK-0000000004 topic=out
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		{braidGolden + "windowed-session-count.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=in
n2 group-by-key
n3 aggregate name=KSTREAM-AGGREGATE-0000000002 store=KSTREAM-AGGREGATE-STATE-STORE-0000000001
n4 to-stream name=KTABLE-TOSTREAM-0000000003
n5 sink name=KSTREAM-SINK-0000000004 topic=out
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		{importData + "kafka-docs-tutorial-wordcount.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=streams-plaintext-input
n2 flat-map-values name=KSTREAM-FLATMAPVALUES-0000000001
n3 select-key name=KSTREAM-KEY-SELECT-0000000002
n4 repartition name=counts-store
n5 group-by-key
n6 aggregate name=KSTREAM-AGGREGATE-0000000003 store=counts-store
n7 to-stream name=KTABLE-TOSTREAM-0000000007
n8 sink name=KSTREAM-SINK-0000000008 topic=streams-wordcount-output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
n6 -> n7
n7 -> n8
`},
		{importData + "kafka-docs-naming-tabs.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 filter name=KSTREAM-FILTER-0000000001
n3 group-by-key
n4 aggregate name=KSTREAM-AGGREGATE-0000000003 store=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n5 to-stream name=KTABLE-TOSTREAM-0000000004
n6 sink name=KSTREAM-SINK-0000000005 topic=output
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
`},
		{importData + "kafka-table-groupby-count.txt", `
n1 source-table store=input-topic-STATE-STORE-0000000000 topic=input-topic
n2 group-by name=KTABLE-AGGREGATE-STATE-STORE-0000000004
n3 aggregate name=KTABLE-AGGREGATE-0000000007 store=KTABLE-AGGREGATE-STATE-STORE-0000000004
n1 -> n2
n2 -> n3
`},
		{importData + "kafka-suppress-named.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 select-key name=KSTREAM-KEY-SELECT-0000000001
n3 repartition name=counts
n4 group-by-key
n5 windowed-by emit=on-window-close
n6 aggregate name=KSTREAM-AGGREGATE-0000000002 store=counts
n7 to-stream name=KTABLE-TOSTREAM-0000000006
n8 map name=KSTREAM-MAP-0000000007
n9 sink name=KSTREAM-SINK-0000000008 topic=output-suppressed
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
n6 -> n7
n7 -> n8
n8 -> n9
`},
		{importData + "kafka-dynamic-sink.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input-topic
n2 sink name=KSTREAM-SINK-0000000001
n1 -> n2
`},
		{importData + "global-store-and-pattern.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000001 topic=customers
n2 opaque name=KTABLE-SOURCE-0000000002
n3 source-stream name=KSTREAM-SOURCE-0000000003 topic=orders-.*
n4 sink name=KSTREAM-SINK-0000000004 topic=out
n1 -> n2
n3 -> n4
`},
		{importData + "kafka-stream-stream-join.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input-topic1
n2 source-stream name=KSTREAM-SOURCE-0000000001 topic=input-topic2
n3 stream-join type=inner
n1 -> n3:left
n2 -> n3:right
`},
		{importData + "kafka-table-table-join.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=left
n2 source-stream name=KSTREAM-SOURCE-0000000003 topic=right
n3 opaque name=KSTREAM-TOTABLE-0000000001
n4 opaque name=KSTREAM-TOTABLE-0000000004
n5 table-join type=inner
n6 to-stream name=KTABLE-TOSTREAM-0000000009
n7 sink name=KSTREAM-SINK-0000000010 topic=output
n1 -> n3
n2 -> n4
n3 -> n5:left
n4 -> n5:right
n5 -> n6
n6 -> n7
`},
		{importData + "kafka-optimized-repartition.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=input
n2 map name=KSTREAM-MAP-0000000001
n3 filter name=KSTREAM-FILTER-0000000002
n4 map-values name=KSTREAM-MAPVALUES-0000000003
n5 repartition name=count-stream
n6 opaque name=KSTREAM-PROCESSOR-0000000004
n7 group-by-key
n8 aggregate name=KSTREAM-AGGREGATE-0000000007 store=KSTREAM-AGGREGATE-STATE-STORE-0000000006
n9 to-stream name=KTABLE-TOSTREAM-0000000011
n10 filter name=KSTREAM-FILTER-0000000020
n11 filter name=KSTREAM-FILTER-0000000029
n12 peek name=KSTREAM-PEEK-0000000021
n13 stream-join name=joined-stream type=inner
n14 group-by-key
n15 aggregate name=KSTREAM-AGGREGATE-0000000014 store=KSTREAM-AGGREGATE-STATE-STORE-0000000013
n16 group-by-key
n17 reduce name=KSTREAM-REDUCE-0000000023 store=KSTREAM-REDUCE-STATE-STORE-0000000022
n18 to-stream name=KTABLE-TOSTREAM-0000000018
n19 to-stream name=KTABLE-TOSTREAM-0000000027
n20 sink name=KSTREAM-SINK-0000000012 topic=outputTopic_0
n21 sink name=KSTREAM-SINK-0000000019 topic=outputTopic_1
n22 sink name=KSTREAM-SINK-0000000028 topic=outputTopic_2
n23 sink name=KSTREAM-SINK-0000000038 topic=outputTopicForJoin
n1 -> n2
n2 -> n3
n2 -> n5
n3 -> n4
n4 -> n6
n5 -> n7
n5 -> n10
n5 -> n11
n5 -> n14
n7 -> n8
n8 -> n9
n9 -> n13:right
n9 -> n20
n10 -> n12
n11 -> n13:left
n12 -> n16
n13 -> n23
n14 -> n15
n15 -> n18
n16 -> n17
n17 -> n19
n18 -> n21
n19 -> n22
`},
		{importData + "kafka-complex-merge.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=retryTopic
n2 opaque name=KSTREAM-PROCESSOR-0000000001
n3 repartition name=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n4 group-by-key
n5 windowed-by emit=on-window-close
n6 aggregate name=KSTREAM-AGGREGATE-0000000003 store=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n7 source-stream name=KSTREAM-SOURCE-0000000019 topic=internal-topic-command
n8 peek name=KSTREAM-PEEK-0000000020
n9 to-stream name=KTABLE-TOSTREAM-0000000009
n10 flat-map name=KSTREAM-FLATMAP-0000000010
n11 map-values name=KSTREAM-MAPVALUES-0000000021
n12 merge name=KSTREAM-MERGE-0000000022
n13 repartition name=KSTREAM-MERGE-0000000022
n14 source-stream name=KSTREAM-SOURCE-0000000011 topic=id-table-topic
n15 flat-map name=KSTREAM-FLATMAP-0000000012
n16 repartition name=KSTREAM-AGGREGATE-STATE-STORE-0000000014
n17 stream-table-join name=KSTREAM-LEFTJOIN-0000000026 type=left
n18 branch branches=[1,0] name=KSTREAM-BRANCH-0000000027
n19 filter name=KSTREAM-FILTER-0000000033
n20 map name=KSTREAM-MAP-0000000029
n21 peek name=KSTREAM-PEEK-0000000034
n22 map name=KSTREAM-MAP-0000000037
n23 map-values name=KSTREAM-MAPVALUES-0000000035
n24 peek name=KSTREAM-PEEK-0000000013
n25 peek name=KSTREAM-PEEK-0000000030
n26 group-by-key
n27 aggregate name=KSTREAM-AGGREGATE-0000000015 store=KSTREAM-AGGREGATE-STATE-STORE-0000000014
n28 sink name=KSTREAM-SINK-0000000031 topic=external-command
n29 sink name=KSTREAM-SINK-0000000036 topic=dlq-topic
n30 sink name=KSTREAM-SINK-0000000038 topic=retryTopic
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
n6 -> n9
n7 -> n8
n8 -> n11
n9 -> n10
n10 -> n12
n11 -> n12
n12 -> n13
n13 -> n17:stream
n14 -> n15
n15 -> n16
n16 -> n24
n17 -> n18
n18.0 -> n19
n18.1 -> n20
n18.0 -> n22
n19 -> n21
n20 -> n25
n21 -> n23
n22 -> n30
n23 -> n29
n24 -> n26
n25 -> n28
n26 -> n27
n27 -> n17:table
`},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			d, err := ImportDescribe(describeText(t, tc.file), "imported-app")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := summarize(d), strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("design:\n%s\nwant:\n%s", got, want)
			}
			checkImported(t, d)
		})
	}
}

// checkImported checks what every imported design must satisfy: nodes
// numbered n1, n2, ... of catalog kinds with declared parameters, edges
// between existing ports, distinct positions on the grid, and a JSON form
// that reads back the same.
func checkImported(t testing.TB, d *designer.Design) {
	t.Helper()
	if d.Version != designer.FormatVersion || d.Name == "" || d.Nodes == nil || d.Edges == nil {
		t.Errorf("design header: name %q, version %d, nodes nil %v, edges nil %v", d.Name, d.Version, d.Nodes == nil, d.Edges == nil)
	}
	kinds := map[string]designer.KindSpec{}
	positions := map[designer.Position]string{}
	for i, n := range d.Nodes {
		if want := fmt.Sprintf("n%d", i+1); n.ID != want {
			t.Errorf("node %d has id %q, want %q", i, n.ID, want)
		}
		k, ok := designer.KindByName(n.Kind)
		if !ok {
			t.Errorf("node %s has kind %q, not in the catalog", n.ID, n.Kind)
			continue
		}
		kinds[n.ID] = k
		for p := range n.Params {
			if !slices.ContainsFunc(k.Params, func(kp designer.Param) bool { return kp.Name == p }) {
				t.Errorf("node %s (%s) has parameter %q, which its kind does not declare", n.ID, n.Kind, p)
			}
		}
		x, y := n.Position.X, n.Position.Y
		if x < 0 || y < 0 || int(x)%importGap != 0 || int(y)%importGap != 0 || x != float64(int(x)) || y != float64(int(y)) {
			t.Errorf("node %s is at %v, off the %d px grid", n.ID, n.Position, importGap)
		}
		if other, ok := positions[n.Position]; ok {
			t.Errorf("nodes %s and %s are both at %v", other, n.ID, n.Position)
		}
		positions[n.Position] = n.ID
	}
	seen := map[designer.Edge]bool{}
	for _, e := range d.Edges {
		from, okFrom := kinds[e.From]
		to, okTo := kinds[e.To]
		if !okFrom || !okTo || e.From == e.To || seen[e] {
			t.Errorf("edge %+v: unknown node, a loop or a duplicate", e)
			continue
		}
		seen[e] = true
		if from.BranchOutputs {
			var branches []string
			for _, br := range d.Nodes[nodeIndex(e.From)].Params["branches"].([]any) {
				branches = append(branches, br.(map[string]any)["name"].(string))
			}
			if !slices.Contains(branches, e.FromPort) {
				t.Errorf("edge %+v leaves a branch that is not among %q", e, branches)
			}
		} else if !slices.ContainsFunc(from.Outputs, func(p designer.Port) bool { return p.Name == e.FromPort }) {
			t.Errorf("edge %+v leaves a port %s has not", e, from.Name)
		}
		if !slices.ContainsFunc(to.Inputs, func(p designer.Port) bool { return p.Name == e.ToPort }) {
			t.Errorf("edge %+v enters a port %s has not", e, to.Name)
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back designer.Design
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(data) {
		t.Errorf("the JSON form does not read back the same:\n%s\n%s", data, again)
	}
}

// nodeIndex is the index of node "nK".
func nodeIndex(id string) int {
	var k int
	fmt.Sscanf(id, "n%d", &k)
	return k - 1
}

// TestImportDescribeAll imports every golden and test file.
func TestImportDescribeAll(t *testing.T) {
	for _, f := range describeFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			d, err := ImportDescribe(describeText(t, f), "")
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != "imported" {
				t.Errorf("name %q, want the default %q", d.Name, "imported")
			}
			checkImported(t, d)
		})
	}
}

// TestImportDescribeWhitespace checks that line endings, indentation and
// trailing blanks do not change the design.
func TestImportDescribeWhitespace(t *testing.T) {
	for _, f := range []string{braidGolden + "groupby-count.txt", braidGolden + "branch.txt", importData + "global-store-and-pattern.txt"} {
		text := describeText(t, f)
		want, err := ImportDescribe(text, "x")
		if err != nil {
			t.Fatal(err)
		}
		var reindented []string
		for i, line := range strings.Split(text, "\n") {
			reindented = append(reindented, strings.Repeat("\t", i%3)+strings.TrimSpace(line)+strings.Repeat(" ", i%2))
		}
		for name, variant := range map[string]string{
			"CRLF":            strings.ReplaceAll(text, "\n", "\r\n"),
			"CR":              strings.ReplaceAll(text, "\n", "\r"),
			"BOM":             "\uFEFF" + text,
			"no final blank":  strings.TrimRight(text, "\n"),
			"blank lines":     strings.ReplaceAll(text, "\n", "\n\n"),
			"reindented":      strings.Join(reindented, "\n"),
			"leading newline": "\n\n" + text,
		} {
			got, err := ImportDescribe(variant, "x")
			if err != nil {
				t.Errorf("%s, %s: %v", filepath.Base(f), name, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: design\n%s\nwant\n%s", filepath.Base(f), name, summarize(got), summarize(want))
			}
		}
	}
}

// TestImportDescribeForms checks smaller variations of the format.
func TestImportDescribeForms(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"topicPattern", `Topologies:
   Sub-topology: 0
    Source: in (topicPattern: orders-\d+)
      --> out
    Sink: out (topic: all-orders)
      <-- in
`, `
n1 source-stream name=in topic=orders-\d+
n2 sink name=out topic=all-orders
n1 -> n2
`},
		{"pattern with parentheses", `Topologies:
   Sub-topology: 0
    Source: in (topics: (eu|us)-orders)
      --> out
    Sink: out (topic: all-orders)
      <-- in
`, `
n1 source-stream name=in topic=(eu|us)-orders
n2 sink name=out topic=all-orders
n1 -> n2
`},
		{"named topology, no header blank", "Topology: my-topology:\n   Sub-topology: 0\n    Source: a (topics: [x])\n      --> b\n    Sink: b (topic: y)\n      <-- a", `
n1 source-stream name=a topic=x
n2 sink name=b topic=y
n1 -> n2
`},
		{"no header, predecessors first", `Sub-topology: 0
Source: a (topics: [x])
--> KSTREAM-PEEK-0000000001
Processor: KSTREAM-PEEK-0000000001 (stores: [])
<-- a
--> b
Sink: b (topic: y)
<-- KSTREAM-PEEK-0000000001
`, `
n1 source-stream name=a topic=x
n2 peek name=KSTREAM-PEEK-0000000001
n3 sink name=b topic=y
n1 -> n2
n2 -> n3
`},
		{"empty topology", "Topologies:\n \n", ""},
		{"sink written by two processors", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-FILTER-0000000001, KSTREAM-MAPVALUES-0000000002
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000003 (topic: out)
      <-- KSTREAM-FILTER-0000000001, KSTREAM-MAPVALUES-0000000002
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 filter name=KSTREAM-FILTER-0000000001
n3 map-values name=KSTREAM-MAPVALUES-0000000002
n4 merge
n5 sink name=KSTREAM-SINK-0000000003 topic=out
n1 -> n2
n1 -> n3
n2 -> n4
n3 -> n4
n4 -> n5
`},
		// A user's filter before a sink of a topic that happens to end in
		// -repartition is numbered before the sink: it is kept.
		{"user filter before a repartition-like topic", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: x-repartition)
      <-- KSTREAM-FILTER-0000000001

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [x-repartition])
      --> KSTREAM-SINK-0000000004
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KSTREAM-SOURCE-0000000003
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 filter name=KSTREAM-FILTER-0000000001
n3 repartition name=x
n4 sink name=KSTREAM-SINK-0000000004 topic=out
n1 -> n2
n2 -> n3
n3 -> n4
`},
		// Sinks and sources with names of the user's are not a repartition.
		{"user-named sink and source", `Topologies:
   Sub-topology: 0
    Source: in (topics: [a])
      --> to-x
    Sink: to-x (topic: x-repartition)
      <-- in

  Sub-topology: 1
    Source: from-x (topics: [x-repartition])
      --> out
    Sink: out (topic: b)
      <-- from-x
`, `
n1 source-stream name=in topic=a
n2 sink name=to-x topic=x-repartition
n3 source-stream name=from-x topic=x-repartition
n4 sink name=out topic=b
n1 -> n2
n3 -> n4
`},
		// groupBy(Grouped.as("by-word")) names the key selector by-word.
		{"named groupBy key selector", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> by-word
    Processor: by-word (stores: [])
      --> by-word-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: by-word-repartition-filter (stores: [])
      --> by-word-repartition-sink
      <-- by-word
    Sink: by-word-repartition-sink (topic: by-word-repartition)
      <-- by-word-repartition-filter

  Sub-topology: 1
    Source: by-word-repartition-source (topics: [by-word-repartition])
      --> KSTREAM-REDUCE-0000000002
    Processor: KSTREAM-REDUCE-0000000002 (stores: [words])
      --> none
      <-- by-word-repartition-source
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=lines
n2 select-key name=by-word
n3 repartition name=by-word
n4 group-by-key
n5 reduce name=KSTREAM-REDUCE-0000000002 store=words
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`},
		// table(.., Consumed.as("customers")) names the source
		// customers-table-source and the table processor customers; a
		// named table aggregation names the repartition's sink and source
		// after itself.
		{"named table source and table aggregation", `Topologies:
   Sub-topology: 0
    Source: customers-table-source (topics: [customers])
      --> customers
    Processor: customers (stores: [customers-store])
      --> by-country
      <-- customers-table-source
    Processor: by-country (stores: [])
      --> per-country-sink
      <-- customers
    Sink: per-country-sink (topic: by-country-repartition)
      <-- by-country

  Sub-topology: 1
    Source: per-country-source (topics: [by-country-repartition])
      --> per-country
    Processor: per-country (stores: [per-country-store])
      --> none
      <-- per-country-source
`, `
n1 source-table name=customers store=customers-store topic=customers
n2 group-by name=by-country
n3 opaque name=per-country
n1 -> n2
n2 -> n3
`},
		{"old branch()", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-BRANCH-0000000001
    Processor: KSTREAM-BRANCH-0000000001 (stores: [])
      --> KSTREAM-BRANCHCHILD-0000000003, KSTREAM-BRANCHCHILD-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-BRANCHCHILD-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-BRANCH-0000000001
    Processor: KSTREAM-BRANCHCHILD-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-BRANCH-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: first)
      <-- KSTREAM-BRANCHCHILD-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: second)
      <-- KSTREAM-BRANCHCHILD-0000000003
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=in
n2 branch branches=[KSTREAM-BRANCHCHILD-0000000002,KSTREAM-BRANCHCHILD-0000000003] name=KSTREAM-BRANCH-0000000001
n3 sink name=KSTREAM-SINK-0000000004 topic=first
n4 sink name=KSTREAM-SINK-0000000005 topic=second
n1 -> n2
n2.KSTREAM-BRANCHCHILD-0000000002 -> n3
n2.KSTREAM-BRANCHCHILD-0000000003 -> n4
`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkImport(t, tc.text, tc.want) })
	}
}

// checkImport imports text and compares the design's summary with want
// (a leading newline aside), then checks it with checkImported.
func checkImport(t *testing.T, text, want string) {
	t.Helper()
	d, err := ImportDescribe(text, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summarize(d), strings.TrimPrefix(want, "\n"); got != want {
		t.Errorf("design:\n%s\nwant:\n%s", got, want)
	}
	checkImported(t, d)
}

// TestImportDescribeLayout checks the positions: a column per depth, a
// band of rows per sub-topology.
func TestImportDescribeLayout(t *testing.T) {
	d, err := ImportDescribe(describeText(t, braidGolden+"two-sources.txt"), "x")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range d.Nodes {
		got = append(got, fmt.Sprintf("%s@%v,%v", n.ID, n.Position.X, n.Position.Y))
	}
	if want := []string{"n1@0,0", "n2@220,0", "n3@0,220", "n4@220,220"}; !slices.Equal(got, want) {
		t.Errorf("positions %q, want %q", got, want)
	}
	d, err = ImportDescribe(describeText(t, braidGolden+"groupby-count.txt"), "x")
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, n := range d.Nodes {
		got = append(got, fmt.Sprintf("%s@%v,%v", n.ID, n.Position.X, n.Position.Y))
	}
	// The repartition belongs to sub-topology 0, what reads it to 1.
	if want := []string{"n1@0,0", "n2@220,0", "n3@440,0", "n4@660,220", "n5@880,220"}; !slices.Equal(got, want) {
		t.Errorf("positions %q, want %q", got, want)
	}
}
