//go:build ignore

// This file is not part of package compiler: ExportGo embeds it and copies
// into an exported program the declarations the program uses, so that they
// are written, formatted and vetted as Go. The helpers reproduce, for the
// expressions the exporter translates to Go, what expr-lang does
// (github.com/expr-lang/expr/vm/runtime and builtin), and the compiler's
// conversions of results (compiler/expr.go). Names used here must not be
// used by the code ExportGo writes, and no local variable may be called
// like an imported package.

package main

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// catch turns a panic of an expression's code, which is how the helpers
// below fail as expr-lang's do, into the expression's error, which names
// the design's node.
func catch(err *error, node, role, source string) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = fmt.Errorf("node %q: %s expression %q: %w", node, role, source, e)
			return
		}
		*err = fmt.Errorf("node %q: %s expression %q: %v", node, role, source, r)
	}
}

// expression is an expr-lang expression compiled at start-up, with the
// variables and options braid's compiler gives its role, for what braid
// export could not write as Go.
type expression struct {
	node, role, source string
	program            *vm.Program
}

func compileExpression(node, role, source string) (*expression, error) {
	var env types.Map
	switch role {
	case "initializer":
		env = types.Map{}
	case "aggregator":
		env = types.Map{"key": types.Any, "value": types.Any, "aggregate": types.Any}
	case "reducer":
		env = types.Map{"aggregate": types.Any, "value": types.Any}
	case "merger":
		env = types.Map{"key": types.Any, "agg1": types.Any, "agg2": types.Any}
	case "joiner":
		env = types.Map{"key": types.Any, "left": types.Any, "right": types.Any}
	default:
		env = types.Map{"key": types.Any, "value": types.Any, "timestamp": types.Int64, "headers": types.TypeOf(map[string]string(nil))}
	}
	options := []expr.Option{expr.Env(env)}
	if role == "predicate" {
		options = append(options, expr.AsBool())
	}
	program, err := expr.Compile(source, options...)
	if err != nil {
		return nil, fmt.Errorf("node %q: %s expression %q: %w", node, role, source, err)
	}
	return &expression{node: node, role: role, source: source, program: program}, nil
}

// run evaluates the expression; it panics on failure (see catch).
func (e *expression) run(env map[string]any) any {
	out, err := expr.Run(e.program, env)
	if err != nil {
		panic(err)
	}
	return out
}

// record is the variables of an expression on a record.
func record(key, value any, timestamp int64) map[string]any {
	return map[string]any{"key": key, "value": value, "timestamp": timestamp, "headers": map[string]string{}}
}

func (e *expression) test(key, value any) (_ bool, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return truth(e.run(record(key, value, 0))), nil
}

func (e *expression) mapRecord(key, value any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(record(key, value, 0))), nil
}

func (e *expression) mapValue(value any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(record(nil, value, 0))), nil
}

func (e *expression) timestamp(key, value any, timestamp int64) (_ int64, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return millis(e.run(record(key, value, timestamp))), nil
}

func (e *expression) flatMap(key, value any) (_ []streams.KeyValue, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return records(e.run(record(key, value, 0))), nil
}

func (e *expression) flatMapValues(value any) (_ []any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return values(e.run(record(nil, value, 0))), nil
}

func (e *expression) initialize() (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(map[string]any{})), nil
}

func (e *expression) aggregate(key, value, aggregate any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(map[string]any{"key": key, "value": value, "aggregate": aggregate})), nil
}

func (e *expression) reduce(aggregate, value any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(map[string]any{"aggregate": aggregate, "value": value})), nil
}

func (e *expression) merge(key, agg1, agg2 any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(map[string]any{"key": key, "agg1": agg1, "agg2": agg2})), nil
}

func (e *expression) join(key, left, right any) (_ any, err error) {
	defer catch(&err, e.node, e.role, e.source)
	return normalize(e.run(map[string]any{"key": key, "left": left, "right": right})), nil
}

// keyValue makes one function of a new key's and a new value's, as Map
// and a table's GroupBy take; without newValue the value stays.
func keyValue(newKey, newValue func(key, value any) (any, error)) streams.KeyValueMapper {
	return func(key, value any) (any, any, error) {
		k, err := newKey(key, value)
		if err != nil || newValue == nil {
			return k, value, err
		}
		v, err := newValue(key, value)
		return k, v, err
	}
}

// normalize makes a whole number an int64 (any Go integer, a float64
// without a fraction within ±2^53), as braid's compiler does with what an
// expression gives, so that it fits the int64 serde.
func normalize(v any) any {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) && n >= -(1<<53) && n <= 1<<53 {
			return int64(n)
		}
		return n
	case float32:
		return normalize(float64(n))
	case int:
		return int64(n)
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case uint:
		return normalizeUint(uint64(n))
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return normalizeUint(n)
	}
	return v
}

