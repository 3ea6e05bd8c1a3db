package compiler

import (
	"errors"
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// An expression whose result cannot serve its role is refused when that
// is known before any record: from its static type, or from its operator
// when it reads a record's untyped value. What only a record tells
// (value.x) passes.
func TestExprResultKinds(t *testing.T) {
	for _, tc := range []struct {
		role   designer.ExprRole
		source string
		want   string // "" when it compiles
	}{
		{designer.Predicate, "value.temp + 1", "expected a bool (true or false), but it gives a number"},
		{designer.Predicate, "value.temp * 2", "gives a number"},
		{designer.Predicate, "-value.temp", "gives a number"},
		{designer.Predicate, `value.name + "!"`, "gives a string"},
		{designer.Predicate, "value.ok ? 1 : 2", "expected bool, but got int"},
		{designer.Predicate, "[value.x]", "expected bool"},
		{designer.Predicate, "value.temp > 1", ""},
		{designer.Predicate, `value.name == "a"`, ""},
		{designer.Predicate, "not value.ok", ""},
		{designer.Predicate, "value.ok", ""},
		{designer.Predicate, "value.a + value.b", ""}, // numbers or strings: a record tells
		{designer.Predicate, "value.ok ?? false", ""},
		{designer.TimestampExtractor, "value.ts * 1000", ""},
		{designer.TimestampExtractor, "value.ts", ""},
		{designer.TimestampExtractor, "value.ts > 0", "expected a number of milliseconds"},
		{designer.TimestampExtractor, `value.day + "T00:00"`, "expected a number of milliseconds since the epoch or a time, but it gives a string"},
		{designer.TimestampExtractor, "{'ts': value.ts}", "expected a number of milliseconds"},
		{designer.FlatMapper, "value.n + 1", `expected a list of {"key": ..., "value": ...} objects, but it gives a number`},
		{designer.FlatMapper, "value.items", ""},
		{designer.FlatMapper, "[{'key': key, 'value': value}]", ""},
		{designer.ValuesMapper, "value.a == 1", "expected a list"},
		{designer.ValuesMapper, "value.items ?? []", ""},
		{designer.ValuesMapper, "value.n - 1", "expected a list, but it gives a number"},
		{designer.KeyMapper, "value.a + 1", ""},
		{designer.ValueMapper, "value.a > 1", ""},
		{designer.Aggregator, "aggregate + value.amount", ""},
		{designer.Joiner, "{'l': left, 'r': right}", ""},
	} {
		_, err := CompileExpr(tc.role, tc.source)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %q: %v, want it to compile", tc.role, tc.source, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q: %v, want an error with %q", tc.role, tc.source, err, tc.want)
		}
	}
}

// Validation names the node and parameter of a filter whose predicate
// gives a number.
func TestCompileNonBoolPredicate(t *testing.T) {
	ps := problemsOf(t, design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		node("hot", "filter", map[string]any{"predicate": "value.temp + 1"}),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}))
	wantProblem(t, ps, "hot", "predicate", "expected a bool (true or false), but it gives a number")
}

// What a record only tells fails the task with the node's id, and the
// task is named once.
func TestCompiledEvalErrorNamesNodeOnce(t *testing.T) {
	c, err := Compile(design([]designer.Node{
		node("src", "source-stream", map[string]any{"topic": "in"}),
		node("hot", "filter", map[string]any{"predicate": "value.temp"}),
		node("sink", "sink", map[string]any{"topic": "out"}),
	}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(c.Topology, streams.DriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Pipe("in", []byte("k"), []byte(`{"temp": 21.5}`), 1)
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Node != "hot" {
		t.Fatalf("Pipe: %v, want an EvalError of node hot", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, `node "hot": predicate expression "value.temp": `) {
		t.Errorf("message %q does not name node hot", msg)
	}
	if n := strings.Count(msg, "task "); n > 1 {
		t.Errorf("message %q names the task %d times", msg, n)
	}
}
