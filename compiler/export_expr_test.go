package compiler

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// exprCase is an expression of a role in an operator of a kind.
type exprCase struct {
	kind   designer.Kind
	role   designer.ExprRole
	source string
}

// translatedCases must be written as Go; each is also run, in
// TestExportBuild, on every input of exprInputs and compared with
// expr-lang.
var translatedCases = []exprCase{
	{"filter", designer.Predicate, "value.amount >= 50"},
	{"filter", designer.Predicate, "value.n >= 3"},
	{"filter", designer.Predicate, "value.n <= 3"},
	{"filter", designer.Predicate, "value.n < 3"},
	{"filter", designer.Predicate, "value.n > 3"},
	{"filter", designer.Predicate, "value.n == 3"},
	{"filter", designer.Predicate, "value.amount >= value.amount"},
	{"filter", designer.Predicate, "key >= \"k1\" && key <= \"k1\""},
	{"filter", designer.Predicate, `value.status == "test"`},
	{"filter", designer.Predicate, `value["status"] != "test"`},
	{"filter", designer.Predicate, "value.active"},
	{"filter", designer.Predicate, "!value.active"},
	{"filter", designer.Predicate, "not (value.n > 1)"},
	{"filter", designer.Predicate, "value.n > 1 && value.amount < 100"},
	{"filter", designer.Predicate, "value.n > 1 and value.active"},
	{"filter", designer.Predicate, "value.active || value.n == 3"},
	{"filter", designer.Predicate, "value.active or value.missing"},
	{"filter", designer.Predicate, "value.missing && value.active"},
	{"filter", designer.Predicate, "value.n % 2 == 1"},
	{"filter", designer.Predicate, "key == \"k1\""},
	{"filter", designer.Predicate, "key contains \"1\""},
	{"filter", designer.Predicate, "value.name startsWith \"A\" || value.name endsWith \"x\""},
	{"filter", designer.Predicate, "hasPrefix(lower(value.customer), \"c\")"},
	{"filter", designer.Predicate, "hasSuffix(value.customer, \"1\")"},
	{"filter", designer.Predicate, "len(value.items) > 1"},
	{"filter", designer.Predicate, "value.n > 2 ? value.active : value.amount > 10"},
	{"filter", designer.Predicate, "value.missing"},
	{"filter", designer.Predicate, "value"},
	{"filter", designer.Predicate, "value.nested.a == 1"},
	{"filter", designer.Predicate, "value.items[0] == 1"},
	{"filter", designer.Predicate, "value.items[-1] == \"x\""},
	{"filter", designer.Predicate, "(value.n ?? 0) > 2"},
	{"filter", designer.Predicate, "value.amount / 0 > 1"},
	{"filter", designer.Predicate, "true"},
	{"filter", designer.Predicate, "if value.active { value.n > 1 } else { false }"},
	{"filter", designer.Predicate, "(value.active && value.n) == true"},
	{"filter-not", designer.Predicate, "value.customer == nil"},
	{"select-key", designer.KeyMapper, "value.customer"},
	{"select-key", designer.KeyMapper, "key + \"-\" + value.customer"},
	{"select-key", designer.KeyMapper, "upper(trim(value.name))"},
	{"select-key", designer.KeyMapper, "trim(value.name, \" A\")"},
	{"select-key", designer.KeyMapper, "trimPrefix(value.name)"},
	{"select-key", designer.KeyMapper, "trimSuffix(value.name, \"x\")"},
	{"select-key", designer.KeyMapper, "string(value.n)"},
	{"select-key", designer.KeyMapper, "string(value)"},
	{"select-key", designer.KeyMapper, "value.n ?? \"none\""},
	{"select-key", designer.KeyMapper, "value.n ?? value.customer"},
	{"select-key", designer.KeyMapper, "value.active && value.customer"},
	{"select-key", designer.KeyMapper, "value.active || value.customer"},
	{"select-key", designer.KeyMapper, "value.n > 2 ? \"big\" : value.n"},
	{"select-key", designer.KeyMapper, "len(key)"},
	{"select-key", designer.KeyMapper, "value.items"},
	{"map", designer.ValueMapper, "{id: key, total: value.amount * value.n, half: value.n / 2}"},
	{"map", designer.ValueMapper, `{"a b": [1, 2.5, "x", nil, true], "c": {d: value.n}}`},
	{"map", designer.ValueMapper, "value.n + 0.5"},
	{"map", designer.ValueMapper, "value.n - 1"},
	{"map", designer.ValueMapper, "value.n ** 2"},
	{"map", designer.ValueMapper, "value.n ^ 0.5"},
	{"map", designer.ValueMapper, "-value.n"},
	{"map", designer.ValueMapper, "+value.n"},
	{"map", designer.ValueMapper, "-1.5 * value.n"},
	{"map", designer.ValueMapper, "int(value.amount) % 7"},
	{"map", designer.ValueMapper, "float(value.n)"},
	{"map", designer.ValueMapper, "int(value.name)"},
	{"map", designer.ValueMapper, "value.n > 1 ? value : nil"},
	{"map", designer.ValueMapper, "[value.n > 2 ? 1 : 2.0, value.active ? value.n : 0]"},
	{"map", designer.ValueMapper, "1 + 2"},
	{"map", designer.ValueMapper, "7 / 2"},
	{"map", designer.ValueMapper, "0.1 + 0.2"},
	{"map", designer.ValueMapper, "\"a\" + \"b\""},
	{"map", designer.ValueMapper, "value.items == [1, \"x\"]"},
	{"map", designer.ValueMapper, "value == {}"},
	{"map-values", designer.ValueMapper, "value.amount * 1.2"},
	{"map-values", designer.ValueMapper, "value"},
	{"map-values", designer.ValueMapper, "len(value)"},
	{"flat-map", designer.FlatMapper, "[{key: key, value: value.n}, {key: value.customer, value: 1}]"},
	{"flat-map", designer.FlatMapper, "value.items"},
	{"flat-map-values", designer.ValuesMapper, "[value, value.n]"},
	{"flat-map-values", designer.ValuesMapper, "value.items"},
	{"source-stream", designer.TimestampExtractor, "value.ts"},
	{"source-stream", designer.TimestampExtractor, "timestamp + 1000"},
	{"source-stream", designer.TimestampExtractor, "value.ts ?? timestamp"},
	{"source-stream", designer.TimestampExtractor, "timestamp"},
	{"source-stream", designer.TimestampExtractor, "value.n * 1.5"},
	{"aggregate", designer.Initializer, "{count: 0, total: 0}"},
	{"aggregate", designer.Initializer, "0"},
	{"aggregate", designer.Initializer, "2.5"},
	{"aggregate", designer.Aggregator, "{count: aggregate.count + 1, total: aggregate.total + value.amount}"},
	{"aggregate", designer.Aggregator, "aggregate + value"},
	{"aggregate", designer.Aggregator, "aggregate + 1"},
	{"reduce", designer.Reducer, "aggregate + value.amount"},
	{"reduce", designer.Reducer, "len(value) > len(aggregate) ? value : aggregate"},
	{"reduce", designer.Reducer, "{v: aggregate.v + value.v}"},
	{"aggregate", designer.SessionMerger, "{clicks: agg1.clicks + agg2.clicks, last: agg2.last}"},
	{"aggregate", designer.SessionMerger, "agg1 + agg2"},
	{"stream-join", designer.Joiner, designer.DefaultJoiner},
	{"stream-join", designer.Joiner, "{id: key, amount: left.amount, paid: right.amount}"},
	{"table-join", designer.Joiner, "left ?? right"},
}

