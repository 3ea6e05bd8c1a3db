package compiler

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"

	"github.com/braidstream/braid/designer"
)

// ExportOptions adjust ExportGo.
type ExportOptions struct {
	// Revision is the stored revision of the design, for the header
	// comment of the program; 0 when it is not known (a design file).
	Revision int
}

// runtimeSource holds the helpers an exported program may need; see
// export_runtime.go.
//
//go:embed export_runtime.go
var runtimeSource string

// streamsPath is the import path of the runtime API exported programs use.
const streamsPath = "github.com/braidstream/braid/runtime/streams"

// processPath is the import path of the runtime's process of a design,
// which exported programs run as braid run does.
const processPath = "github.com/braidstream/braid/runtime/process"

// ExportGo writes d as a Go program: a gofmt-ed package main that builds
// the same topology with the runtime API (github.com/braidstream/braid/
// runtime/streams), making the DSL calls Compile makes, in the same order,
// with the same names and options, so that its Describe is Compile's, and
// runs it as braid run does, with a process.Process of the runtime
// (github.com/braidstream/braid/runtime/process): its instances report on
// the telemetry topic and obey the signed commands of the control topic.
// Its flags are braid run's (process.DefineFlags), with the same defaults
// (--app-id: designer.ApplicationID), and --describe, which prints the
// topology and exits. The design file is in the program, for the
// reports.
//
// An expression within the subset export_expr.go lists becomes Go code
// computing what expr-lang computes (values, their types and failures
// alike); any other is compiled by the program with expr-lang at start-up,
// as Compile compiles it. A design with problems gives them as
// designer.Problems.
//
// Nothing of the design reaches the program but through strconv.Quote:
// identifiers are made from node positions, comments quote what they
// show.
func ExportGo(d *designer.Design, opts ExportOptions) ([]byte, error) {
	compiled, err := Compile(d, Options{})
	if err != nil {
		return nil, err
	}
	x := newExporter(d, compiled, opts)
	if err := x.build(); err != nil {
		return nil, fmt.Errorf("exporting design %q: %w", d.ID, err)
	}
	src, err := x.file()
	if err != nil {
		return nil, fmt.Errorf("exporting design %q: %w", d.ID, err)
	}
	return src, nil
}

// exporter writes one program.
type exporter struct {
	d        *designer.Design
	compiled *Compiled
	opts     ExportOptions
	outs     map[int]map[string]*xval
	// setup compiles the expressions left to expr-lang; body makes the
	// DSL calls; funcs are the expressions written as Go.
	setup, body, funcs strings.Builder
	funcNames          map[string]bool
	// exprCode is the Go function value of each expression declared, by
	// its name (exprArg.name).
	exprCode map[string]string
	l        *lowering
	w        *wiring
}

func newExporter(d *designer.Design, compiled *Compiled, opts ExportOptions) *exporter {
	c := &compilation{d: d}
	return &exporter{d: d, compiled: compiled, opts: opts, outs: map[int]map[string]*xval{},
		funcNames: map[string]bool{}, exprCode: map[string]string{}, l: &lowering{c: c}, w: c.wiring()}
}

// chain is a Go expression made of a receiver and method calls, each part
// with the comment of the node that adds it.
type chain struct {
	parts []chainPart
}

type chainPart struct {
	comment, code string
}

func root(code string) *chain { return &chain{parts: []chainPart{{code: code}}} }

// then returns c with the method call code of a node appended.
func (c *chain) then(comment, code string) *chain {
	parts := append(append([]chainPart(nil), c.parts...), chainPart{comment: comment, code: code})
	return &chain{parts: parts}
}

// statement writes c as a statement, assigned to variable unless it is "".
func (c *chain) statement(variable string) string {
	var above []string
	if c.parts[0].comment != "" {
		above = append(above, c.parts[0].comment)
	}
	text := c.parts[0].code
	rest := c.parts[1:]
	if c.parts[0].comment == "" && len(rest) > 0 {
		above = append(above, rest[0].comment)
		text += "." + rest[0].code
		rest = rest[1:]
	}
	for _, p := range rest {
		text += ".\n// " + p.comment + "\n" + p.code
	}
	var b strings.Builder
	for _, line := range above {
		b.WriteString("// " + line + "\n")
	}
	if variable != "" {
		b.WriteString(variable + " := ")
	}
	b.WriteString(text + "\n")
	return b.String()
}

// expression returns c as an operand: its variable, or the whole chain.
func (c *chain) expression() string {
	if len(c.parts) == 1 {
		return c.parts[0].code
	}
	return strings.TrimSuffix(c.statement(""), "\n")
}

