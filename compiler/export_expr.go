package compiler

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/braidstream/braid/designer"
	"github.com/expr-lang/expr/ast"
)

// The Go exporter writes an expression as Go when it keeps to a subset
// whose semantics the helpers of export_runtime.go reproduce exactly:
//
//	literals            nil, true, 42, 1.5, "text", [a, b], {name: a, "other name": b}
//	variables           the ones the operator receives (key, value, aggregate, ...)
//	member access       value.amount, value["amount"], value.items[0]
//	arithmetic          + - * / % ** ^ and unary - and +
//	comparisons         == != < > <= >=
//	logic               && || ! and or not, a ? b : c, if a { b } else { c }, a ?? b
//	string operators    contains, startsWith, endsWith, + of strings
//	builtins            len lower upper trim trimPrefix trimSuffix hasPrefix
//	                    hasSuffix string int float
//
// Anything else (closures and the builtins taking them, optional chaining,
// slices, in, matches, let, pipes into other builtins, $env, ...) is
// compiled by the exported program with expr-lang at start-up, with the
// variables and options the compiler gives it.

// errUntranslatable says an expression is outside the subset.
var errUntranslatable = errors.New("not translatable to Go")

// goType is what the exporter knows of the Go type of translated code.
type goType int

const (
	goAny goType = iota
	goBool
	goInt
	goInt64
	goFloat
	goString
	goNil
	goMap  // map[string]any
	goList // []any
)

// goCode is translated code: a Go expression.
type goCode struct {
	code string
	typ  goType
	// fails says evaluating the code may panic (how the helpers fail).
	fails bool
	// parens says the code is a && or || in parentheses, which a
	// return statement does not need.
	parens bool
}

// usage says how the value of translated code is used, which lets the
// translation of && and || and ?: keep to Go's bool where expr-lang gives
// an operand itself.
type usage int

const (
	asValue usage = iota
	// asBool: the value must be a bool (a condition, an operand of !).
	asBool
	// asTruth: the value is a predicate's result: nil is false.
	asTruth
)

// translator translates one expression.
type translator struct {
	// vars are the variables the Go function receives; read the ones
	// the expression reads.
	vars map[string]bool
	read map[string]bool
}

// goFunc is an expression written as a Go function.
type goFunc struct {
	// params are the function's parameters, "_" for the ones not read.
	params []string
	// body is the function's statements; fails says it may panic and
	// needs catch.
	body  string
	fails bool
}

// translateExpr writes source, an expression of role in an operator of
// kind, as the body of a Go function; errUntranslatable (or a compile
// error) when it is outside the subset.
//
// It translates the tree expr-lang compiles: parsed, checked and optimized.
// The optimizer changes what some expressions do (x || false gives x
// itself, whatever it is; x && false does not evaluate x), so the tree
// the parser gives would not do.
func translateExpr(kind designer.Kind, role designer.ExprRole, source string) (*goFunc, error) {
	e, err := CompileExpr(role, source)
	if err != nil {
		return nil, err
	}
	tree := e.program.Node()
	params := given(kind, role)
	t := &translator{vars: map[string]bool{}, read: map[string]bool{}}
	for _, p := range params {
		t.vars[p] = true
	}
	var ret func(goCode) goCode
	ctx := asValue
	switch role {
	case designer.Predicate:
		ctx = asTruth
		ret = func(c goCode) goCode { return c }
	case designer.TimestampExtractor:
		ret = func(c goCode) goCode {
			switch c.typ {
			case goInt:
				return goCode{code: "int64(" + c.code + ")", typ: goInt64, fails: c.fails}
			case goInt64:
				return c
			}
			return goCode{code: "millis(" + c.code + ")", typ: goInt64, fails: true}
		}
	case designer.FlatMapper:
		ret = func(c goCode) goCode { return goCode{code: "records(" + c.code + ")", fails: true} }
	case designer.ValuesMapper:
		ret = func(c goCode) goCode { return goCode{code: "values(" + c.code + ")", fails: true} }
	default:
		ret = normalized
	}
	body, fails, err := t.statements(tree, ctx, ret)
	if err != nil {
		return nil, err
	}
	f := &goFunc{body: body, fails: fails}
	for _, p := range params {
		if !t.read[p] {
			p = "_"
		}
		f.params = append(f.params, p)
	}
	return f, nil
}

