package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/braidstream/braid/compiler"
)

// importStdin is what "braid import -" reads, and importStderr where it
// writes its notes; tests replace them.
var (
	importStdin  io.Reader = os.Stdin
	importStderr io.Writer = os.Stderr
)

// runImport is "braid import": it turns a Kafka Streams
// Topology.describe() text into a design and prints the design's JSON.
func runImport(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("import", "braid import [--name N] describe.txt > design.json\n\n"+
		"Turns the text of Kafka Streams' Topology.describe() (a file, or - for stdin) into a design\n"+
		"and prints it as JSON. Expressions are not in the text: the design's validation asks for them.\n"+
		"What the text does not tell and validation cannot ask for (whether an aggregation was windowed,\n"+
		"a count taken for an aggregate) is printed to stderr, one note a line, naming the node.", stdout)
	name := fs.String("name", "", `the design's name (default: the file's name without its extension; "imported" for stdin)`)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("import: expected one describe() text file (or - for stdin), got %d arguments", len(files))
	}
	file := files[0]
	data, path, err := readInput(file, importStdin)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if *name == "" && file != "-" {
		*name = designName(file)
	}
	d, notes, err := compiler.ImportDescribeNotes(string(data), *name)
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("import: writing the design: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(importStderr, "braid import: %s: note: %s\n", path, n)
	}
	return nil
}

// designName makes a design name of a file name: its base without the
// extension, with what Kafka forbids in names replaced by '-'.
func designName(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, base)
	if name == "" || strings.Trim(name, ".") == "" {
		return ""
	}
	return name
}
