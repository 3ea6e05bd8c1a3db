package compiler

import (
	"strings"
	"testing"
)

// TestImportDescribeErrors checks that malformed texts give an error with
// the line and what was expected there.
func TestImportDescribeErrors(t *testing.T) {
	const head = "Topologies:\n   Sub-topology: 0\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "", `line 1: expected "Topologies:", found an empty text`},
		{"blank", " \n\t\n", `line 1: expected "Topologies:", found an empty text`},
		{"not a description", "hello\n", `line 1: expected "Topologies:" at the start of a describe() text, found "hello"`},
		{"node before sub-topology", "Topologies:\n    Source: a (topics: [x])\n      --> none\n",
			`line 2: expected "Sub-topology: N" before the first node, found "Source: a (topics: [x])"`},
		{"arrow first", "Topologies:\n   Sub-topology: 0\n      --> b\n", `line 3: expected a Source, Processor or Sink line before "--> b"`},
		{"bad sub-topology", "Topologies:\n   Sub-topology: zero\n", `line 2: expected a number after "Sub-topology:", found "zero"`},
		{"sub-topology tail", "Topologies:\n   Sub-topology: 0 and more\n", `line 2: expected the end of the line or "for global store" after "Sub-topology: 0", found "and more"`},
		{"second header", "Topologies:\nTopologies:\n", `line 2: a second header "Topologies:"`},
		{"unknown line", head + "    Source: a (topics: [x])\n      --> none\n    Something: b\n",
			`line 5: expected "Sub-topology: N", "Source: ", "Processor: ", "Sink: ", "--> " or "<-- ", found "Something: b"`},
		{"source without topics", head + "    Source: a [x]\n", `line 3: expected "(topics: [...])" after the source's name, found "Source: a [x]"`},
		{"processor without stores", head + "    Processor: p\n", `line 3: expected "(stores: [...])" after the processor's name`},
		{"sink without topic", head + "    Sink: s (topics: [x])\n", `line 3: expected "(topic: ...)" or "(extractor class: ...)" after the sink's name`},
		{"no name", head + "    Source:  (topics: [x])\n", `line 3: expected a name after "Source:"`},
		{"unclosed", head + "    Source: a (topics: [x]\n", `line 3: expected "(topics:" to end with ")"`},
		{"empty sink topic", head + "    Sink: s (topic: )\n", `line 3: expected a topic after "(topic:"`},
		{"source without successors", head + "    Source: a (topics: [x])\n    Sink: b (topic: y)\n      <-- a\n",
			`line 4: expected "--> " after source "a", found "Sink: b (topic: y)"`},
		{"processor without arrows", head +
			"    Source: a (topics: [x])\n" +
			"      --> p\n" +
			"    Processor: p (stores: [])\n" +
			"    Sink: b (topic: y)\n" +
			"      <-- p\n",
			`line 6: expected "--> " or "<-- " after a node line (processor "p"), found "Sink: b (topic: y)"`},
		{"processor without predecessors", head +
			"    Source: a (topics: [x])\n" +
			"      --> p\n" +
			"    Processor: p (stores: [])\n" +
			"      --> none\n",
			`line 7: expected "<-- " after processor "p", found the end of the text`},
		{"sink without predecessors at the end", head + "    Sink: b (topic: y)", `line 4: expected "<-- " after sink "b", found the end of the text`},
		{"sink with successors", head + "    Sink: b (topic: y)\n      --> a\n", `line 4: sink "b" has no successors: expected no "-->" line`},
		{"source with predecessors", head + "    Source: a (topics: [x])\n      <-- b\n", `line 4: source "a" has no predecessors: expected no "<--" line`},
		{"two successor lines", head + "    Source: a (topics: [x])\n      --> none\n      --> none\n", `line 5: a second "-->" line for source "a" (the first is on line 4)`},
		{"two predecessor lines", head + "    Sink: b (topic: y)\n      <-- none\n      <-- none\n", `line 5: a second "<--" line for sink "b" (the first is on line 4)`},
		{"empty list", head + "    Source: a (topics: [x])\n      -->\n", `line 4: expected node names or "none" after "-->"`},
		{"empty name", head + "    Source: a (topics: [x])\n      --> b, , c\n", `line 4: expected a node name between the commas after "-->"`},
		{"duplicate", head + "    Source: a (topics: [x])\n      --> none\n    Source: a (topics: [y])\n      --> none\n", `line 5: source "a" is already defined on line 3`},
		{"unknown successor", head + "    Source: a (topics: [x])\n      --> b\n", `line 4: source "a" lists "b" after "-->", but there is no node of that name`},
		{"unknown predecessor", head + "    Sink: b (topic: y)\n      <-- a\n", `line 4: sink "b" lists "a" after "<--", but there is no node of that name`},
		{"successor is a source", head + "    Source: a (topics: [x])\n      --> c\n    Source: c (topics: [y])\n      --> none\n",
			`line 4: source "a" lists source "c" after "-->", but a source has no predecessors`},
		{"predecessor is a sink", head + "    Sink: b (topic: y)\n      <-- c\n    Sink: c (topic: z)\n      <-- none\n",
			`line 4: sink "b" lists sink "c" after "<--", but a sink has no successors`},
		{"disagreement", head +
			"    Source: a (topics: [x])\n" +
			"      --> b\n" +
			"    Source: c (topics: [y])\n" +
			"      --> b\n" +
			"    Sink: b (topic: z)\n" +
			"      <-- a\n",
			`line 6: source "c" lists "b" after "-->", but sink "b" (line 7) does not list "c" after "<--"`},
		{"disagreement the other way", head +
			"    Source: a (topics: [x])\n" +
			"      --> none\n" +
			"    Sink: b (topic: z)\n" +
			"      <-- a\n",
			`line 6: sink "b" lists "a" after "<--", but source "a" (line 3) does not list "b" after "-->"`},
		{"cycle", head +
			"    Processor: p (stores: [])\n" +
			"      --> q\n" +
			"      <-- q\n" +
			"    Processor: q (stores: [])\n" +
			"      --> p\n" +
			"      <-- p\n",
			`line 7: processor "q" and "p" are in a cycle: a topology has none`},
		{"windows line endings keep line numbers", strings.ReplaceAll(head+"    Source: a (topics: [x])\n    Sink: b (topic: y)\n", "\n", "\r\n"),
			`line 4: expected "--> " after source "a", found "Sink: b (topic: y)"`},
		{"not UTF-8", head + "    Source: a (topics: [\xff])\n", `line 3: expected UTF-8 text, found "    Source: a (topics: [\xff])"`},
		{"long line shortened", head + "    " + strings.Repeat("x", 200) + "\n", `found "xxxxxxxx`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ImportDescribe(tc.text, "x")
			if err == nil {
				t.Fatalf("no error; design:\n%s", summarize(d))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("error %q does not start with its line", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}