// quote is strconv.Quote: every string of the design enters the program
// through it.
func quote(s string) string { return strconv.Quote(s) }

// commentText quotes s for a comment: one line, and nothing that could end
// a comment.
func commentText(s string) string {
	return strings.ReplaceAll(quote(s), "*/", `*\/`)
}

// variable is the name of the Go variable of node i's output.
func variable(i int) string { return "n" + strconv.Itoa(i+1) }

func (x *exporter) nodeComment(i int) string {
	n := x.d.Nodes[i]
	return fmt.Sprintf("node %s (%s)", commentText(n.ID), n.Kind) // Compile knows the kind
}

// exportName makes a catalog parameter name a part of a Go identifier.
func exportName(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if upper && r >= 'a' && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
}

// fallbackMethod is the method of the program's expression type that
// evaluates an expression of role in an operator of kind.
func fallbackMethod(kind designer.Kind, role designer.ExprRole) string {
	switch role {
	case designer.Predicate:
		return "test"
	case designer.TimestampExtractor:
		return "timestamp"
	case designer.FlatMapper:
		return "flatMap"
	case designer.ValuesMapper:
		return "flatMapValues"
	case designer.Initializer:
		return "initialize"
	case designer.Aggregator:
		return "aggregate"
	case designer.Reducer:
		return "reduce"
	case designer.SessionMerger:
		return "merge"
	case designer.Joiner:
		return "join"
	}
	if kind == designer.KindMapValues {
		return "mapValue"
	}
	return "mapRecord"
}

// signature is the result list of the Go function of an expression of
// role, its first result named "_" when named is set.
func signature(role designer.ExprRole, named bool) string {
	var first string
	switch role {
	case designer.Predicate:
		first = "bool"
	case designer.TimestampExtractor:
		first = "int64"
	case designer.FlatMapper:
		first = "[]streams.KeyValue"
	case designer.ValuesMapper:
		first = "[]any"
	default:
		first = "any"
	}
	if named {
		return "(_ " + first + ", err error)"
	}
	return "(" + first + ", error)"
}

// exprSource writes node i's expression source of role as a Go function
// named after the node and suffix, or as an expr-lang expression compiled
// at start-up, and returns the Go function value. what says which of the
// node's expressions it is, for the function's comment.
func (x *exporter) exprSource(i int, suffix, what string, role designer.ExprRole, src string) (string, error) {
	n := x.d.Nodes[i]
	name := variable(i) + suffix
	if x.funcNames[name] {
		return "", fmt.Errorf("two expressions named %s", name)
	}
	x.funcNames[name] = true
	f, err := translateExpr(n.Kind, role, src)
	if err != nil {
		fmt.Fprintf(&x.setup, "%s, err := compileExpression(%s, %s, %s)\nif err != nil {\nreturn nil, err\n}\n", name, quote(n.ID), quote(string(role)), quote(src))
		return name + "." + fallbackMethod(n.Kind, role), nil
	}
	x.funcs.WriteString("\n// " + name + " computes " + what + " of node " + commentText(n.ID) + ": " + commentText(src) + ".\n")
	x.funcs.WriteString(f.declaration(name, n.ID, role, src))
	return name, nil
}

// declaration writes f as the function name, computing the expression
// source of role of node.
func (f *goFunc) declaration(name, node string, role designer.ExprRole, source string) string {
	params := strings.Join(f.params, ", ")
	switch {
	case role == designer.TimestampExtractor:
		params = f.params[0] + ", " + f.params[1] + " any, " + f.params[2] + " int64"
	case len(f.params) > 0:
		params += " any"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "func %s(%s) %s {\n", name, params, signature(role, f.fails))
	if f.fails {
		fmt.Fprintf(&b, "defer catch(&err, %s, %s, %s)\n", quote(node), quote(string(role)), quote(source))
	}
	b.WriteString(f.body + "}\n")
	return b.String()
}

