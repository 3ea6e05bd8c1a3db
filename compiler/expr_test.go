package compiler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

var order = Record{
	Key:       "o-1",
	Value:     map[string]any{"customer": "alice", "amount": 120.0, "qty": 3.0, "ts": 1.7e12, "items": []any{map[string]any{"sku": "a", "n": 1.0}, map[string]any{"sku": "b", "n": 2.0}}},
	Timestamp: 1000,
	Headers:   map[string]string{"source": "web"},
}

func mustCompile(t *testing.T, role designer.ExprRole, src string) *Expr {
	t.Helper()
	e, err := CompileExpr(role, src)
	if err != nil {
		t.Fatalf("CompileExpr(%s, %q): %v", role, src, err)
	}
	return e
}

func TestExprPredicate(t *testing.T) {
	for _, tc := range []struct {
		src  string
		r    Record
		want bool
	}{
		{"value.amount >= 50", order, true},
		{"value.amount >= 500", order, false},
		{`key == "o-1" && headers.source == "web"`, order, true},
		{`headers.missing == ""`, order, true},
		{"timestamp > 999", order, true},
		{"value.missing", order, false}, // nil is false
		{"value.amount > 1", Record{Value: map[string]any{"amount": 2.0}}, true},
		{`len(value) > 3`, Record{Value: "hello"}, true}, // string serde
		{`value > 10`, Record{Value: int64(11)}, true},   // int64 serde
		{`"a" in map(value.items, #.sku)`, order, true},
		{`headers.x == ""`, Record{}, true}, // no headers at all
	} {
		e := mustCompile(t, designer.Predicate, tc.src)
		got, err := e.Test(tc.r)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
}

func TestExprMap(t *testing.T) {
	for _, tc := range []struct {
		role designer.ExprRole
		src  string
		want any
	}{
		{designer.KeyMapper, "value.customer", "alice"},
		{designer.ValueMapper, "value.amount * value.qty", int64(360)},
		{designer.ValueMapper, "value.amount / 7", 120.0 / 7},
		{designer.ValueMapper, "{id: key, total: value.amount}", map[string]any{"id": "o-1", "total": 120.0}},
		{designer.ValueMapper, "[1, 2]", []any{1, 2}},
		{designer.ValueMapper, "upper(value.customer)", "ALICE"},
		{designer.ValueMapper, "nil", nil},
		{designer.ValueMapper, "timestamp + 1", int64(1001)},
		{designer.ValueMapper, "headers.source", "web"},
		{designer.KeyMapper, "value.qty", int64(3)}, // a whole JSON number becomes int64
		{designer.KeyMapper, "3", int64(3)},
		{designer.ValueMapper, "0.5", 0.5},
		{designer.ValueMapper, "1e300", 1e300},
		{designer.ValueMapper, "true", true},
	} {
		e := mustCompile(t, tc.role, tc.src)
		got, err := e.Map(order)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: got %#v, %v; want %#v", tc.role, tc.src, got, err, tc.want)
		}
	}
}

func TestExprTimestamp(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		src  string
		r    Record
		want int64
	}{
		{"value.ts", order, 1.7e12},
		{"value.ts + 0.9", order, 1.7e12}, // the fraction is cut off
		{"timestamp", order, 1000},
		{"timestamp - 10", order, 990},
		{`date(value.at)`, Record{Value: map[string]any{"at": at.Format(time.RFC3339)}}, at.UnixMilli()},
		{`date(value.at).UnixMilli()`, Record{Value: map[string]any{"at": at.Format(time.RFC3339)}}, at.UnixMilli()},
	} {
		e := mustCompile(t, designer.TimestampExtractor, tc.src)
		got, err := e.Timestamp(tc.r)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
	for _, src := range []string{"value.customer", "value.missing", "value.items", "value.ts * 1e300 * 1e300"} {
		e := mustCompile(t, designer.TimestampExtractor, src)
		if got, err := e.Timestamp(order); err == nil {
			t.Errorf("%q: got %v, want an error", src, got)
		}
	}
}

