package compiler

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/braidstream/braid/designer"
)

// TestImportDescribeJoins imports describe() texts with joins: each
// join's processors make one node, its sides enter its ports, and parts of
// joins that do not make a whole one stay what they are.
func TestImportDescribeJoins(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"join-stream-stream-left.txt", describeText(t, importData+"join-stream-stream-left.txt"), `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=orders
n2 source-stream name=KSTREAM-SOURCE-0000000001 topic=payments
n3 stream-join type=left
n4 sink name=KSTREAM-SINK-0000000007 topic=paid-orders
n1 -> n3:left
n2 -> n3:right
n3 -> n4
`},
		{"join-stream-stream-named-outer.txt", describeText(t, importData+"join-stream-stream-named-outer.txt"), `
n1 source-stream name=KSTREAM-SOURCE-0000000001 topic=payments
n2 source-stream name=KSTREAM-SOURCE-0000000000 topic=orders
n3 stream-join name=pay type=outer
n4 filter name=KSTREAM-FILTER-0000000004
n5 sink name=KSTREAM-SINK-0000000005 topic=payments-matched
n1 -> n3:right
n2 -> n3:left
n3 -> n4
n4 -> n5
`},
		{"join-stream-table.txt", describeText(t, importData+"join-stream-table.txt"), `
n1 source-table store=customers-STATE-STORE-0000000000 topic=customers
n2 source-stream name=KSTREAM-SOURCE-0000000003 topic=orders
n3 stream-table-join name=KSTREAM-JOIN-0000000004 type=inner
n4 sink name=KSTREAM-SINK-0000000005 topic=enriched-orders
n1 -> n3:table
n2 -> n3:stream
n3 -> n4
`},
		{"join-stream-table-filter-materialized.txt", describeText(t, importData+"join-stream-table-filter-materialized.txt"), `
n1 source-table store=customers topic=customers
n2 filter name=KTABLE-FILTER-0000000002 store=active-customers
n3 source-stream name=KSTREAM-SOURCE-0000000003 topic=orders
n4 map-values name=KTABLE-MAPVALUES-0000000006 store=active-names
n5 stream-table-join name=KSTREAM-JOIN-0000000004 type=inner
n6 to-stream name=KTABLE-TOSTREAM-0000000007
n7 sink name=KSTREAM-SINK-0000000005 topic=active-orders
n8 sink name=KSTREAM-SINK-0000000008 topic=active-names
n1 -> n2
n2 -> n4
n2 -> n5:table
n3 -> n5:stream
n4 -> n6
n5 -> n7
n6 -> n8
`},
		{"join-table-table-left-materialized.txt", describeText(t, importData+"join-table-table-left-materialized.txt"), `
n1 source-table store=customers-STATE-STORE-0000000000 topic=customers
n2 source-table store=accounts-STATE-STORE-0000000003 topic=accounts
n3 table-join store=customer-accounts type=left
n4 to-stream name=KTABLE-TOSTREAM-0000000009
n5 sink name=KSTREAM-SINK-0000000010 topic=customer-accounts
n1 -> n3:left
n2 -> n3:right
n3 -> n4
n4 -> n5
`},
		{"join-table-table-named.txt", describeText(t, importData+"join-table-table-named.txt"), `
n1 source-table store=customers-STATE-STORE-0000000000 topic=customers
n2 source-table store=accounts-STATE-STORE-0000000003 topic=accounts
n3 table-join name=accounts-join type=inner
n4 to-stream name=KTABLE-TOSTREAM-0000000006
n5 sink name=KSTREAM-SINK-0000000007 topic=customer-accounts
n1 -> n3:left
n2 -> n3:right
n3 -> n4
n4 -> n5
`},
		// Parts of joins that do not make a whole one stay what they are.
		{"a join lookup alone", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-JOINTHIS-0000000001
    Processor: KSTREAM-JOINTHIS-0000000001 (stores: [s])
      --> KSTREAM-MERGE-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MERGE-0000000002 (stores: [])
      --> none
      <-- KSTREAM-JOINTHIS-0000000001
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 opaque name=KSTREAM-JOINTHIS-0000000001
n3 merge name=KSTREAM-MERGE-0000000002
n1 -> n2
n2 -> n3
`},
		{"a stream-table join without its table", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-LEFTJOIN-0000000001
    Processor: KSTREAM-LEFTJOIN-0000000001 (stores: [gone])
      --> none
      <-- KSTREAM-SOURCE-0000000000
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 opaque name=KSTREAM-LEFTJOIN-0000000001
n1 -> n2
`},
		{"a merge of two joins' lookups of one side", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-WINDOWED-0000000001, KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-WINDOWED-0000000001 (stores: [])
      --> KSTREAM-JOINTHIS-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [])
      --> KSTREAM-JOINTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-JOINTHIS-0000000003 (stores: [])
      --> KSTREAM-MERGE-0000000005
      <-- KSTREAM-WINDOWED-0000000001
    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [])
      --> KSTREAM-MERGE-0000000005
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-MERGE-0000000005 (stores: [])
      --> none
      <-- KSTREAM-JOINTHIS-0000000003, KSTREAM-JOINTHIS-0000000004
