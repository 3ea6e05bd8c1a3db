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
	// Flags may come after the file too.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		return fmt.Errorf("export: want one design file (or - for stdin), got %d (%q)", len(files), files)
	}
	if *revision < 0 {
		return fmt.Errorf("export: --revision %d is negative", *revision)
	}
	path := files[0]
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(exportStdin)
		path = "stdin"
	} else {
		data, err = os.ReadFile(path)
	}
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
		noun := "problems"
		if len(problems) == 1 {
			noun = "problem"
		}
		return fmt.Errorf("export: %s: %d %s:\n%s", path, len(problems), noun, strings.Join(lines, "\n"))
	}
	if err != nil {
		return fmt.Errorf("export: %s: %w", path, err)
	}
	_, err = stdout.Write(src)
	return err
}
