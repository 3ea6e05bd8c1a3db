package compiler

import (
	"fmt"
	"reflect"

	"github.com/braidstream/braid/designer"
	"github.com/expr-lang/expr/ast"
)

// resultKind is what an expression gives, as far as it is known before
// any record: a value read from a record (value.x) has no type until
// then, but value.x + 1 is a number whatever x is, and value.x > 1 a
// bool.
type resultKind string

const (
	kindUnknown resultKind = ""
	kindBool    resultKind = "a bool"
	kindNumber  resultKind = "a number"
	kindString  resultKind = "a string"
	kindList    resultKind = "a list"
	kindMap     resultKind = "an object"
	kindTime    resultKind = "a time"
	kindNil     resultKind = "nil"
	kindOther   resultKind = "something else"
)

// kindOfType is the kind of a static type; kindUnknown for interface{}.
func kindOfType(t reflect.Type) resultKind {
	if t == nil || t.Kind() == reflect.Interface {
		return kindUnknown
	}
	switch {
	case t == timeType:
		return kindTime
	case t.Kind() == reflect.Bool:
		return kindBool
	case isNumberKind(t.Kind()):
		return kindNumber
	case t.Kind() == reflect.String:
		return kindString
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return kindList
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return kindMap
	}
	return kindOther
}

// kindOf is the kind of what node gives, from its checked type or, when
// that is interface{}, from what its operator can give.
func kindOf(node ast.Node) resultKind {
	if k := kindOfType(node.Type()); k != kindUnknown {
		return k
	}
	switch n := node.(type) {
	case *ast.NilNode:
		return kindNil
	case *ast.UnaryNode:
		switch n.Operator {
		case "-", "+":
			return kindNumber
		case "!", "not":
			return kindBool
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "-", "*", "/", "%", "**", "^":
			return kindNumber
		case "+":
			// + adds numbers and joins strings (and adds a duration to a
			// time): one side known tells which.
			l, r := kindOf(n.Left), kindOf(n.Right)
			switch {
			case l == kindNumber || r == kindNumber:
				if l == kindTime || r == kindTime {
					return kindTime
				}
				return kindNumber
			case l == kindString || r == kindString:
				return kindString
			}
		case "==", "!=", "<", ">", "<=", ">=", "&&", "||", "and", "or",
			"in", "not in", "matches", "contains", "startsWith", "endsWith":
			return kindBool
		case "??":
			if l, r := kindOf(n.Left), kindOf(n.Right); l == r {
				return l
			}
		}
	case *ast.ConditionalNode:
		if a, b := kindOf(n.Exp1), kindOf(n.Exp2); a == b {
			return a
		}
	case *ast.ArrayNode:
		return kindList
	case *ast.MapNode:
		return kindMap
	}
	return kindUnknown
}

// checkResultKind says what is wrong with a result of kind k for role,
// when k is known before any record; "" when nothing is (or nothing
// can be).
func checkResultKind(role designer.ExprRole, k resultKind) string {
	if k == kindUnknown {
		return ""
	}
	switch role {
	case designer.Predicate:
		if k == kindBool || k == kindNil {
			return ""
		}
		return fmt.Sprintf("expected a bool (true or false), but it gives %s", k)
	case designer.TimestampExtractor:
		if k == kindNumber || k == kindTime {
			return ""
		}
		return fmt.Sprintf("expected a number of milliseconds since the epoch or a time, but it gives %s", k)
	case designer.FlatMapper:
		if k == kindList || k == kindNil {
			return ""
		}
		return fmt.Sprintf(`expected a list of {"key": ..., "value": ...} objects, but it gives %s`, k)
	case designer.ValuesMapper:
		if k == kindList || k == kindNil {
			return ""
		}
		return fmt.Sprintf("expected a list, but it gives %s", k)
	}
	return ""
}