// file assembles the program.
func (x *exporter) file() ([]byte, error) {
	var b strings.Builder
	x.header(&b)
	b.WriteString("package main\n\n")
	if err := x.mainFunc(&b); err != nil {
		return nil, err
	}
	b.WriteString("\n// buildTopology makes the runtime's DSL calls for the nodes of the design.\n")
	b.WriteString("func buildTopology() (*streams.Topology, error) {\n")
	b.WriteString(x.setup.String())
	b.WriteString("b := streams.NewBuilder()\n")
	b.WriteString(x.body.String())
	b.WriteString("return b.Build()\n}\n")
	b.WriteString(x.funcs.String())
	own := b.String()

	helpers, err := x.helpers(own)
	if err != nil {
		return nil, err
	}
	src := own + helpers
	src, err = addImports(src)
	if err != nil {
		return nil, err
	}
	out, err := format.Source([]byte(src))
	if err != nil {
		return nil, fmt.Errorf("formatting the program: %w\n%s", err, src)
	}
	return out, nil
}

func (x *exporter) header(b *strings.Builder) {
	rev := "an unsaved revision"
	if x.opts.Revision > 0 {
		rev = "revision " + strconv.Itoa(x.opts.Revision)
	}
	fmt.Fprintf(b, "// This program runs Braid design %s (id %s, %s): it builds the\n", commentText(x.d.Name), commentText(x.d.ID), rev)
	b.WriteString("// design's topology with Braid's runtime (" + streamsPath + ")\n")
	b.WriteString("// and runs it as `braid run` does, with the runtime's process package\n")
	b.WriteString("// (" + processPath + "): it creates the missing sink topics,\n")
	b.WriteString("// waits for the source topics, runs --instances instances of the\n")
	b.WriteString("// application, exits with the error of one that fails, and stops them\n")
	b.WriteString("// gracefully on SIGINT or SIGTERM. Its instances report to the telemetry\n")
	b.WriteString("// topic, for braid serve to show, and carry out the crash, stop and start\n")
	b.WriteString("// commands signed with the control secret. Its flags are braid run's, with\n")
	b.WriteString("// the same defaults (the same --app-id: this program and braid run\n")
	b.WriteString("// processes of the design join one group).\n//\n")
	b.WriteString("// It was generated by `braid export`.\n//\n")
	b.WriteString("// Usage:\n//\n")
	b.WriteString("//\tgo run . [--brokers host:port,...] [--app-id ID] [--instance-id ID] [--instances N]\n")
	b.WriteString("//\t\t[--state-dir DIR] [--guarantee at-least-once|exactly-once] [--standbys N]\n")
	b.WriteString("//\t\t[--session-timeout D] [--commit-interval D] [--static-membership] [--replication-factor N]\n")
	b.WriteString("//\t\t[--telemetry-topic T] [--control-topic T] [--control-secret-file F]\n")
	b.WriteString("//\t\t[--client-config client.properties] [--describe]\n")
	b.WriteString("//\n")
	b.WriteString("// A cluster that needs TLS or SASL takes Kafka's client properties in\n")
	b.WriteString("// --client-config (or $BRAID_CLIENT_CONFIG, and BRAID_KAFKA_<PROPERTY>\n")
	b.WriteString("// variables); see " + clientconfigPath + ".\n")
}

// mainFunc writes main: braid run's flags, which the runtime defines for
// both (process.DefineFlags), and a process.Process, which does what
// braid run does with them; and the design, for the reports.
// clientconfigPath is the package of --client-config, named in the
// exported program's doc comment.
const clientconfigPath = "github.com/braidstream/braid/runtime/clientconfig"

func (x *exporter) mainFunc(b *strings.Builder) error {
	fmt.Fprintf(b, `func main() {
// braid run's flags, from the runtime, which defines them for both.
// braid run's log format, from the runtime too.
slog.SetDefault(process.Logger(os.Stderr))
flags := process.DefineFlags(flag.CommandLine, %s, %q)
describe := flag.Bool("describe", false, %q)
flag.Parse()

topology, err := buildTopology()
if err != nil {
log.Fatal(err)
}
if *describe {
fmt.Print(topology.Describe())
return
}
cfg, err := flags.Config()
if err != nil {
log.Fatal(err)
}
cfg.Runner.Out = os.Stdout
cfg.Design = design
proc, err := process.New(topology, cfg)
if err != nil {
log.Fatal(err)
}
// Interrupt or terminate: commit what was processed, leave the group, exit.
ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
err = proc.Run(ctx)
stop()
if err != nil {
log.Fatal(err)
}
}
`, quote(designer.ApplicationID(x.d)), exportAppIDUsage, exportDescribeUsage)
	file, err := designer.Encode(x.d)
	if err != nil {
		return err
	}
	b.WriteString("\n// design is what this program runs, as its reports name it; braid serve\n")
	b.WriteString("// draws the application's live page from its file, the design as braid\n")
	b.WriteString("// export read it.\n")
	fmt.Fprintf(b, "var design = process.Design{ID: %s, Name: %s, Revision: %d, File: []byte(strings.Join([]string{\n",
		quote(x.d.ID), quote(x.d.Name), x.opts.Revision)
	for _, line := range strings.Split(strings.TrimSuffix(string(file), "\n"), "\n") {
		b.WriteString(quote(line) + ",\n")
	}
	b.WriteString("}, \"\\n\"))}\n")
	return nil
}