`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=a
n2 opaque name=KSTREAM-WINDOWED-0000000001
n3 opaque name=KSTREAM-WINDOWED-0000000002
n4 opaque name=KSTREAM-JOINTHIS-0000000003
n5 opaque name=KSTREAM-JOINTHIS-0000000004
n6 merge name=KSTREAM-MERGE-0000000005
n1 -> n2
n1 -> n3
n2 -> n4
n3 -> n5
n4 -> n6
n5 -> n6
`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkImport(t, tc.text, tc.want) })
	}
}

// TestImportDescribeJoinsValidate: an imported join is a whole node that
// validation takes as it is, but for what the text cannot tell: a
// stream-stream join's window.
func TestImportDescribeJoinsValidate(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // "node/param"
	}{
		{"join-stream-stream-left.txt", []string{"n3/window"}},
		{"join-stream-stream-named-outer.txt", []string{"n3/window", "n4/predicate"}},
		{"join-stream-table.txt", nil},
		{"join-stream-table-filter-materialized.txt", []string{"n2/predicate", "n4/value"}},
		{"join-table-table-left-materialized.txt", nil},
		{"join-table-table-named.txt", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, err := ImportDescribe(describeText(t, importData+tc.file), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range designer.Validate(d) {
				got = append(got, p.Node+"/"+p.Param)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems at %q, want %q:\n%v", got, tc.want, designer.Validate(d))
			}
		})
	}
}

// TestImportDescribeDerivedTableCompiles: a stream-table join of a table
// filter with a store, imported and given the expressions the text cannot
// tell, compiles to the topology the text describes: the filter and the
// map-values keep their stores.
func TestImportDescribeDerivedTableCompiles(t *testing.T) {
	text := describeText(t, importData+"join-stream-table-filter-materialized.txt")
	d, err := ImportDescribe(text, "")
	if err != nil {
		t.Fatal(err)
	}
	mustNode(d, "n2").Params["predicate"] = `value.status == "active"`
	mustNode(d, "n4").Params["value"] = "value.name"
	c, err := Compile(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Topology.Describe(); got != text {
		t.Errorf("the imported design describes\n%s\nthe text\n%s", got, text)
	}
	if c.Stores["n2"] != "active-customers" || c.Stores["n4"] != "active-names" {
		t.Errorf("stores %v, want n2's active-customers and n4's active-names", c.Stores)
	}
}

// TestImportDescribeRuntimeJoins: the runtime's describe() goldens of
// joins, which Kafka Streams prints alike, import with one join node of
// the right kind each and nothing opaque.
func TestImportDescribeRuntimeJoins(t *testing.T) {
	files, err := filepath.Glob(filepath.FromSlash(braidGolden) + "*join*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no join goldens in %s (%v)", braidGolden, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			d, err := ImportDescribe(describeText(t, f), "")
			if err != nil {
				t.Fatal(err)
			}
			var joins []designer.Kind
			for _, n := range d.Nodes {
				switch n.Kind {
				case "opaque":
					t.Errorf("node %s is opaque: %v", n.ID, n.Params)
				case "stream-join", "stream-table-join", "table-join":
					joins = append(joins, n.Kind)
				}
			}
			if len(joins) != 1 {
				t.Errorf("join nodes %q, want one", joins)
			}
		})
	}
}