func TestExprFlatMap(t *testing.T) {
	e := mustCompile(t, designer.FlatMapper, "map(value.items, ({key: #.sku, value: #.n}))")
	got, err := e.FlatMap(order)
	want := []streams.KeyValue{{Key: "a", Value: int64(1)}, {Key: "b", Value: int64(2)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, %v; want %#v", got, err, want)
	}
	e = mustCompile(t, designer.FlatMapper, "value.missing")
	if got, err := e.FlatMap(order); err != nil || len(got) != 0 {
		t.Errorf("nil: got %#v, %v; want no records", got, err)
	}
	for _, src := range []string{"value.customer", "[1]", "[{key: 1}]", "[{value: 1}]", "value"} {
		e := mustCompile(t, designer.FlatMapper, src)
		if got, err := e.FlatMap(order); err == nil {
			t.Errorf("%q: got %v, want an error", src, got)
		}
	}

	e = mustCompile(t, designer.ValuesMapper, `split(value.customer, "")`)
	vs, err := e.FlatMapValues(order)
	if wantVs := []any{"a", "l", "i", "c", "e"}; err != nil || !reflect.DeepEqual(vs, wantVs) {
		t.Errorf("split: got %#v, %v; want %#v", vs, err, wantVs)
	}
	e = mustCompile(t, designer.ValuesMapper, `map(value.items, #.n)`)
	vs, err = e.FlatMapValues(order)
	if wantVs := []any{int64(1), int64(2)}; err != nil || !reflect.DeepEqual(vs, wantVs) {
		t.Errorf("map: got %#v, %v; want %#v", vs, err, wantVs)
	}
	e = mustCompile(t, designer.ValuesMapper, `value.customer`)
	if _, err := e.FlatMapValues(order); err == nil {
		t.Error("a string as a list of values: no error")
	}
}

func TestExprAggregationRoles(t *testing.T) {
	init := mustCompile(t, designer.Initializer, "{count: 0, total: 0}")
	agg := mustCompile(t, designer.Aggregator, "{count: aggregate.count + 1, total: aggregate.total + value.amount, last: key}")
	red := mustCompile(t, designer.Reducer, "aggregate + value")
	merge := mustCompile(t, designer.SessionMerger, "{count: agg1.count + agg2.count, key: key}")

	a, err := init.Init()
	if want := map[string]any{"count": 0, "total": 0}; err != nil || !reflect.DeepEqual(a, want) {
		t.Fatalf("init: %#v, %v", a, err)
	}
	a, err = agg.Aggregate("alice", order.Value, a)
	if want := map[string]any{"count": 1, "total": 120.0, "last": "alice"}; err != nil || !reflect.DeepEqual(a, want) {
		t.Fatalf("aggregate: %#v, %v", a, err)
	}
	r, err := red.Reduce(2.5, 0.5)
	if err != nil || r != int64(3) {
		t.Errorf("reduce: %#v, %v", r, err)
	}
	m, err := merge.Merge("k", map[string]any{"count": 2.0}, map[string]any{"count": 3.0})
	if want := map[string]any{"count": 5.0, "key": "k"}; err != nil || !reflect.DeepEqual(m, want) {
		t.Errorf("merge: %#v, %v", m, err)
	}
}

// TestExprJoin: a joiner sees key, left and right, nil for the side
// without a match; the default keeps both sides.
func TestExprJoin(t *testing.T) {
	def := mustCompile(t, designer.Joiner, designer.DefaultJoiner)
	merge := mustCompile(t, designer.Joiner, `{id: key, amount: left.amount, name: right?.name ?? "unknown"}`)
	left := map[string]any{"amount": 12.0}
	for _, tc := range []struct {
		e           *Expr
		left, right any
		want        any
	}{
		{def, left, "alice", map[string]any{"left": left, "right": "alice"}},
		{def, nil, 7.0, map[string]any{"left": nil, "right": 7.0}},
		{merge, left, map[string]any{"name": "Alice"}, map[string]any{"id": "k", "amount": 12.0, "name": "Alice"}},
		{merge, left, nil, map[string]any{"id": "k", "amount": 12.0, "name": "unknown"}},
	} {
		got, err := tc.e.Join("k", tc.left, tc.right)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s on %v, %v: %#v, %v; want %#v", tc.e, tc.left, tc.right, got, err, tc.want)
		}
	}
	if _, err := def.Map(Record{}); err == nil {
		t.Error("a joiner used as a mapper: no error")
	}
}