// helperDecl is a declaration of export_runtime.go.
type helperDecl struct {
	// name is the declared name; for a method, recv is its receiver type.
	name, recv string
	src        string
	// idents are the names it uses, sels the selectors.
	idents, sels map[string]bool
}

// helpers returns the declarations of export_runtime.go that code uses,
// directly or through one another, in the file's order.
func (x *exporter) helpers(code string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "export_runtime.go", runtimeSource, parser.ParseComments)
	if err != nil {
		return "", err
	}
	var decls []*helperDecl
	for _, d := range f.Decls {
		h := &helperDecl{idents: map[string]bool{}, sels: map[string]bool{}}
		switch d := d.(type) {
		case *ast.FuncDecl:
			h.name = d.Name.Name
			if d.Recv != nil {
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				h.recv = t.(*ast.Ident).Name
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			switch s := d.Specs[0].(type) {
			case *ast.TypeSpec:
				h.name = s.Name.Name
			case *ast.ValueSpec:
				h.name = s.Names[0].Name
			}
		}
		usedNames(d, h.idents, h.sels)
		start := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		}
		h.src = runtimeSource[fset.Position(start).Offset:fset.Position(d.End()).Offset]
		decls = append(decls, h)
	}

	own, err := parser.ParseFile(token.NewFileSet(), "main.go", code, 0)
	if err != nil {
		return "", fmt.Errorf("parsing the program: %w\n%s", err, code)
	}
	idents, sels := map[string]bool{}, map[string]bool{}
	usedNames(own, idents, sels)
	used := make([]bool, len(decls))
	for changed := true; changed; {
		changed = false
		for j, h := range decls {
			if used[j] {
				continue
			}
			if h.recv == "" && idents[h.name] || h.recv != "" && idents[h.recv] && sels[h.name] {
				used[j], changed = true, true
				for n := range h.idents {
					idents[n] = true
				}
				for n := range h.sels {
					sels[n] = true
				}
			}
		}
	}
	var b strings.Builder
	for j, h := range decls {
		if used[j] {
			b.WriteString("\n" + h.src + "\n")
		}
	}
	return b.String(), nil
}

// usedNames collects the identifiers node uses, selectors apart.
func usedNames(node ast.Node, idents, sels map[string]bool) {
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel.Name] = true
			usedNames(n.X, idents, sels)
			return false
		case *ast.Ident:
			idents[n.Name] = true
		}
		return true
	})
}

// packages are the imports an exported program may need, by the name it
// uses them with.
var packages = map[string]string{
	"context": "context", "flag": "flag", "fmt": "fmt", "log": "log", "slog": "log/slog",
	"math": "math", "os": "os", "signal": "os/signal", "reflect": "reflect", "sort": "sort", "strconv": "strconv",
	"strings": "strings", "syscall": "syscall", "time": "time", "utf8": "unicode/utf8",
	"streams": streamsPath, "process": processPath, "expr": "github.com/expr-lang/expr",
	"types": "github.com/expr-lang/expr/types", "vm": "github.com/expr-lang/expr/vm",
}

// addImports inserts the import declaration of the packages src uses.
func addImports(src string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, 0)
	if err != nil {
		return "", fmt.Errorf("parsing the program: %w\n%s", err, src)
	}
	var std, other []string
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Obj == nil {
				if path, ok := packages[id.Name]; ok && !seen[path] {
					seen[path] = true
					if strings.Contains(path, ".") {
						other = append(other, path)
					} else {
						std = append(std, path)
					}
				}
			}
		}
		return true
	})
	sort.Strings(std)
	sort.Strings(other)
	var imports strings.Builder
	imports.WriteString("import (\n")
	for _, p := range std {
		imports.WriteString(quote(p) + "\n")
	}
	if len(std) > 0 && len(other) > 0 {
		imports.WriteString("\n")
	}
	for _, p := range other {
		imports.WriteString(quote(p) + "\n")
	}
	imports.WriteString(")\n\n")
	at := strings.Index(src, "package main\n\n") + len("package main\n\n")
	return src[:at] + imports.String() + src[at:], nil
}
