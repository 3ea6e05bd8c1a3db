package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// exportStdin is what "braid export -" reads; tests replace it.
var exportStdin io.Reader = os.Stdin

// runExport is "braid export": it writes a design as a Go program that
// builds the same topology with Braid's runtime and runs it.
func runExport(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("export", "braid export [--revision N] design.json > main.go\n\n"+
		"Writes the design (a file, or - for stdin) as a gofmt-ed Go program (package main) that builds\n"+
		"the same topology with github.com/braidstream/braid/runtime/streams and runs it; its flags are\n"+
		"--brokers, --state-dir, --app-id, --commit-interval and --describe. A design with problems is\n"+
		"refused, its problems listed.", stdout)
	revision := fs.Int("revision", 0, "the design's revision, for the program's header comment (default: not known)")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("export: want one design file (or - for stdin), got %d (%q)", len(files), files)
	}
	path := files[0]
	if *revision < 0 {
		return fmt.Errorf("export: --revision %d is negative", *revision)
	}
	data, path, err := readInput(path, exportStdin)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		return fmt.Errorf("export: %s: %w", path, err)
	}
	src, err := compiler.ExportGo(d, compiler.ExportOptions{Revision: *revision})
	var problems designer.Problems
	if errors.As(err, &problems) {
		// stdout is the program's file: the problems go with the error.
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = "  " + problemLine(p)
		}
		return fmt.Errorf("export: %s: %s:\n%s", path, countNoun(len(problems), "problem"), strings.Join(lines, "\n"))
	}
	if err != nil {
		return fmt.Errorf("export: %s: %w", path, err)
	}
	_, err = stdout.Write(src)
	return err
}