func TestExprVariablesPerRole(t *testing.T) {
	for _, tc := range []struct {
		role designer.ExprRole
		ok   []string
		bad  []string
	}{
		{designer.Predicate, []string{"key == nil", "value == nil", "timestamp > 0", `headers.a == ""`}, []string{"aggregate == nil", "agg1 == nil"}},
		{designer.TimestampExtractor, []string{"timestamp", "value.ts"}, []string{"aggregate"}},
		{designer.Initializer, []string{"0", "{a: []}"}, []string{"key", "value", "timestamp"}},
		{designer.Aggregator, []string{"key", "value", "aggregate"}, []string{"timestamp", "headers", "agg1"}},
		{designer.Reducer, []string{"aggregate", "value"}, []string{"key", "timestamp"}},
		{designer.SessionMerger, []string{"key", "agg1", "agg2"}, []string{"value", "aggregate"}},
		{designer.Joiner, []string{"key", "left", "right", designer.DefaultJoiner}, []string{"value", "timestamp"}},
	} {
		for _, src := range tc.ok {
			if _, err := CompileExpr(tc.role, src); err != nil {
				t.Errorf("%s %q: %v", tc.role, src, err)
			}
		}
		for _, src := range tc.bad {
			_, err := CompileExpr(tc.role, src)
			var ee *ExprError
			if !errors.As(err, &ee) || !strings.Contains(ee.Message, "unknown name") || ee.Line != 1 || ee.Column != 1 {
				t.Errorf("%s %q: got %#v, want an unknown name at 1:1", tc.role, src, err)
			}
		}
	}
}

func TestExprCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		role      designer.ExprRole
		src       string
		msg       string
		line, col int
	}{
		{designer.Predicate, "value.amount >=", "unexpected token EOF", 1, 15},
		{designer.Predicate, "valu.amount > 1", "unknown name valu", 1, 1},
		{designer.Predicate, "value.amount + 1", "expected a bool (true or false), but it gives a number", 0, 0},
		{designer.Predicate, "value.amount", "", 0, 0}, // unknown type: checked at run time
		{designer.Predicate, "1 + 1", "expected bool, but got int", 0, 0},
		{designer.Predicate, `"yes"`, "expected bool, but got string", 0, 0},
		{designer.Predicate, "timestamp + ''", "mismatched types int64 and string", 1, 11},
		{designer.Predicate, "value.a &&\n  valeu.b", "unknown name valeu", 2, 3},
		{designer.TimestampExtractor, `"x"`, "expected a number of milliseconds", 0, 0},
		{designer.TimestampExtractor, `timestamp > 0`, "expected a number of milliseconds", 0, 0},
		{designer.FlatMapper, `1`, `expected a list of {"key"`, 0, 0},
		{designer.ValuesMapper, `"a"`, "expected a list", 0, 0},
		{designer.ValueMapper, "", "the expression is empty", 0, 0},
		{designer.ValueMapper, "  \n", "the expression is empty", 0, 0},
		{designer.ValueMapper, "upper(1, 2)", "", 1, 1},
	} {
		_, err := CompileExpr(tc.role, tc.src)
		if tc.msg == "" && tc.line == 0 {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		var ee *ExprError
		if !errors.As(err, &ee) {
			t.Errorf("%q: got %v, want an *ExprError", tc.src, err)
			continue
		}
		if !strings.Contains(ee.Message, tc.msg) || ee.Line != tc.line || ee.Column != tc.col {
			t.Errorf("%q: got %q at %d:%d, want %q at %d:%d", tc.src, ee.Message, ee.Line, ee.Column, tc.msg, tc.line, tc.col)
		}
		if strings.Contains(ee.Error(), "\n") {
			t.Errorf("%q: the error has several lines: %q", tc.src, ee.Error())
		}
	}
	if _, err := CompileExpr("nonsense", "1"); err == nil {
		t.Error("an unknown role compiled")
	}
}