func normalizeUint(n uint64) any {
	if n > math.MaxInt64 {
		return float64(n)
	}
	return int64(n)
}

// truth is a predicate's result: nil is false, anything but a bool fails.
func truth(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case nil:
		return false
	}
	panic(fmt.Sprintf("invalid operation: bool(%T)", v))
}

// millis is a timestamp expression's result in milliseconds since the
// epoch: a number (a fraction is cut off) or a time.
func millis(v any) int64 {
	switch n := normalize(v).(type) {
	case int64:
		return n
	case float64:
		if math.IsNaN(n) || n < -(1<<63) || n >= 1<<63 {
			panic(fmt.Sprintf("gave %v, out of range for milliseconds since the epoch", n))
		}
		return int64(n)
	case time.Time:
		return n.UnixMilli()
	case nil:
		panic("gave nil, want milliseconds since the epoch")
	}
	panic(fmt.Sprintf("gave %T, want milliseconds since the epoch (a number) or a time", v))
}

// list returns v's elements when v is a list; nil is an empty list.
func list(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case nil:
		return nil, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// records is a flat-map expression's result: a list of {"key": ...,
// "value": ...} objects.
func records(v any) []streams.KeyValue {
	items, ok := list(v)
	if !ok {
		panic(fmt.Sprintf(`gave %T, want a list of {"key": ..., "value": ...} objects`, v))
	}
	kvs := make([]streams.KeyValue, 0, len(items))
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			panic(fmt.Sprintf(`element %d is %T, want a {"key": ..., "value": ...} object`, i, item))
		}
		k, hasKey := obj["key"]
		v, hasValue := obj["value"]
		if !hasKey || !hasValue {
			panic(fmt.Sprintf(`element %d has no "key" or no "value"`, i))
		}
		kvs = append(kvs, streams.KeyValue{Key: normalize(k), Value: normalize(v)})
	}
	return kvs
}

// values is a flat-map-values expression's result: a list of values.
func values(v any) []any {
	items, ok := list(v)
	if !ok {
		panic(fmt.Sprintf("gave %T, want a list", v))
	}
	vs := make([]any, len(items))
	for i, item := range items {
		vs[i] = normalize(item)
	}
	return vs
}

// fetch is expr-lang's member access: from.name, from[name], from[i].
// A missing field of an object is nil; a field of nil fails.
func fetch(from, i any) any {
	if m, ok := from.(map[string]any); ok {
		if name, ok := i.(string); ok {
			return m[name]
		}
	}
	v := reflect.ValueOf(from)
	if v.Kind() == reflect.Invalid {
		panic(fmt.Sprintf("cannot fetch %v from %T", i, from))
	}
	if v.NumMethod() > 0 {
		if name, ok := i.(string); ok {
			if method := v.MethodByName(name); method.IsValid() {
				return method.Interface()
			}
		}
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			break
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Array, reflect.Slice, reflect.String:
		index := toInt(i)
		l := v.Len()
		if index < 0 {
			index = l + index
		}
		if index < 0 || index >= l {
			panic(fmt.Sprintf("index out of range: %v (array length is %v)", index, l))
		}
		if value := v.Index(index); value.IsValid() {
			return value.Interface()
		}
	case reflect.Map:
		var value reflect.Value
		if i == nil {
			value = v.MapIndex(reflect.Zero(v.Type().Key()))
		} else {
			value = v.MapIndex(reflect.ValueOf(i))
		}
		if value.IsValid() {
			return value.Interface()
		}
		return reflect.Zero(reflect.TypeOf(from).Elem()).Interface()
	case reflect.Struct:
		name := i.(string)
		t := v.Type()
		field, ok := t.FieldByNameFunc(func(n string) bool {
			f, _ := t.FieldByName(n)
			switch f.Tag.Get("expr") {
			case "-":
				return false
			case name:
				return true
			default:
				return n == name
			}
		})
		if ok {
			if value := v.FieldByIndex(field.Index); value.IsValid() {
				return value.Interface()
			}
		}
	}
	panic(fmt.Sprintf("cannot fetch %v from %T", i, from))
}

// toInt is expr-lang's conversion of an index to an int.
func toInt(v any) int {
	if n, _, _, ok := number(v); ok {
		return n
	}
	panic(fmt.Sprintf("invalid operation: int(%T)", v))
}