// fallbackCases are left to expr-lang at start-up.
var fallbackCases = []exprCase{
	{"stream-table-join", designer.Joiner, "{name: right?.name, left: left}"},
	{"flat-map", designer.FlatMapper, "map(value.items, ({key: #, value: #}))"},
	{"filter", designer.Predicate, "value?.amount > 1"},
	{"filter", designer.Predicate, `value.status in ["a", "b"]`},
	{"filter", designer.Predicate, `value.name matches "^A"`},
	{"filter", designer.Predicate, "any(value.items, # > 1)"},
	{"filter", designer.Predicate, "len($env) > 0"},
	{"map", designer.ValueMapper, "let x = value.n; x * 2"},
	{"map", designer.ValueMapper, "max(value.n, 2)"},
	{"map", designer.ValueMapper, "value.items[1:]"},
	{"map", designer.ValueMapper, "{a: 1, a: 2}"},
	{"aggregate", designer.Aggregator, "concat(aggregate, [value])"},
}

func TestTranslateExprSubset(t *testing.T) {
	for _, c := range translatedCases {
		if _, err := CompileExpr(c.role, c.source); err != nil {
			t.Errorf("%s %q does not compile: %v", c.role, c.source, err)
			continue
		}
		f, err := translateExpr(c.kind, c.role, c.source)
		if err != nil {
			t.Errorf("%s %q: not translated: %v", c.role, c.source, err)
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "f.go", "package p\n"+f.declaration("f", "n", c.role, c.source), 0); err != nil {
			t.Errorf("%s %q: the Go code does not parse: %v\n%s", c.role, c.source, err, f.body)
		}
	}
	for _, c := range fallbackCases {
		if _, err := CompileExpr(c.role, c.source); err != nil {
			t.Errorf("%s %q does not compile: %v", c.role, c.source, err)
			continue
		}
		if f, err := translateExpr(c.kind, c.role, c.source); err == nil {
			t.Errorf("%s %q: translated, want it left to expr-lang:\n%s", c.role, c.source, f.body)
		}
	}
}

