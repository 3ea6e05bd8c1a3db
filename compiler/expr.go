package compiler

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// Record is a record as a record expression sees it.
type Record struct {
	Key, Value any
	// Timestamp is in milliseconds since the epoch.
	Timestamp int64
	// Headers are the record's headers; a repeated header's last value.
	Headers map[string]string
}

// Expr is an expression compiled for its role. It is safe for concurrent
// use.
type Expr struct {
	role    designer.ExprRole
	source  string
	program *vm.Program
	// reads holds the variables of the role the expression reads.
	reads map[string]bool
	// reuseEnv is false when the expression reads $env, which could
	// return the map of variables itself: the map is then not reused.
	reuseEnv bool
	// node is the id of the design's node the expression is a parameter
	// of, when Compile compiled it: its errors name it.
	node string
}

// ExprError says why an expression does not compile.
type ExprError struct {
	// Line and Column locate the error in the expression, both counted
	// from 1; 0 when expr-lang gives no position (a result of the wrong
	// type is the whole expression's).
	Line, Column int
	// Message is expr-lang's, e.g. "unknown name valu".
	Message string
	// OverLimit is set when the expression is longer than MaxExprBytes
	// or nests deeper than MaxExprDepth: it was refused unparsed.
	OverLimit bool
}

// The bounds of what CompileExpr parses. expr-lang's parser recurses once
// per nesting level and per prefix operator, with no bound of its own: a
// megabyte of "(" overflows the goroutine stack, and Go ends the whole
// process for that (it cannot be recovered). Within these bounds the
// recursion stays under a few MB of stack; real expressions are far
// smaller.
const (
	// MaxExprBytes is the longest expression source, in bytes.
	MaxExprBytes = 16 << 10
	// MaxExprDepth is the deepest nesting of (), [] and {}.
	MaxExprDepth = 100
)

func (e *ExprError) Error() string {
	if e.Line == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s (%d:%d)", e.Message, e.Line, e.Column)
}

// EvalError is an expression that failed on a record.
type EvalError struct {
	// Node is the id of the design's node whose expression failed; ""
	// for an expression compiled alone.
	Node   string
	Role   designer.ExprRole
	Source string
	// Message is expr-lang's or the compiler's, with the position in the
	// expression when known.
	Message string
	// Err is the underlying error, if any.
	Err error
}

func (e *EvalError) Error() string {
	if e.Node != "" {
		return fmt.Sprintf("node %q: %s expression %q: %s", e.Node, e.Role, e.Source, e.Message)
	}
	return fmt.Sprintf("%s expression %q: %s", e.Role, e.Source, e.Message)
}

func (e *EvalError) Unwrap() error { return e.Err }

var headersType = types.TypeOf(map[string]string(nil))

// roleEnv returns the variables of role and their types.
func roleEnv(role designer.ExprRole) (types.Map, bool) {
	switch role {
	case designer.Predicate, designer.KeyMapper, designer.ValueMapper, designer.FlatMapper,
		designer.ValuesMapper, designer.TimestampExtractor:
		return types.Map{"key": types.Any, "value": types.Any, "timestamp": types.Int64, "headers": headersType}, true
	case designer.Initializer:
		return types.Map{}, true
	case designer.Aggregator:
		return types.Map{"key": types.Any, "value": types.Any, "aggregate": types.Any}, true
	case designer.Reducer:
		return types.Map{"aggregate": types.Any, "value": types.Any}, true
	case designer.SessionMerger:
		return types.Map{"key": types.Any, "agg1": types.Any, "agg2": types.Any}, true
	case designer.Joiner:
		return types.Map{"key": types.Any, "left": types.Any, "right": types.Any}, true
	}
	return nil, false
}

