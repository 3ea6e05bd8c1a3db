package compiler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
)

// TestImportDescribeWindowed imports windowed counts (issue 18): the
// design has a windowed-by node where the text tells a window (a suppress
// after the aggregation), whose unset size validation reports on that
// node, and a note on the node for what the text does not tell.
func TestImportDescribeWindowed(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string
		// notes are "node kind processor: a part of the message".
		notes []string
		// problems are "node param" of every problem validation reports.
		problems []string
	}{
		{importData + "kafka-windowed-count-materialized.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=clicks
n2 group-by-key
n3 aggregate name=KSTREAM-AGGREGATE-0000000003 store=KSTREAM-AGGREGATE-STATE-STORE-0000000002
n4 to-stream name=KTABLE-TOSTREAM-0000000004
n5 sink name=KSTREAM-SINK-0000000005 topic=click-counts
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
`, []string{
			"n3 aggregate KSTREAM-AGGREGATE-0000000003: if it was windowed, put a windowed-by node between n2 and n3 and set its type, size and grace",
			"n3 aggregate KSTREAM-AGGREGATE-0000000003: if it was a count, make it a count node",
		}, []string{"n3 initializer", "n3 aggregator"}},
		{importData + "kafka-windowed-count-suppress.txt", `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=clicks
n2 group-by-key
n3 windowed-by emit=on-window-close
n4 aggregate name=KSTREAM-AGGREGATE-0000000002 store=KSTREAM-AGGREGATE-STATE-STORE-0000000001
n5 to-stream name=KTABLE-TOSTREAM-0000000005
n6 sink name=KSTREAM-SINK-0000000006 topic=click-counts
n1 -> n2
n2 -> n3
n3 -> n4
n4 -> n5
n5 -> n6
`, []string{
			"n3 windowed-by KTABLE-SUPPRESS-0000000003: taken for suppress(Suppressed.untilWindowCloses(...)) after KSTREAM-AGGREGATE-0000000002: the aggregation was windowed and emits one final result per window. describe() does not print the window: set its type (tumbling unless set), size",
			"n4 aggregate KSTREAM-AGGREGATE-0000000002: if it was a count, make it a count node",
		}, []string{"n3 size", "n4 initializer", "n4 aggregator"}},
	} {
		t.Run(tc.file[strings.LastIndex(tc.file, "/")+1:], func(t *testing.T) {
			d, notes, err := ImportDescribeNotes(describeText(t, tc.file), "clicks")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := summarize(d), strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("design:\n%s\nwant:\n%s", got, want)
			}
			checkImported(t, d)
			var got []string
			for _, n := range notes {
				got = append(got, fmt.Sprintf("%s %s %s: %s", n.Node, n.Kind, n.Processor, n.Message))
			}
			joined := strings.Join(got, "\n")
			for _, want := range tc.notes {
				node, part, _ := strings.Cut(want, ": ")
				found := false
				for _, g := range got {
					if strings.HasPrefix(g, node+": ") && strings.Contains(g, part) {
						found = true
					}
				}
				if !found {
					t.Errorf("no note %q in:\n%s", want, joined)
				}
			}
			if len(got) != len(tc.notes) {
				t.Errorf("%d notes, want %d:\n%s", len(got), len(tc.notes), joined)
			}
			problems := designer.Validate(d)
			have := map[string]string{}
			for _, p := range problems {
				have[p.Node+" "+p.Param] = p.Message
			}
			for _, want := range tc.problems {
				if _, ok := have[want]; !ok {
					t.Errorf("validation reports nothing at %q:\n%v", want, problems)
				}
			}
			if m := have["n3 size"]; m != "" && m != "required for tumbling windows" {
				t.Errorf("the window's size: %q, want %q", m, "required for tumbling windows")
			}
			if len(problems) != len(tc.problems) {
				t.Errorf("%d problems, want %d:\n%v", len(problems), len(tc.problems), problems)
			}
		})
	}
}

// TestImportDescribeSuppressNotWindowed checks that a suppress that does
// not tell a window stays an opaque node: after a table's aggregation
// (never windowed), or after an aggregation that also feeds another node.
func TestImportDescribeSuppressNotWindowed(t *testing.T) {
	checkImport(t, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-SUPPRESS-0000000003, KTABLE-TOSTREAM-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-SUPPRESS-0000000003 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> none
      <-- KSTREAM-AGGREGATE-0000000002

`, `
n1 source-stream name=KSTREAM-SOURCE-0000000000 topic=in
n2 group-by-key
n3 aggregate name=KSTREAM-AGGREGATE-0000000002 store=KSTREAM-AGGREGATE-STATE-STORE-0000000001
n4 opaque name=KTABLE-SUPPRESS-0000000003
n5 to-stream name=KTABLE-TOSTREAM-0000000005
n1 -> n2
n2 -> n3
n3 -> n4
n3 -> n5
`)
	checkImport(t, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [in-STATE-STORE-0000000001])
      --> KTABLE-AGGREGATE-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-AGGREGATE-0000000004 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000003])
      --> KTABLE-SUPPRESS-0000000005
      <-- KTABLE-SOURCE-0000000002
    Processor: KTABLE-SUPPRESS-0000000005 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000006])
      --> none
      <-- KTABLE-AGGREGATE-0000000004

`, `
n1 source-table store=in-STATE-STORE-0000000001 topic=in
n2 aggregate name=KTABLE-AGGREGATE-0000000004 store=KTABLE-AGGREGATE-STATE-STORE-0000000003
n3 opaque name=KTABLE-SUPPRESS-0000000005
n1 -> n2
n2 -> n3
`)
}