// TestTranslateExprCode shows what the Go of a few expressions looks like.
func TestTranslateExprCode(t *testing.T) {
	for _, tc := range []struct {
		exprCase
		params string
		body   string
		fails  bool
	}{
		{exprCase{"filter", designer.Predicate, "value.amount >= 50"}, "_, value",
			`return compare(fetch(value, "amount"), ">=", 50), nil`, true},
		{exprCase{"filter", designer.Predicate, "true"}, "_, _", "return true, nil", false},
		{exprCase{"filter", designer.Predicate, "value.a && value.b"}, "_, value",
			`return fetch(value, "a").(bool) && truth(fetch(value, "b")), nil`, true},
		{exprCase{"select-key", designer.KeyMapper, "key + value.x"}, "key, value",
			`return normalize(add(key, fetch(value, "x"))), nil`, true},
		{exprCase{"map-values", designer.ValueMapper, `"a" + "b"`}, "_",
			`return "ab", nil`, false}, // folded by expr-lang's optimizer
		{exprCase{"map-values", designer.ValueMapper, `value + "b"`}, "value",
			`return value.(string) + "b", nil`, true},
		{exprCase{"aggregate", designer.Initializer, "{count: 0, total: 0.5}"}, "",
			`return map[string]any{"count": 0, "total": 0.5}, nil`, false},
		{exprCase{"aggregate", designer.Initializer, "3"}, "", "return int64(3), nil", false},
		{exprCase{"reduce", designer.Reducer, "len(value) > len(aggregate) ? value : aggregate"}, "aggregate, value",
			"if compare(length(value), \">\", length(aggregate)) {\nreturn normalize(value), nil\n}\nreturn normalize(aggregate), nil", true},
		{exprCase{"source-stream", designer.TimestampExtractor, "timestamp"}, "_, _, timestamp", "return timestamp, nil", false},
		{exprCase{"select-key", designer.KeyMapper, "lower(value.name)"}, "_, value",
			`return strings.ToLower(fetch(value, "name").(string)), nil`, true},
		{exprCase{"select-key", designer.KeyMapper, "value.a ?? \"none\""}, "_, value",
			`return normalize(orElse(fetch(value, "a"), "none")), nil`, true},
	} {
		f, err := translateExpr(tc.kind, tc.role, tc.source)
		if err != nil {
			t.Errorf("%q: %v", tc.source, err)
			continue
		}
		if got := strings.Join(f.params, ", "); got != tc.params {
			t.Errorf("%q: params %q, want %q", tc.source, got, tc.params)
		}
		if got := strings.TrimSpace(f.body); got != tc.body || f.fails != tc.fails {
			t.Errorf("%q: body (fails %v)\n%s\nwant (fails %v)\n%s", tc.source, f.fails, got, tc.fails, tc.body)
		}
	}
}

