package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
)

// exportStdin is what "braid export -" reads; tests replace it.
var exportStdin io.Reader = os.Stdin

// exportedProgramFlags is the usage of the flags an exported program
// takes, as its main defines them (compiler.DefineExportedFlags, on
// process.DefineFlags).
func exportedProgramFlags() string {
	fs := flag.NewFlagSet("program", flag.ContinueOnError)
	compiler.DefineExportedFlags(fs, "braid-<design id>")
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return strings.TrimRight(b.String(), "\n")
}

// runExport is "braid export": it writes a design as a Go program that
// builds the same topology with Braid's runtime and runs it, as one file
// or as a module that builds anywhere.
func runExport(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("export", "braid export [--revision N] design.json > main.go\n"+
		"       braid export [--revision N] -o DIR design.json\n\n"+
		"Writes the design (a file, or - for stdin) as a gofmt-ed Go program (package main) that builds\n"+
		"the same topology with github.com/braidstream/braid/runtime/streams and runs it as braid run\n"+
		"does, with its flags (below). With -o, DIR becomes a Go\n"+
		"module: main.go, go.mod, go.sum and braid/, the source of this binary's runtime, so that\n"+
		"`cd DIR && go build` works on any machine that reaches a module proxy. A design with problems\n"+
		"is refused, its problems listed.\n\n"+
		"The exported program's flags:\n"+exportedProgramFlags(), stdout)
	revision := fs.Int("revision", 0, "the design's revision, for the program's header comment (default: not known)")
	outDir := fs.String("o", "", "write a Go module into this directory (made if missing; refused if it has a go.mod or main.go)")
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
	opts := compiler.ExportOptions{Revision: *revision}
	var src []byte
	var module *compiler.Module
	if *outDir != "" {
		module, err = compiler.ExportModule(d, opts)
	} else {
		src, err = compiler.ExportGo(d, opts)
	}
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
	if module == nil {
		_, err = stdout.Write(src)
		return err
	}
	if err := module.WriteDir(*outDir); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "wrote module %s to %s: cd %s && go build\n", module.Name, *outDir, *outDir)
	return nil
}