// number tells whether v is a number, as expr-lang's arithmetic sees it:
// every Go integer type counts as an int, and a float32 as a float64 (n
// is then v as an int, f v as a float64).
func number(v any) (n int, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case int:
		return x, float64(x), false, true
	case int8:
		return int(x), float64(x), false, true
	case int16:
		return int(x), float64(x), false, true
	case int32:
		return int(x), float64(x), false, true
	case int64:
		return int(x), float64(x), false, true
	case uint:
		return int(x), float64(x), false, true
	case uint8:
		return int(x), float64(x), false, true
	case uint16:
		return int(x), float64(x), false, true
	case uint32:
		return int(x), float64(x), false, true
	case uint64:
		return int(x), float64(x), false, true
	case float32:
		return int(x), float64(x), true, true
	case float64:
		return int(x), x, true, true
	}
	return 0, 0, false, false
}

// add is expr-lang's a + b: numbers (an int unless one is a float),
// strings, times and durations.
func add(a, b any) any {
	if x, xf, xFloat, ok := number(a); ok {
		if y, yf, yFloat, ok := number(b); ok {
			if xFloat || yFloat {
				return xf + yf
			}
			return x + y
		}
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x + y
		}
	case time.Time:
		if y, ok := b.(time.Duration); ok {
			return x.Add(y)
		}
	case time.Duration:
		switch y := b.(type) {
		case time.Time:
			return y.Add(x)
		case time.Duration:
			return x + y
		}
	}
	panic(fmt.Sprintf("invalid operation: %T + %T", a, b))
}

// sub is expr-lang's a - b.
func sub(a, b any) any {
	if x, xf, xFloat, ok := number(a); ok {
		if y, yf, yFloat, ok := number(b); ok {
			if xFloat || yFloat {
				return xf - yf
			}
			return x - y
		}
	}
	switch x := a.(type) {
	case time.Time:
		switch y := b.(type) {
		case time.Time:
			return x.Sub(y)
		case time.Duration:
			return x.Add(-y)
		}
	case time.Duration:
		if y, ok := b.(time.Duration); ok {
			return x - y
		}
	}
	panic(fmt.Sprintf("invalid operation: %T - %T", a, b))
}

// mul is expr-lang's a * b; a duration times an integer is a duration.
func mul(a, b any) any {
	x, xf, xFloat, xOK := number(a)
	y, yf, yFloat, yOK := number(b)
	xd, xDuration := a.(time.Duration)
	yd, yDuration := b.(time.Duration)
	switch {
	case (xOK || xDuration) && (yOK || yDuration) && (xDuration || yDuration):
		if xDuration {
			x, xf = int(xd), float64(xd)
		}
		if yDuration {
			y, yf = int(yd), float64(yd)
		}
		if xFloat || yFloat {
			return xf * yf
		}
		return time.Duration(x) * time.Duration(y)
	case xOK && yOK:
		if xFloat || yFloat {
			return xf * yf
		}
		return x * y
	}
	panic(fmt.Sprintf("invalid operation: %T * %T", a, b))
}

// div is expr-lang's a / b, always a float64.
func div(a, b any) float64 {
	if _, xf, _, ok := number(a); ok {
		if _, yf, _, ok := number(b); ok {
			return xf / yf
		}
	}
	panic(fmt.Sprintf("invalid operation: %T / %T", a, b))
}

// mod is expr-lang's a % b, of integers only.
func mod(a, b any) int {
	if x, _, xFloat, ok := number(a); ok && !xFloat {
		if y, _, yFloat, ok := number(b); ok && !yFloat {
			return x % y
		}
	}
	panic(fmt.Sprintf("invalid operation: %T %% %T", a, b))
}

// pow is expr-lang's a ** b, always a float64.
func pow(a, b any) float64 {
	return math.Pow(toFloat(a), toFloat(b))
}

// toFloat is expr-lang's conversion of a number to a float64.
func toFloat(v any) float64 {
	if _, f, _, ok := number(v); ok {
		return f
	}
	panic(fmt.Sprintf("invalid operation: float(%T)", v))
}

// neg is expr-lang's -v, which keeps the type of the number.
func neg(v any) any {
	switch x := v.(type) {
	case float32:
		return -x
	case float64:
		return -x
	case int:
		return -x
	case int8:
		return -x
	case int16:
		return -x
	case int32:
		return -x
	case int64:
		return -x
	case uint:
		return -x
	case uint8:
		return -x
	case uint16:
		return -x
	case uint32:
		return -x
	case uint64:
		return -x
	}
	panic(fmt.Sprintf("invalid operation: - %T", v))
}