// exprInputs are the records the expressions are tried on: every type a
// serde decodes or an expression gives, missing fields and mismatches.
func exprInputs() []exprInput {
	order := map[string]any{"amount": 75.0, "customer": "c1", "name": " Ann x", "n": 3.0, "active": true,
		"status": "test", "items": []any{1.0, "x"}, "nested": map[string]any{"a": 1.0}, "ts": 1.7e12, "v": 2.0,
		"count": int64(2), "total": 10.5, "clicks": int64(4), "last": "p"}
	other := map[string]any{"amount": 20.5, "customer": "c22", "name": "Bob", "n": 1.0, "active": false,
		"status": "ok", "items": []any{}, "nested": map[string]any{"a": "1"}, "ts": 1700000000123.9}
	weird := map[string]any{"amount": "75", "customer": 7.0, "name": nil, "n": "3", "active": "yes",
		"items": "xy", "nested": nil, "ts": "soon", "v": true}
	ints := map[string]any{"amount": int64(75), "n": 2, "items": []any{int64(1), 2.5}, "active": true, "customer": "c1", "name": "x", "v": 1}
	values := []any{order, other, weird, ints, map[string]any{}, nil, "text", "", 4.0, 4.5, int64(9), -2, true,
		[]any{1.0, 2.0}, []any{}, []string{"a"}, uint8(7), 5 * time.Second,
		map[string]any{"n": math.NaN(), "amount": math.Inf(1), "items": []any{nil}, "ts": -1.0},
		streams.Windowed{Key: "k", Start: 1, End: 2}}
	keys := []any{"k1", nil, 12.0, int64(3), "c1"}
	aggregates := []any{map[string]any{"count": 0, "total": 0, "v": 1.0, "clicks": int64(1), "last": "a"}, 0, int64(7), 2.5, "ab", nil, []any{"x"}, map[string]any{}}
	var out []exprInput
	for i, v := range values {
		out = append(out, exprInput{key: keys[i%len(keys)], value: v, aggregate: aggregates[i%len(aggregates)],
			agg2: aggregates[(i+3)%len(aggregates)], timestamp: int64(1700000000000 + i)})
	}
	// The same values as keys and aggregates too.
	for i, v := range values[:6] {
		out = append(out, exprInput{key: v, value: values[(i+1)%len(values)], aggregate: v, agg2: v, timestamp: -1})
	}
	return out
}

type exprInput struct {
	key, value, aggregate, agg2 any
	timestamp                   int64
}

// evalInProcess evaluates c on in as the compiled topology does.
func evalInProcess(e *Expr, c exprCase, in exprInput) (any, error) {
	r := Record{Key: in.key, Value: in.value}
	if c.kind == "map-values" || c.kind == "flat-map-values" {
		r.Key = nil
	}
	switch c.role {
	case designer.Predicate:
		return e.Test(r)
	case designer.KeyMapper, designer.ValueMapper:
		return e.Map(r)
	case designer.TimestampExtractor:
		r.Timestamp = in.timestamp
		return e.Timestamp(r)
	case designer.FlatMapper:
		return e.FlatMap(r)
	case designer.ValuesMapper:
		return e.FlatMapValues(r)
	case designer.Initializer:
		return e.Init()
	case designer.Aggregator:
		return e.Aggregate(in.key, in.value, in.aggregate)
	case designer.Reducer:
		return e.Reduce(in.aggregate, in.value)
	case designer.SessionMerger:
		return e.Merge(in.key, in.aggregate, in.agg2)
	case designer.Joiner:
		return e.Join(in.key, in.value, in.aggregate)
	}
	return nil, errors.New("unknown role")
}

// callCode is the Go call of the translated function name on input in.
func callCode(name string, c exprCase, in string) string {
	switch c.role {
	case designer.TimestampExtractor:
		return name + "(" + in + ".key, " + in + ".value, " + in + ".timestamp)"
	case designer.Initializer:
		return name + "()"
	case designer.Aggregator:
		return name + "(" + in + ".key, " + in + ".value, " + in + ".aggregate)"
	case designer.Reducer:
		return name + "(" + in + ".aggregate, " + in + ".value)"
	case designer.SessionMerger:
		return name + "(" + in + ".key, " + in + ".aggregate, " + in + ".agg2)"
	case designer.Joiner:
		return name + "(" + in + ".key, " + in + ".value, " + in + ".aggregate)"
	}
	if c.kind == "map-values" || c.kind == "flat-map-values" {
		return name + "(" + in + ".value)"
	}
	return name + "(" + in + ".key, " + in + ".value)"
}