func TestExprRuntimeErrors(t *testing.T) {
	for _, tc := range []struct {
		role designer.ExprRole
		src  string
		r    Record
		msg  string
	}{
		{designer.Predicate, "value.amount > 1", Record{Value: "a string"}, "(1:7)"},
		{designer.Predicate, "value.amount", order, "bool(float64)"},
		{designer.ValueMapper, "value.amount % 7", order, "(1:14)"}, // % needs integers
		{designer.ValueMapper, "int(value.customer)", order, "invalid"},
		{designer.KeyMapper, "value.items[5].sku", order, "out of range"},
	} {
		e := mustCompile(t, tc.role, tc.src)
		var err error
		if tc.role == designer.Predicate {
			_, err = e.Test(tc.r)
		} else {
			_, err = e.Map(tc.r)
		}
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("%q: got %v, want an *EvalError", tc.src, err)
			continue
		}
		if ee.Role != tc.role || ee.Source != tc.src || !strings.Contains(err.Error(), tc.msg) ||
			!strings.Contains(err.Error(), string(tc.role)+" expression ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %q, want it to hold %q on one line", tc.src, err, tc.msg)
		}
	}
	// The role guards the typed evaluations.
	e := mustCompile(t, designer.ValueMapper, "1")
	if _, err := e.Test(order); err == nil {
		t.Error("a value mapper evaluated as a predicate")
	}
}

func TestExprReads(t *testing.T) {
	e := mustCompile(t, designer.Predicate, `value.a > 1 && headers.b == "" && map(value.items, #.timestamp) != nil`)
	for name, want := range map[string]bool{"value": true, "headers": true, "timestamp": false, "key": false} {
		if e.Reads(name) != want {
			t.Errorf("Reads(%q) = %v, want %v", name, e.Reads(name), want)
		}
	}
}

// $env returns the map of variables: it must not be one reused later.
func TestExprEnvNotReused(t *testing.T) {
	e := mustCompile(t, designer.ValueMapper, "$env")
	a, err := e.Map(Record{Key: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Map(Record{Key: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := a.(map[string]any)["key"]; got != "a" {
		t.Errorf("the first result's key became %v", got)
	}
}

func TestExprConcurrent(t *testing.T) {
	e := mustCompile(t, designer.ValueMapper, "{k: key, v: value.amount * 2}")
	done := make(chan error)
	for i := range 8 {
		go func() {
			for j := range 1000 {
				r := Record{Key: i*1000 + j, Value: map[string]any{"amount": float64(j)}}
				got, err := e.Map(r)
				if err == nil {
					m := got.(map[string]any)
					if m["k"] != i*1000+j || m["v"] != float64(2*j) {
						err = errors.New("a result mixed records")
					}
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want any }{
		{1, int64(1)}, {int32(-2), int64(-2)}, {uint8(3), int64(3)}, {uint64(1 << 63), float64(1 << 63)},
		{2.0, int64(2)}, {-0.0, int64(0)}, {2.5, 2.5}, {float32(1.5), 1.5}, {1e17, 1e17},
		{"s", "s"}, {nil, nil}, {[]byte("b"), []byte("b")},
	} {
		if got := Normalize(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Normalize(%#v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func BenchmarkExprPredicate(b *testing.B) {
	e, err := CompileExpr(designer.Predicate, "value.amount >= 50")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Test(order); err != nil {
			b.Fatal(err)
		}
	}
}
