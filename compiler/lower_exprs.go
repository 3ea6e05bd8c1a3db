package compiler

import (
	"errors"
	"strings"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// exprArg is one of a node's expressions as the function a DSL call
// takes: for the runtime a closure over the compiled expression, in a
// program the Go function ExportGo declares for it (or an expr-lang
// expression it compiles at start-up).
type exprArg struct {
	node  int
	param string
	// suffix names the program's function after the node's variable;
	// what says which expression it is, for the function's comment.
	suffix, what string
	role         designer.ExprRole
	kind         designer.Kind
	src          string
	// e is the compiled expression, nil when it did not compile (the
	// topology is then only built to find more problems).
	e *Expr
}

// errNotCompiled is what a function built for an expression that did not
// compile returns; such a topology is only built to find more problems,
// never returned.
var errNotCompiled = errors.New("the expression did not compile")

// name is the program's name of the expression's function.
func (a *exprArg) name() string { return variable(a.node) + a.suffix }

func (a *exprArg) code(x *exporter, _ []*xval) string { return x.exprCode[a.name()] }

// paramFor is "": the runtime blames a function only when it is nil,
// and value never makes a nil one.
func (a *exprArg) paramFor(blame) string { return "" }

// value is the closure the DSL call of a's role takes.
func (a *exprArg) value([]*val) any {
	e := a.e
	switch a.role {
	case designer.Predicate:
		return streams.Predicate(func(k, v any) (bool, error) {
			if e == nil {
				return false, errNotCompiled
			}
			return e.Test(Record{Key: k, Value: v})
		})
	case designer.KeyMapper:
		return streams.KeySelector(func(k, v any) (any, error) { return mapWith(e, k, v) })
	case designer.ValueMapper:
		return streams.ValueMapper(func(v any) (any, error) { return mapWith(e, nil, v) })
	case designer.FlatMapper:
		return streams.FlatMapper(func(k, v any) ([]streams.KeyValue, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.FlatMap(Record{Key: k, Value: v})
		})
	case designer.ValuesMapper:
		return streams.ValueFlatMapper(func(v any) ([]any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.FlatMapValues(Record{Value: v})
		})
	case designer.TimestampExtractor:
		return streams.TimestampExtractor(func(k, v any, ts int64) (int64, error) {
			if e == nil {
				return 0, errNotCompiled
			}
			return e.Timestamp(Record{Key: k, Value: v, Timestamp: ts})
		})
	}
	return a.stateful()
}

// stateful is value for the roles of aggregations and joins.
func (a *exprArg) stateful() any {
	e := a.e
	switch a.role {
	case designer.Initializer:
		return streams.Initializer(func() (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Init()
		})
	case designer.Aggregator:
		return streams.Aggregator(func(k, v, agg any) (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Aggregate(k, v, agg)
		})
	case designer.Reducer:
		return streams.Reducer(func(agg, v any) (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Reduce(agg, v)
		})
	case designer.SessionMerger:
		return streams.Merger(func(k, a1, a2 any) (any, error) {
			if e == nil {
				return nil, errNotCompiled
			}
			return e.Merge(k, a1, a2)
		})
	}
	return streams.ValueJoiner(func(k, left, right any) (any, error) {
		if e == nil {
			return nil, errNotCompiled
		}
		return e.Join(k, left, right)
	})
}

func mapWith(e *Expr, k, v any) (any, error) {
	if e == nil {
		return nil, errNotCompiled
	}
	return e.Map(Record{Key: k, Value: v})
}

// keyValueArg is Map's and a table GroupBy's one function of a new key
// and a new value; without newValue the value stays.
type keyValueArg struct {
	newKey, newValue *exprArg
}

func (a keyValueArg) value([]*val) any {
	k := a.newKey.e
	var v *Expr
	if a.newValue != nil {
		v = a.newValue.e
	}
	keep := a.newValue == nil
	return streams.KeyValueMapper(func(key, value any) (any, any, error) {
		nk, err := mapWith(k, key, value)
		if err != nil || keep {
			return nk, value, err
		}
		nv, err := mapWith(v, key, value)
		return nk, nv, err
	})
}

func (a keyValueArg) code(x *exporter, in []*xval) string {
	v := "nil"
	if a.newValue != nil {
		v = a.newValue.code(x, in)
	}
	return "keyValue(" + a.newKey.code(x, in) + ", " + v + ")"
}

func (keyValueArg) paramFor(blame) string { return "" } // as exprArg's

// timestampsArg is streams.WithTimestamps of a source's timestamp.
type timestampsArg struct{ e *exprArg }

func (a timestampsArg) value(in []*val) any {
	return streams.WithTimestamps(a.e.value(in).(streams.TimestampExtractor))
}

func (a timestampsArg) code(x *exporter, in []*xval) string {
	return "streams.WithTimestamps(" + a.e.code(x, in) + ")"
}

func (a timestampsArg) paramFor(at blame) string {
	return when(at == blame{option: "WithTimestamps"}, a.e.param)
}

// peekArg is a peek node's action: Options.Peek for Compile, a debug log
// line in a program.
type peekArg struct {
	node string
	peek func(node string, key, value any)
}

func (a peekArg) value([]*val) any {
	id, peek := a.node, a.peek
	return streams.Action(func(k, v any) {
		if peek != nil {
			peek(id, k, v)
		}
	})
}

func (peekArg) paramFor(blame) string { return "" } // no parameter makes it

func (a peekArg) code(*exporter, []*xval) string {
	return "func(key, value any) {\nslog.Debug(\"peek\", \"node\", " + quote(a.node) + ", \"key\", key, \"value\", value)\n}"
}

// branchesArg is a branch node's branches: a name each and a predicate
// but for the default branch.
type branchesArg []branchArg

type branchArg struct {
	name string
	pred *exprArg
}

func (a branchesArg) value(in []*val) any {
	branches := make([]streams.Branch, len(a))
	for j, br := range a {
		branches[j].Name = br.name
		if br.pred != nil {
			branches[j].Predicate = br.pred.value(in).(streams.Predicate)
		}
	}
	return branches
}

func (a branchesArg) code(x *exporter, in []*xval) string {
	list := make([]string, len(a))
	for j, br := range a {
		list[j] = "{Name: " + quote(br.name)
		if br.pred != nil {
			list[j] += ", Predicate: " + br.pred.code(x, in)
		}
		list[j] += "}"
	}
	return "[]streams.Branch{\n" + strings.Join(list, ",\n") + ",\n}"
}

func (branchesArg) paramFor(at blame) string { return when(at == blame{arg: "branches"}, "branches") }