// show writes a result with the type of every value in it, for comparing
// the exported program's results with the compiler's. Its source is copied
// into that program.
func show(v any, err error) string {
	if err != nil {
		return "error"
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + show(x[k], nil)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = show(e, nil)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []streams.KeyValue:
		parts := make([]string, len(x))
		for i, kv := range x {
			parts[i] = show(kv.Key, nil) + "=" + show(kv.Value, nil)
		}
		return "records[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T(%#v)", v, v)
}

// goLiteral writes v as Go code.
func goLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, strconv.Quote(k)+": "+goLiteral(x[k]))
		}
		return "map[string]any{" + strings.Join(parts, ", ") + "}"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, goLiteral(e))
		}
		return "[]any{" + strings.Join(parts, ", ") + "}"
	case []string:
		var parts []string
		for _, e := range x {
			parts = append(parts, strconv.Quote(e))
		}
		return "[]string{" + strings.Join(parts, ", ") + "}"
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return "int(" + strconv.Itoa(x) + ")"
	case int64:
		return "int64(" + strconv.FormatInt(x, 10) + ")"
	case uint8:
		return "uint8(" + strconv.Itoa(int(x)) + ")"
	case time.Duration:
		return "time.Duration(" + strconv.FormatInt(int64(x), 10) + ")"
	case float64:
		switch {
		case math.IsNaN(x):
			return "math.NaN()"
		case math.IsInf(x, 1):
			return "math.Inf(1)"
		case math.IsInf(x, -1):
			return "math.Inf(-1)"
		}
		return "float64(" + strconv.FormatFloat(x, 'g', -1, 64) + ")"
	case streams.Windowed:
		return fmt.Sprintf("streams.Windowed{Key: %s, Start: %d, End: %d}", goLiteral(x.Key), x.Start, x.End)
	}
	panic(fmt.Sprintf("goLiteral: %T", v))
}

// randomCases makes expressions of the translated subset at random (the
// same ones every run), those expr-lang compiles and the exporter
// translates.
func randomCases(n int) []exprCase {
	rnd := rand.New(rand.NewSource(5))
	roles := []exprCase{{kind: "filter", role: designer.Predicate}, {kind: "select-key", role: designer.KeyMapper},
		{kind: "aggregate", role: designer.Aggregator}, {kind: "source-stream", role: designer.TimestampExtractor},
		{kind: "stream-join", role: designer.Joiner}}
	var out []exprCase
	for len(out) < n {
		c := roles[len(out)%len(roles)]
		g := &exprGen{rnd: rnd, vars: given(c.kind, c.role)}
		c.source = g.expr(3)
		if _, err := translateExpr(c.kind, c.role, c.source); err == nil {
			out = append(out, c)
		}
	}
	return out
}

type exprGen struct {
	rnd  *rand.Rand
	vars []string
}

func (g *exprGen) pick(options ...string) string { return options[g.rnd.Intn(len(options))] }

func (g *exprGen) expr(depth int) string {
	if depth == 0 || g.rnd.Intn(4) == 0 {
		return g.leaf()
	}
	d := depth - 1
	switch g.rnd.Intn(9) {
	case 0, 1:
		return "(" + g.expr(d) + " " + g.pick("+", "-", "*", "/", "%", "**") + " " + g.expr(d) + ")"
	case 2:
		op := g.pick("==", "!=", "<", ">", "<=", ">=")
		if g.rnd.Intn(3) == 0 { // equal operands
			x := g.leaf()
			return "(" + x + " " + op + " " + x + ")"
		}
		return "(" + g.expr(d) + " " + op + " " + g.expr(d) + ")"
	case 3:
		return "(" + g.expr(d) + " " + g.pick("&&", "||", "??", "contains", "startsWith", "endsWith") + " " + g.expr(d) + ")"
	case 4:
		return "(" + g.expr(d) + " ? " + g.expr(d) + " : " + g.expr(d) + ")"
	case 5:
		return g.pick("!", "-", "not ") + "(" + g.expr(d) + ")"
	case 6:
		return g.pick("len", "lower", "upper", "trim", "string", "int", "float") + "(" + g.expr(d) + ")"
	case 7:
		return g.pick("hasPrefix", "hasSuffix", "trim", "trimPrefix") + "(" + g.expr(d) + ", " + g.expr(d) + ")"
	default:
		if g.rnd.Intn(2) == 0 {
			return "[" + g.expr(d) + ", " + g.expr(d) + "]"
		}
		return "{a: " + g.expr(d) + ", b: " + g.expr(d) + "}"
	}
}

