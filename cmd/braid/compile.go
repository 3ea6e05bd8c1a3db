package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// runCompile compiles a design file and prints what running it would
// create: the topology as Kafka Streams' describe() shows it, the
// internal topics and the state stores. A design with problems gets them
// listed, one a line, and an error.
func runCompile(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("compile", "braid compile [--app-id ID] design.json", stdout)
	appID := fs.String("app-id", "", "application id that prefixes internal topic names (default: braid-<design id>, the one braid run, exported programs and the editor use)")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fmt.Errorf("compile: want one design file, got %d (%q)", len(files), files)
	}
	path := files[0]
	data, path, err := readInput(path, os.Stdin)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	d, err := designer.Decode(data)
	if err != nil {
		return fmt.Errorf("compile: %s: %w", path, err)
	}
	c, err := compiler.Compile(d, compiler.Options{})
	var problems designer.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stdout, problemLine(p))
		}
		return fmt.Errorf("compile: %s: %s", path, countNoun(len(problems), "problem"))
	}
	if err != nil {
		return fmt.Errorf("compile: %s: %w", path, err)
	}
	id := *appID
	if id == "" {
		id = designer.ApplicationID(d)
	}
	printCompiled(stdout, c.Topology, id)
	return nil
}

// problemLine formats a problem as `node <id> (<kind>) <param>: <message>`,
// or `design <param>: <message>` for the design's own.
func problemLine(p designer.Problem) string {
	var b strings.Builder
	if p.Node == "" && p.Kind == "" {
		b.WriteString("design")
	} else {
		fmt.Fprintf(&b, "node %s (%s)", p.Node, p.Kind)
	}
	if p.Param != "" {
		b.WriteString(" " + p.Param)
	}
	b.WriteString(": " + p.Message)
	return b.String()
}

// printCompiled writes the describe() text, then the internal topics and
// the stores of topo as tables.
func printCompiled(w io.Writer, topo *streams.Topology, appID string) {
	fmt.Fprint(w, topo.Describe())

	topics := topo.InternalTopics(appID)
	fmt.Fprintf(w, "Internal topics (application id %s):", appID)
	if len(topics) == 0 {
		fmt.Fprintln(w, " none")
	} else {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tKIND\tPARTITIONS\tCLEANUP POLICY\tRETENTION\tSTORE")
		for _, t := range topics {
			partitions := strconv.Itoa(t.Partitions)
			if t.Partitions == 0 {
				partitions = "as " + strings.Join(t.PartitionsOf, ", ")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Kind, partitions, t.CleanupPolicy, duration(t.Retention), dash(t.Store))
		}
		tw.Flush()
	}

	stores := topo.Stores()
	fmt.Fprint(w, "\nStores:")
	if len(stores) == 0 {
		fmt.Fprintln(w, " none")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tTYPE\tPROCESSOR\tSUB-TOPOLOGY\tLOGGED\tCACHED\tRETENTION\tGRACE\tEMIT")
	for _, s := range stores {
		emit := "-"
		if s.Type != "key-value" {
			emit = streams.EmitOnWindowUpdate.String()
			if s.EmitOnClose {
				emit = streams.EmitOnWindowClose.String()
			}
		}
		grace := "-"
		if s.Type != "key-value" {
			grace = s.Grace.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Type, s.Processor, s.Subtopology,
			yesNo(s.Logged), yesNo(s.Cached), duration(s.Retention), grace, emit)
	}
	tw.Flush()
}

func duration(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