// RoleVariables returns the names of the variables an expression of role
// sees, in the order of the package documentation; nil for an unknown
// role.
func RoleVariables(role designer.ExprRole) []string {
	switch role {
	case designer.Predicate, designer.KeyMapper, designer.ValueMapper, designer.FlatMapper,
		designer.ValuesMapper, designer.TimestampExtractor:
		return []string{"key", "value", "timestamp", "headers"}
	case designer.Initializer:
		return []string{}
	case designer.Aggregator:
		return []string{"key", "value", "aggregate"}
	case designer.Reducer:
		return []string{"aggregate", "value"}
	case designer.SessionMerger:
		return []string{"key", "agg1", "agg2"}
	case designer.Joiner:
		return []string{"key", "left", "right"}
	}
	return nil
}

// CompileExpr compiles source for role. A compile error is an *ExprError.
func CompileExpr(role designer.ExprRole, source string) (*Expr, error) {
	env, ok := roleEnv(role)
	if !ok {
		return nil, fmt.Errorf("unknown expression role %q", role)
	}
	if isBlank(source) {
		return nil, &ExprError{Message: "the expression is empty"}
	}
	if err := checkExprBounds(source); err != nil {
		return nil, err
	}
	opts := []expr.Option{expr.Env(env)}
	if role == designer.Predicate {
		opts = append(opts, expr.AsBool())
	}
	program, err := expr.Compile(source, opts...)
	if err != nil {
		return nil, compileError(err)
	}
	e := &Expr{role: role, source: source, program: program, reads: make(map[string]bool), reuseEnv: true}
	node := program.Node()
	ast.Walk(&node, identifiers(func(name string) {
		if _, isVar := env[name]; isVar {
			e.reads[name] = true
		}
		if name == "$env" {
			e.reuseEnv = false
		}
	}))
	msg := checkResultType(role, node.Type())
	if msg == "" {
		msg = checkResultKind(role, kindOf(node))
	}
	if msg != "" {
		return nil, &ExprError{Message: msg}
	}
	return e, nil
}

// checkExprBounds refuses a source over MaxExprBytes or nested deeper
// than MaxExprDepth, before expr-lang's parser sees it. Brackets inside
// string literals do not count.
func checkExprBounds(source string) *ExprError {
	if len(source) > MaxExprBytes {
		return &ExprError{OverLimit: true, Message: fmt.Sprintf("the expression is %d bytes long; at most %d are allowed", len(source), MaxExprBytes)}
	}
	depth, line, column := 0, 1, 0
	var quote rune // the open string literal's quote, or 0
	escaped := false
	for _, r := range source {
		column++
		switch {
		case r == '\n':
			line, column = line+1, 0
			continue
		case quote != 0:
			switch {
			case escaped:
				escaped = false
			case r == '\\' && quote != '`':
				escaped = true
			case r == quote:
				quote = 0
			}
			continue
		}
		switch r {
		case '"', '\'', '`':
			quote = r
		case '(', '[', '{':
			if depth++; depth > MaxExprDepth {
				return &ExprError{OverLimit: true, Line: line, Column: column,
					Message: fmt.Sprintf("brackets nested more than %d deep", MaxExprDepth)}
			}
		case ')', ']', '}':
			depth--
		}
	}
	return nil
}

func isBlank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

func compileError(err error) *ExprError {
	var fe *file.Error
	if errors.As(err, &fe) {
		if fe.Line == 0 {
			return &ExprError{Message: fe.Message}
		}
		return &ExprError{Line: fe.Line, Column: fe.Column + 1, Message: fe.Message}
	}
	return &ExprError{Message: err.Error()}
}

// identifiers is an ast.Visitor calling fn with every identifier read.
type identifiers func(name string)

func (f identifiers) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		f(id.Value)
	}
}

var timeType = reflect.TypeOf(time.Time{})

// checkResultType says what is wrong with a result of type t for role,
// when t is known at compile time; "" when nothing is.
func checkResultType(role designer.ExprRole, t reflect.Type) string {
	if t == nil || t.Kind() == reflect.Interface {
		return ""
	}
	switch role {
	case designer.TimestampExtractor:
		if isNumberKind(t.Kind()) || t == timeType {
			return ""
		}
		return fmt.Sprintf("expected a number of milliseconds since the epoch or a time, but got %s", t)
	case designer.FlatMapper:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			return ""
		}
		return fmt.Sprintf(`expected a list of {"key": ..., "value": ...} objects, but got %s`, t)
	case designer.ValuesMapper:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			return ""
		}
		return fmt.Sprintf("expected a list, but got %s", t)
	}
	return ""
}

func isNumberKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// Role returns the role the expression was compiled for.
func (e *Expr) Role() designer.ExprRole { return e.role }

// Source returns the expression's text.
func (e *Expr) Source() string { return e.source }

// Reads reports whether the expression reads the variable name.
func (e *Expr) Reads(name string) bool { return e.reads[name] }

func (e *Expr) String() string { return e.source }

var (
	vmPool  = sync.Pool{New: func() any { return new(vm.VM) }}
	envPool = sync.Pool{New: func() any { return make(map[string]any, 4) }}
)

// run evaluates the expression with the variables set by fill.
func (e *Expr) run(fill func(env map[string]any)) (any, error) {
	var env map[string]any
	if e.reuseEnv {
		env = envPool.Get().(map[string]any)
	} else {
		env = make(map[string]any, 4)
	}
	fill(env)
	machine := vmPool.Get().(*vm.VM)
	out, err := machine.Run(e.program, env)
	vmPool.Put(machine)
	if e.reuseEnv {
		clear(env)
		envPool.Put(env)
	}
	if err != nil {
		return nil, e.evalError(err)
	}
	return out, nil
}

func (e *Expr) evalError(err error) *EvalError {
	ee := &EvalError{Node: e.node, Role: e.role, Source: e.source, Message: err.Error(), Err: err}
	var fe *file.Error
	if errors.As(err, &fe) {
		ee.Message = fe.Message
		if fe.Line > 0 {
			ee.Message = fmt.Sprintf("%s (%d:%d)", fe.Message, fe.Line, fe.Column+1)
		}
		ee.Err = fe.Unwrap()
	}
	return ee
}

func (e *Expr) failf(format string, args ...any) *EvalError {
	return &EvalError{Node: e.node, Role: e.role, Source: e.source, Message: fmt.Sprintf(format, args...)}
}

func (e *Expr) runRecord(r Record) (any, error) {
	return e.run(func(env map[string]any) {
		env["key"], env["value"], env["timestamp"] = r.Key, r.Value, r.Timestamp
		h := r.Headers
		if h == nil {
			h = map[string]string{}
		}
		env["headers"] = h
	})
}

func (e *Expr) need(roles ...designer.ExprRole) error {
	for _, r := range roles {
		if e.role == r {
			return nil
		}
	}
	return fmt.Errorf("%s expression %q used as a %s expression", e.role, e.source, roles[0])
}

// Test evaluates a predicate; nil is false.
func (e *Expr) Test(r Record) (bool, error) {
	if err := e.need(designer.Predicate); err != nil {
		return false, err
	}
	out, err := e.runRecord(r)
	if err != nil {
		return false, err
	}
	switch out := out.(type) {
	case bool:
		return out, nil
	case nil:
		return false, nil
	}
	return false, e.failf("gave %T, want a bool", out)
}