// normalized returns code for Normalize of c's value, leaving out what
// cannot change it.
func normalized(c goCode) goCode {
	switch c.typ {
	case goInt:
		return goCode{code: "int64(" + c.code + ")", typ: goInt64, fails: c.fails}
	case goAny, goFloat:
		return goCode{code: "normalize(" + c.code + ")", typ: goAny, fails: c.fails}
	}
	return c
}

// statements writes the statements returning n's value, through ret, as
// the function's first result: if statements for a ?: at the top.
func (t *translator) statements(n ast.Node, ctx usage, ret func(goCode) goCode) (string, bool, error) {
	if c, ok := n.(*ast.ConditionalNode); ok {
		cond, err := t.expr(c.Cond, asBool)
		if err != nil {
			return "", false, err
		}
		yes, yesFails, err := t.statements(c.Exp1, ctx, ret)
		if err != nil {
			return "", false, err
		}
		no, noFails, err := t.statements(c.Exp2, ctx, ret)
		if err != nil {
			return "", false, err
		}
		return "if " + cond.code + " {\n" + yes + "}\n" + no, cond.fails || yesFails || noFails, nil
	}
	c, err := t.expr(n, ctx)
	if err != nil {
		return "", false, err
	}
	c = ret(c)
	if c.parens {
		c.code = c.code[1 : len(c.code)-1]
	}
	return "return " + c.code + ", nil\n", c.fails, nil
}

// expr translates n for use in ctx.
func (t *translator) expr(n ast.Node, ctx usage) (goCode, error) {
	c, err := t.value(n, ctx)
	if err != nil {
		return goCode{}, err
	}
	switch ctx {
	case asBool:
		return asType(c, goBool, "bool"), nil
	case asTruth:
		if c.typ == goBool {
			return c, nil
		}
		return goCode{code: "truth(" + c.code + ")", typ: goBool, fails: true}, nil
	}
	return c, nil
}

// asType returns c as a Go value of type typ (spelled name): a type
// assertion, which fails as expr-lang's does with anything else.
func asType(c goCode, typ goType, name string) goCode {
	switch c.typ {
	case typ:
		return c
	case goAny:
		return goCode{code: c.code + ".(" + name + ")", typ: typ, fails: true}
	}
	return goCode{code: "any(" + c.code + ").(" + name + ")", typ: typ, fails: true}
}

// value translates n; ctx only lets && and || and ?: give a Go bool.
func (t *translator) value(n ast.Node, ctx usage) (goCode, error) {
	switch n := n.(type) {
	case *ast.NilNode:
		return goCode{code: "nil", typ: goNil}, nil
	case *ast.BoolNode:
		return goCode{code: strconv.FormatBool(n.Value), typ: goBool}, nil
	case *ast.IntegerNode:
		return goCode{code: strconv.Itoa(n.Value), typ: goInt}, nil
	case *ast.FloatNode:
		return floatLiteral(n.Value)
	case *ast.StringNode:
		return goCode{code: strconv.Quote(n.Value), typ: goString}, nil
	case *ast.ConstantNode:
		// The optimizer's: a list of literals.
		return constant(n.Value)
	case *ast.IdentifierNode:
		if !t.vars[n.Value] {
			return goCode{}, errUntranslatable
		}
		t.read[n.Value] = true
		if n.Value == "timestamp" {
			return goCode{code: n.Value, typ: goInt64}, nil
		}
		return goCode{code: n.Value}, nil
	case *ast.ChainNode:
		return goCode{}, errUntranslatable // optional chaining
	case *ast.MemberNode:
		if n.Optional || n.Method {
			return goCode{}, errUntranslatable
		}
		from, err := t.expr(n.Node, asValue)
		if err != nil {
			return goCode{}, err
		}
		prop, err := t.expr(n.Property, asValue)
		if err != nil {
			return goCode{}, err
		}
		return goCode{code: "fetch(" + from.code + ", " + prop.code + ")", fails: true}, nil
	case *ast.UnaryNode:
		return t.unary(n)
	case *ast.BinaryNode:
		return t.binary(n, ctx)
	case *ast.ConditionalNode:
		return t.conditional(n, ctx)
	case *ast.ArrayNode:
		elems, fails, err := t.list(n.Nodes)
		if err != nil {
			return goCode{}, err
		}
		return goCode{code: "[]any{" + strings.Join(elems, ", ") + "}", typ: goList, fails: fails}, nil
	case *ast.MapNode:
		return t.object(n)
	case *ast.BuiltinNode:
		return t.builtin(n)
	}
	return goCode{}, errUntranslatable
}