// equal is expr-lang's a == b: numbers compare by value whatever their
// types, lists element by element, and nothing fails.
func equal(a, b any) bool {
	if x, xf, xFloat, ok := number(a); ok {
		if y, yf, yFloat, ok := number(b); ok {
			if xFloat || yFloat {
				return xf == yf
			}
			return x == y
		}
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Equal(y)
		}
	case time.Duration:
		if y, ok := b.(time.Duration); ok {
			return x == y
		}
	}
	if eq, ok := equalLists(a, b); ok {
		return eq
	}
	if isNil(a) && isNil(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// equalLists compares the lists expr-lang compares element by element: a
// []any with a []any or a slice of strings or numbers, and two slices of
// one such type.
func equalLists(a, b any) (eq, ok bool) {
	x, y := reflect.ValueOf(a), reflect.ValueOf(b)
	if x.Kind() != reflect.Slice || y.Kind() != reflect.Slice {
		return false, false
	}
	anyX, anyY := x.Type() == reflect.TypeOf([]any(nil)), y.Type() == reflect.TypeOf([]any(nil))
	switch {
	case anyX && (anyY || listOf(y.Type())), anyY && listOf(x.Type()):
		if x.Len() != y.Len() {
			return false, true
		}
		for i := 0; i < x.Len(); i++ {
			if !equal(x.Index(i).Interface(), y.Index(i).Interface()) {
				return false, true
			}
		}
		return true, true
	case x.Type() == y.Type() && listOf(x.Type()):
		if x.Len() != y.Len() {
			return false, true
		}
		for i := 0; i < x.Len(); i++ {
			if x.Index(i).Interface() != y.Index(i).Interface() {
				return false, true
			}
		}
		return true, true
	}
	return false, false
}

// listOf tells the typed slices equalLists takes: []string and slices of
// numbers.
func listOf(t reflect.Type) bool {
	if t.Name() != "" {
		return false
	}
	t = t.Elem()
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return t.PkgPath() == ""
	}
	return false
}

// isNil is expr-lang's test for nil, typed nils included.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Chan, reflect.Func, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Slice:
		return r.IsNil()
	}
	return false
}

// compare is expr-lang's a < b, a > b, a <= b and a >= b (op): numbers,
// strings, times and durations; anything else fails.
func compare(a any, op string, b any) bool {
	if x, xf, xFloat, ok := number(a); ok {
		if y, yf, yFloat, ok := number(b); ok {
			if xFloat || yFloat {
				return ordered(xf, op, yf)
			}
			return ordered(x, op, y)
		}
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return ordered(x, op, y)
		}
	case time.Duration:
		if y, ok := b.(time.Duration); ok {
			return ordered(x, op, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			switch op {
			case "<":
				return x.Before(y)
			case ">":
				return x.After(y)
			case "<=":
				return x.Before(y) || x.Equal(y)
			default:
				return x.After(y) || x.Equal(y)
			}
		}
	}
	panic(fmt.Sprintf("invalid operation: %T %s %T", a, op, b))
}

func ordered[T int | float64 | string | time.Duration](x T, op string, y T) bool {
	switch op {
	case "<":
		return x < y
	case ">":
		return x > y
	case "<=":
		return x <= y
	default:
		return x >= y
	}
}

// orElse is expr-lang's v ?? otherwise.
func orElse(v, otherwise any) any {
	if isNil(v) {
		return otherwise
	}
	return v
}

// length is expr-lang's len(v): a string's length in characters, a list's
// or an object's in elements.
func length(v any) int {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Array, reflect.Slice, reflect.Map:
		return r.Len()
	case reflect.String:
		return utf8.RuneCountInString(r.String())
	}
	panic(fmt.Sprintf("invalid argument for len (type %T)", v))
}

// contains, startsWith and endsWith are expr-lang's string operators:
// false when either side is nil, and both sides must be strings.
func contains(s, substr any) bool {
	if isNil(s) || isNil(substr) {
		return false
	}
	return strings.Contains(s.(string), substr.(string))
}

func startsWith(s, prefix any) bool {
	if isNil(s) || isNil(prefix) {
		return false
	}
	return strings.HasPrefix(s.(string), prefix.(string))
}

func endsWith(s, suffix any) bool {
	if isNil(s) || isNil(suffix) {
		return false
	}
	return strings.HasSuffix(s.(string), suffix.(string))
}

// intOf is expr-lang's int(v): numbers (a fraction is cut off) and
// strings holding whole numbers.
func intOf(v any) int {
	if n, _, _, ok := number(v); ok {
		return n
	}
	if s, ok := v.(string); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			panic(fmt.Sprintf("invalid operation: int(%s)", s))
		}
		return n
	}
	r := reflect.ValueOf(v)
	if r.IsValid() && r.CanConvert(reflect.TypeOf(0)) {
		return int(r.Convert(reflect.TypeOf(0)).Int())
	}
	panic(fmt.Sprintf("invalid operation: int(%T)", v))
}

// floatOf is expr-lang's float(v): numbers and strings holding numbers.
func floatOf(v any) float64 {
	if _, f, _, ok := number(v); ok {
		return f
	}
	if s, ok := v.(string); ok {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(fmt.Sprintf("invalid operation: float(%s)", s))
		}
		return f
	}
	panic(fmt.Sprintf("invalid operation: float(%T)", v))
}