// Map evaluates a key or value mapper and returns its normalized result.
func (e *Expr) Map(r Record) (any, error) {
	if err := e.need(designer.KeyMapper, designer.ValueMapper); err != nil {
		return nil, err
	}
	out, err := e.runRecord(r)
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// Timestamp evaluates a timestamp extractor: milliseconds since the
// epoch.
func (e *Expr) Timestamp(r Record) (int64, error) {
	if err := e.need(designer.TimestampExtractor); err != nil {
		return 0, err
	}
	out, err := e.runRecord(r)
	if err != nil {
		return 0, err
	}
	switch v := Normalize(out).(type) {
	case int64:
		return v, nil
	case float64:
		if math.IsNaN(v) || v < -(1<<63) || v >= 1<<63 {
			return 0, e.failf("gave %v, out of range for milliseconds since the epoch", v)
		}
		return int64(v), nil
	case time.Time:
		return v.UnixMilli(), nil
	case nil:
		return 0, e.failf("gave nil, want milliseconds since the epoch")
	default:
		return 0, e.failf("gave %T, want milliseconds since the epoch (a number) or a time", out)
	}
}

// FlatMap evaluates a flat-map expression into records.
func (e *Expr) FlatMap(r Record) ([]streams.KeyValue, error) {
	if err := e.need(designer.FlatMapper); err != nil {
		return nil, err
	}
	out, err := e.runRecord(r)
	if err != nil {
		return nil, err
	}
	items, ok := asList(out)
	if !ok {
		return nil, e.failf(`gave %T, want a list of {"key": ..., "value": ...} objects`, out)
	}
	kvs := make([]streams.KeyValue, 0, len(items))
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, e.failf(`element %d is %T, want a {"key": ..., "value": ...} object`, i, item)
		}
		k, hasKey := obj["key"]
		v, hasValue := obj["value"]
		if !hasKey || !hasValue {
			return nil, e.failf(`element %d has no "key" or no "value"`, i)
		}
		kvs = append(kvs, streams.KeyValue{Key: Normalize(k), Value: Normalize(v)})
	}
	return kvs, nil
}

// FlatMapValues evaluates a flat-map-values expression into values.
func (e *Expr) FlatMapValues(r Record) ([]any, error) {
	if err := e.need(designer.ValuesMapper); err != nil {
		return nil, err
	}
	out, err := e.runRecord(r)
	if err != nil {
		return nil, err
	}
	items, ok := asList(out)
	if !ok {
		return nil, e.failf("gave %T, want a list", out)
	}
	vs := make([]any, len(items))
	for i, item := range items {
		vs[i] = Normalize(item)
	}
	return vs, nil
}

// Init evaluates an initializer.
func (e *Expr) Init() (any, error) {
	if err := e.need(designer.Initializer); err != nil {
		return nil, err
	}
	out, err := e.run(func(map[string]any) {})
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// Aggregate evaluates an aggregator (or a grouped table's adder or
// subtractor).
func (e *Expr) Aggregate(key, value, aggregate any) (any, error) {
	if err := e.need(designer.Aggregator); err != nil {
		return nil, err
	}
	out, err := e.run(func(env map[string]any) {
		env["key"], env["value"], env["aggregate"] = key, value, aggregate
	})
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// Reduce evaluates a reducer.
func (e *Expr) Reduce(aggregate, value any) (any, error) {
	if err := e.need(designer.Reducer); err != nil {
		return nil, err
	}
	out, err := e.run(func(env map[string]any) {
		env["aggregate"], env["value"] = aggregate, value
	})
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// Merge evaluates a session merger.
func (e *Expr) Merge(key, agg1, agg2 any) (any, error) {
	if err := e.need(designer.SessionMerger); err != nil {
		return nil, err
	}
	out, err := e.run(func(env map[string]any) {
		env["key"], env["agg1"], env["agg2"] = key, agg1, agg2
	})
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// Join evaluates a joiner: left or right is nil for the side an outer
// join found no match for.
func (e *Expr) Join(key, left, right any) (any, error) {
	if err := e.need(designer.Joiner); err != nil {
		return nil, err
	}
	out, err := e.run(func(env map[string]any) {
		env["key"], env["left"], env["right"] = key, left, right
	})
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

// maxExact is 2^53: below it every whole float64 is an exact int64.
const maxExact = 1 << 53

// Normalize applies the expressions' one conversion of results: whole
// numbers become int64 (every Go integer type; a float64 without a
// fraction within ±2^53), float32 becomes float64, and anything else is
// returned as it is. Only the value itself is converted, not the members
// of a map or list.
func Normalize(v any) any {
	switch n := v.(type) {
	case nil, string, bool, int64, map[string]any, []any:
		return v
	case float64:
		if n == math.Trunc(n) && n >= -maxExact && n <= maxExact {
			return int64(n)
		}
		return n
	case float32:
		return Normalize(float64(n))
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

// asList returns v's elements when v is a list; nil is an empty list.
func asList(v any) ([]any, bool) {
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