// constant writes a value of the optimizer's constants.
func constant(v any) (goCode, error) {
	switch v := v.(type) {
	case nil:
		return goCode{code: "nil", typ: goNil}, nil
	case bool:
		return goCode{code: strconv.FormatBool(v), typ: goBool}, nil
	case int:
		return goCode{code: strconv.Itoa(v), typ: goInt}, nil
	case float64:
		return floatLiteral(v)
	case string:
		return goCode{code: strconv.Quote(v), typ: goString}, nil
	case []any:
		elems := make([]string, len(v))
		for i, e := range v {
			c, err := constant(e)
			if err != nil {
				return goCode{}, err
			}
			elems[i] = c.code
		}
		return goCode{code: "[]any{" + strings.Join(elems, ", ") + "}", typ: goList}, nil
	}
	return goCode{}, errUntranslatable
}

// floatLiteral writes f so that Go takes it for a float64.
func floatLiteral(f float64) (goCode, error) {
	var code string
	switch {
	case math.IsNaN(f):
		code = "math.NaN()"
	case math.IsInf(f, 0):
		code = "math.Inf(" + strconv.Itoa(int(math.Copysign(1, f))) + ")"
	case f == 0 && math.Signbit(f):
		code = "math.Copysign(0, -1)" // Go constants have no -0
	default:
		code = strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(code, ".e") {
			code += ".0"
		}
	}
	return goCode{code: code, typ: goFloat}, nil
}

func (t *translator) list(nodes []ast.Node) ([]string, bool, error) {
	var out []string
	fails := false
	for _, e := range nodes {
		c, err := t.expr(e, asValue)
		if err != nil {
			return nil, false, err
		}
		out = append(out, c.code)
		fails = fails || c.fails
	}
	return out, fails, nil
}

func (t *translator) object(n *ast.MapNode) (goCode, error) {
	seen := map[string]bool{}
	var pairs []string
	fails := false
	for _, p := range n.Pairs {
		pair, ok := p.(*ast.PairNode)
		if !ok {
			return goCode{}, errUntranslatable
		}
		key, ok := pair.Key.(*ast.StringNode)
		if !ok || seen[key.Value] {
			// A repeated key would not compile as a Go map literal.
			return goCode{}, errUntranslatable
		}
		seen[key.Value] = true
		v, err := t.expr(pair.Value, asValue)
		if err != nil {
			return goCode{}, err
		}
		pairs = append(pairs, strconv.Quote(key.Value)+": "+v.code)
		fails = fails || v.fails
	}
	return goCode{code: "map[string]any{" + strings.Join(pairs, ", ") + "}", typ: goMap, fails: fails}, nil
}