func (g *exprGen) leaf() string {
	switch g.rnd.Intn(6) {
	case 0:
		return g.pick("0", "1", "2", "-3", "2.5", "0.0", "1e3")
	case 1:
		return g.pick(`"a"`, `""`, `"c1"`, `" Ann x"`, `"1"`)
	case 2:
		return g.pick("true", "false", "nil")
	case 3:
		return g.vars[g.rnd.Intn(len(g.vars))]
	default:
		v := g.vars[g.rnd.Intn(len(g.vars))]
		if v == "timestamp" {
			v = "value"
		}
		return v + "." + g.pick("amount", "customer", "name", "n", "active", "items", "missing", "nested.a", "ts", "count", "items[0]")
	}
}

// exprCheckProgram writes a program that prints, for every case and input,
// what the case's translated function gives, one line each as show writes
// it, and then what the program's copy of the compiler's evaluation gives
// for every case of fallback, compiled with expr-lang at start-up; also
// the lines evalInProcess gives, which it must print.
func exprCheckProgram(t *testing.T, cases, fallback []exprCase) (program string, want []string) {
	t.Helper()
	inputs := exprInputs()
	var funcs, calls strings.Builder
	for i, c := range append(append([]exprCase(nil), cases...), fallback...) {
		e, err := CompileExpr(c.role, c.source)
		if err != nil {
			t.Fatalf("%q: %v", c.source, err)
		}
		name := "case" + strconv.Itoa(i)
		fn := name
		if i < len(cases) {
			f, err := translateExpr(c.kind, c.role, c.source)
			if err != nil {
				t.Fatalf("%q: %v", c.source, err)
			}
			funcs.WriteString("\n" + f.declaration(name, name, c.role, c.source))
		} else {
			fmt.Fprintf(&funcs, "\nvar %s = mustCompile(%q, %q)\n", name, string(c.role), c.source)
			fn += "." + fallbackMethod(c.kind, c.role)
		}
		fmt.Fprintf(&calls, "for j, in := range inputs {\n_ = in\nv, err := %s\nfmt.Printf(\"%%d %%d %%s\\n\", %d, j, show(v, err))\n}\n", callCode(fn, c, "in"), i)
		for j, in := range inputs {
			v, err := evalInProcess(e, c, in)
			want = append(want, fmt.Sprintf("%d %d %s", i, j, show(v, err)))
		}
	}
	// An expression's error names the design's node: one written as Go
	// (catch) and one compiled at start-up.
	calls.WriteString(`fmt.Println(func() (err error) {
defer catch(&err, "hot", "predicate", "value.temp + x")
panic(fmt.Errorf("boom"))
}())
_, nodeErr := mustCompile("predicate", "value.temp").test(nil, map[string]any{"temp": 1.5})
fmt.Println(nodeErr != nil && strings.HasPrefix(nodeErr.Error(), ` + "`" + `node "n": predicate expression "value.temp": ` + "`" + `))
`)
	want = append(want, `node "hot": predicate expression "value.temp + x": boom`, "true")
	var inputCode strings.Builder
	for _, in := range inputs {
		fmt.Fprintf(&inputCode, "{key: %s, value: %s, aggregate: %s, agg2: %s, timestamp: %d},\n",
			goLiteral(in.key), goLiteral(in.value), goLiteral(in.aggregate), goLiteral(in.agg2), in.timestamp)
	}
	code := "package main\n\ntype input struct {\nkey, value, aggregate, agg2 any\ntimestamp int64\n}\n\n" +
		"var inputs = []input{\n" + inputCode.String() + "}\n\nfunc main() {\n" + calls.String() + "}\n" +
		"\nfunc mustCompile(role, source string) *expression {\ne, err := compileExpression(\"n\", role, source)\nif err != nil {\npanic(err)\n}\nreturn e\n}\n" +
		showSource(t) + funcs.String()
	helpers, err := (&exporter{}).helpers(code)
	if err != nil {
		t.Fatal(err)
	}
	src, err := addImports(code + helpers)
	if err != nil {
		t.Fatal(err)
	}
	return src, want
}

// showSource returns the source of show, from this file.
func showSource(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("export_expr_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "export_expr_test.go", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "show" {
			return "\n" + string(data[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]) + "\n"
		}
	}
	t.Fatal("no func show")
	return ""
}
