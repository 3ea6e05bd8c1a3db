package designer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Node returns the node of d with the given id (the first one, should ids
// repeat, which Validate reports).
func (d *Design) Node(id string) (*Node, bool) {
	for i := range d.Nodes {
		if d.Nodes[i].ID == id {
			return &d.Nodes[i], true
		}
	}
	return nil, false
}

// IsSet reports whether a parameter value counts as given: nil and the
// empty string mean "not set" (an emptied form field), so the parameter
// takes its default.
func IsSet(v any) bool {
	if v == nil {
		return false
	}
	if s, ok := v.(string); ok && s == "" {
		return false
	}
	return true
}

// ParamValue returns the value of n's parameter name as the node sets it
// or, when unset (see IsSet), the default its kind declares. ok is false
// when there is neither (or the kind is unknown and the node does not set
// it).
func ParamValue(n Node, name string) (v any, ok bool) {
	if v := n.Params[name]; IsSet(v) {
		return v, true
	}
	if k, found := kindByName()[n.Kind]; found {
		for _, p := range k.Params {
			if p.Name == name && p.Default != nil {
				return p.Default, true
			}
		}
	}
	return nil, false
}

// kindByName is the catalog by kind name, built once, for lookups that
// only read it.
var kindByName = sync.OnceValue(func() map[Kind]*KindSpec {
	m := map[Kind]*KindSpec{}
	for _, k := range catalog() {
		m[k.Name] = &k
	}
	return m
})

// ParamString returns n's parameter name as a string, with its default
// when unset; "" when there is none or the value is not a string (numbers
// are given in their JSON spelling). Enums, serdes, topics, expressions
// and durations are strings.
func ParamString(n Node, name string) string {
	v, _ := ParamValue(n, name)
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	}
	return ""
}

// ParamDuration returns n's duration parameter name, with its default
// when unset; 0 when there is none or the value is not a valid duration
// (Validate reports those).
func ParamDuration(n Node, name string) time.Duration {
	v, _ := ParamValue(n, name)
	d, err := durationOf(v)
	if err != nil {
		return 0
	}
	return d
}

// ParamInt returns n's integer parameter name, with its default when
// unset; 0 when there is none or the value is not a whole number
// (Validate reports those).
func ParamInt(n Node, name string) int {
	v, _ := ParamValue(n, name)
	i, ok := intOf(v)
	if !ok || int64(int(i)) != i {
		return 0
	}
	return int(i)
}

// ParamBranches returns the branches of a branch node, in order; nil when
// unset or malformed (Validate reports that).
func ParamBranches(n Node) []Branch {
	v, _ := ParamValue(n, "branches")
	bs, err := branchesOf(v)
	if err != nil {
		return nil
	}
	return bs
}

// InputPorts returns the input ports of n's kind; nil for an unknown kind.
func InputPorts(n Node) []Port {
	k, ok := KindByName(n.Kind)
	if !ok {
		return nil
	}
	return k.Inputs
}

// OutputPorts returns the output ports of n: its kind's, or for a kind
// with BranchOutputs one stream port per branch, named after it. Nil for
// an unknown kind.
func OutputPorts(n Node) []Port {
	k, ok := KindByName(n.Kind)
	if !ok {
		return nil
	}
	return outputPorts(k, n)
}

func outputPorts(k KindSpec, n Node) []Port {
	if !k.BranchOutputs {
		return k.Outputs
	}
	var ports []Port
	for _, b := range ParamBranches(n) {
		ports = append(ports, Port{Name: b.Name, Types: []DataType{Stream}})
	}
	return ports
}

// intOf returns v as a whole number: a JSON integer (json.Number without
// fraction or exponent), a Go integer, or a float64 without fraction (as
// from encoding/json without UseNumber).
func intOf(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		i, err := v.Int64()
		return i, err == nil
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return int64(v), uint64(v) <= math.MaxInt64
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return int64(v), v <= math.MaxInt64
	case float32:
		return intOf(float64(v))
	case float64:
		if v != math.Trunc(v) || math.IsInf(v, 0) || math.Abs(v) > 1<<53 {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

// isZeroNumber reports whether v is the number 0, which a duration
// parameter takes as well as "0s".
func isZeroNumber(v any) bool {
	i, ok := intOf(v)
	return ok && i == 0
}

// errNotString is durationOf's complaint about a value that is no string.
var errNotString = errors.New("not a string")

// durationOf returns v as a duration: a Go duration string, or the number
// 0. Negative durations are errors.
func durationOf(v any) (time.Duration, error) {
	if isZeroNumber(v) {
		return 0, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, errNotString
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("negative")
	}
	return d, nil
}

// branchesOf reads a branches parameter: []Branch as set from Go, or the
// list of {"name", "predicate"} objects JSON gives.
func branchesOf(v any) ([]Branch, error) {
	switch v := v.(type) {
	case []Branch:
		return v, nil
	case nil:
		return nil, errors.New("not set")
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var bs []Branch
	if err := decodeStrict(data, &bs); err != nil {
		return nil, fmt.Errorf("must be a list of {\"name\": ..., \"predicate\": ...} objects (%s)", branchesError(err))
	}
	if bs == nil {
		return nil, errors.New(`must be a list of {"name": ..., "predicate": ...} objects, not null`)
	}
	return bs, nil
}

// branchesError phrases why a branches value did not decode.
func branchesError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s must be %s, not %s", te.Field, goKind(te.Type), jsonValue(te.Value))
		}
		return fmt.Sprintf("got %s", jsonValue(te.Value))
	}
	return err.Error()
}