func (t *translator) unary(n *ast.UnaryNode) (goCode, error) {
	switch n.Operator {
	case "!", "not":
		c, err := t.expr(n.Node, asBool)
		if err != nil {
			return goCode{}, err
		}
		return goCode{code: "!" + c.code, typ: goBool, fails: c.fails}, nil
	case "+":
		return t.expr(n.Node, asValue)
	case "-":
		switch lit := n.Node.(type) {
		case *ast.IntegerNode:
			return goCode{code: strconv.Itoa(-lit.Value), typ: goInt}, nil
		case *ast.FloatNode:
			if lit.Value != 0 {
				return floatLiteral(-lit.Value)
			}
		}
		c, err := t.expr(n.Node, asValue)
		if err != nil {
			return goCode{}, err
		}
		return goCode{code: "neg(" + c.code + ")", fails: true}, nil
	}
	return goCode{}, errUntranslatable
}

// helperOf maps binary operators to the helpers computing them and the
// type of their result.
var helperOf = map[string]struct {
	name string
	typ  goType
}{
	"+": {"add", goAny}, "-": {"sub", goAny}, "*": {"mul", goAny}, "/": {"div", goFloat},
	"%": {"mod", goInt}, "**": {"pow", goFloat}, "^": {"pow", goFloat},
	"contains": {"contains", goBool}, "startsWith": {"startsWith", goBool}, "endsWith": {"endsWith", goBool},
}

func (t *translator) binary(n *ast.BinaryNode, ctx usage) (goCode, error) {
	switch n.Operator {
	case "&&", "and", "||", "or":
		return t.logic(n, ctx)
	case "??":
		return t.coalesce(n)
	}
	l, err := t.expr(n.Left, asValue)
	if err != nil {
		return goCode{}, err
	}
	r, err := t.expr(n.Right, asValue)
	if err != nil {
		return goCode{}, err
	}
	fails := l.fails || r.fails
	switch n.Operator {
	case "==":
		return goCode{code: "equal(" + l.code + ", " + r.code + ")", typ: goBool, fails: fails}, nil
	case "!=":
		return goCode{code: "!equal(" + l.code + ", " + r.code + ")", typ: goBool, fails: fails}, nil
	case "<", ">", "<=", ">=":
		return goCode{code: "compare(" + l.code + ", " + strconv.Quote(n.Operator) + ", " + r.code + ")", typ: goBool, fails: true}, nil
	case "+":
		// With a string on one side, expr-lang adds only a string.
		if l.typ == goString || r.typ == goString {
			l, r = asType(l, goString, "string"), asType(r, goString, "string")
			return goCode{code: l.code + " + " + r.code, typ: goString, fails: l.fails || r.fails}, nil
		}
	}
	h, ok := helperOf[n.Operator]
	if !ok {
		return goCode{}, errUntranslatable
	}
	return goCode{code: h.name + "(" + l.code + ", " + r.code + ")", typ: h.typ, fails: true}, nil
}

// logic translates && and ||. expr-lang gives the left operand when it
// decides (it must be a bool) and else the right one as it is, which may be
// anything; where the result is used as a bool, Go's && and || do.
func (t *translator) logic(n *ast.BinaryNode, ctx usage) (goCode, error) {
	and := n.Operator == "&&" || n.Operator == "and"
	op := " || "
	if and {
		op = " && "
	}
	l, err := t.expr(n.Left, asBool)
	if err != nil {
		return goCode{}, err
	}
	r, err := t.expr(n.Right, ctx)
	if err != nil {
		return goCode{}, err
	}
	fails := l.fails || r.fails
	if ctx != asValue || r.typ == goBool {
		return goCode{code: "(" + l.code + op + r.code + ")", typ: goBool, fails: fails, parens: true}, nil
	}
	if and {
		return goCode{code: "func() any {\nif " + l.code + " {\nreturn " + r.code + "\n}\nreturn false\n}()", fails: fails}, nil
	}
	return goCode{code: "func() any {\nif " + l.code + " {\nreturn true\n}\nreturn " + r.code + "\n}()", fails: fails}, nil
}

