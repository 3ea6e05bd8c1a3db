package compiler

import (
	"strings"
	"testing"
)

// FuzzImportDescribe feeds the importer mutated describe() texts: it must
// never panic, an error must name its line, and a design must satisfy
// checkImported.
func FuzzImportDescribe(f *testing.F) {
	for _, file := range describeFiles(f) {
		text := describeText(f, file)
		f.Add(text)
		f.Add(strings.ReplaceAll(text, "\n", "\r\n"))
	}
	f.Add("")
	f.Add("Topologies:\n   Sub-topology: 0\n    Processor: p (stores: [])\n      --> q\n      <-- q\n    Processor: q (stores: [])\n      --> p\n      <-- p\n")
	f.Add("Sub-topologies:\n  Sub-topology: 0\n    Source: a(topics: x) --> b\n    Sink: b(topic: y) <-- a\nGlobal Stores:\n  none\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ImportDescribe(text, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not start with its line", err)
			}
			return
		}
		checkImported(t, d)
	})
}