// coalesce translates a ?? b: a unless it is nil, else b, evaluated only
// then.
func (t *translator) coalesce(n *ast.BinaryNode) (goCode, error) {
	l, err := t.expr(n.Left, asValue)
	if err != nil {
		return goCode{}, err
	}
	r, err := t.expr(n.Right, asValue)
	if err != nil {
		return goCode{}, err
	}
	if !r.fails {
		return goCode{code: "orElse(" + l.code + ", " + r.code + ")", fails: l.fails}, nil
	}
	return goCode{code: "func() any {\nif v := " + l.code + "; !isNil(v) {\nreturn v\n}\nreturn " + r.code + "\n}()", fails: true}, nil
}

// conditional translates a ?: inside an expression: a function literal
// called at once, so that only the branch taken is evaluated.
func (t *translator) conditional(n *ast.ConditionalNode, ctx usage) (goCode, error) {
	cond, err := t.expr(n.Cond, asBool)
	if err != nil {
		return goCode{}, err
	}
	yes, err := t.expr(n.Exp1, ctx)
	if err != nil {
		return goCode{}, err
	}
	no, err := t.expr(n.Exp2, ctx)
	if err != nil {
		return goCode{}, err
	}
	typ, name := goAny, "any"
	if ctx != asValue {
		typ, name = goBool, "bool"
	}
	return goCode{code: "func() " + name + " {\nif " + cond.code + " {\nreturn " + yes.code + "\n}\nreturn " + no.code + "\n}()",
		typ: typ, fails: cond.fails || yes.fails || no.fails}, nil
}

func (t *translator) builtin(n *ast.BuiltinNode) (goCode, error) {
	args := make([]goCode, len(n.Arguments))
	fails := false
	for i, a := range n.Arguments {
		c, err := t.expr(a, asValue)
		if err != nil {
			return goCode{}, err
		}
		args[i] = c
		fails = fails || c.fails
	}
	str := func(i int) string {
		c := asType(args[i], goString, "string")
		fails = fails || c.fails
		return c.code
	}
	switch {
	case len(args) == 1 && n.Name == "len":
		return goCode{code: "length(" + args[0].code + ")", typ: goInt, fails: true}, nil
	case len(args) == 1 && n.Name == "string":
		return goCode{code: "fmt.Sprint(" + args[0].code + ")", typ: goString, fails: fails}, nil
	case len(args) == 1 && n.Name == "int":
		return goCode{code: "intOf(" + args[0].code + ")", typ: goInt, fails: true}, nil
	case len(args) == 1 && n.Name == "float":
		return goCode{code: "floatOf(" + args[0].code + ")", typ: goFloat, fails: true}, nil
	case len(args) == 1 && (n.Name == "lower" || n.Name == "upper"):
		fn := map[string]string{"lower": "strings.ToLower", "upper": "strings.ToUpper"}[n.Name]
		s := str(0)
		return goCode{code: fn + "(" + s + ")", typ: goString, fails: fails}, nil
	case n.Name == "trim" && len(args) == 1:
		s := str(0)
		return goCode{code: "strings.TrimSpace(" + s + ")", typ: goString, fails: fails}, nil
	case n.Name == "trim" && len(args) == 2:
		s, cut := str(0), str(1)
		return goCode{code: "strings.Trim(" + s + ", " + cut + ")", typ: goString, fails: fails}, nil
	case (n.Name == "trimPrefix" || n.Name == "trimSuffix") && (len(args) == 1 || len(args) == 2):
		fn := map[string]string{"trimPrefix": "strings.TrimPrefix", "trimSuffix": "strings.TrimSuffix"}[n.Name]
		s, cut := str(0), strconv.Quote(" ")
		if len(args) == 2 {
			cut = str(1)
		}
		return goCode{code: fn + "(" + s + ", " + cut + ")", typ: goString, fails: fails}, nil
	case (n.Name == "hasPrefix" || n.Name == "hasSuffix") && len(args) == 2:
		fn := map[string]string{"hasPrefix": "strings.HasPrefix", "hasSuffix": "strings.HasSuffix"}[n.Name]
		s, affix := str(0), str(1)
		return goCode{code: fn + "(" + s + ", " + affix + ")", typ: goBool, fails: fails}, nil
	}
	return goCode{}, errUntranslatable
}
