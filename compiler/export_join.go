package compiler

import (
	"errors"

	"github.com/braidstream/braid/designer"
)

// joinWindowsCode is joinWindows as code: JoinTimeDifference when the
// windows are symmetric, else the JoinWindows literal.
func joinWindowsCode(n designer.Node) string {
	w := joinWindows(n)
	if w.Before == w.After {
		return "streams.JoinTimeDifference(" + durationCode(w.Before) + ", " + durationCode(w.Grace) + ")"
	}
	return "streams.JoinWindows{Before: " + durationCode(w.Before) + ", After: " + durationCode(w.After) + ", Grace: " + durationCode(w.Grace) + "}"
}

// joinSerdesCode is the streams.JoinSerdes option of a stream join's
// inputs, serdes by name ("" for nil).
func joinSerdesCode(key, value, other string) string {
	return "streams.JoinSerdes(" + basicSerdeCode(key) + ", " + basicSerdeCode(value) + ", " + basicSerdeCode(other) + ")"
}

// join writes node i's join call, as compile_join.go makes it, on its
// inputs by port.
func (x *exporter) join(i int, ports map[string]*xval, opName string) (*xval, error) {
	n := x.d.Nodes[i]
	joiner, err := x.exprFunc(i, "joiner", designer.Joiner)
	if err != nil {
		return nil, err
	}
	typ := designer.ParamString(n, "type")
	method := map[string]string{designer.InnerJoin: "Join", designer.LeftJoin: "LeftJoin", designer.OuterJoin: "OuterJoin"}[typ]
	leftPort, rightPort := "left", "right"
	if n.Kind == designer.KindStreamTableJoin {
		leftPort, rightPort = "stream", "table"
		method += "Table"
	}
	left, right := ports[leftPort], ports[rightPort]
	if left == nil || right == nil || method == "" || method == "Table" {
		return nil, errors.New("has no inputs to join")
	}
	serdes := serdesCode(basicSerdeCode(left.key.serde), basicSerdeCode(joinValueSerde))
	out := &xval{typ: designer.Stream, key: keyInfo{serde: left.key.serde}, value: joinValueSerde}
	var code string
	switch n.Kind {
	case designer.KindStreamJoin:
		inputs := joinSerdesCode(left.key.serde, left.value, right.value)
		code = call(method, right.code.expression(), joiner, joinWindowsCode(n), namedCode(opName), serdes, inputs)
	case designer.KindStreamTableJoin:
		inputs := joinSerdesCode(left.key.serde, left.value, "")
		code = call(method, right.code.expression(), joiner, namedCode(opName), serdes, inputs)
	case designer.KindTableJoin:
		store := ""
		if designer.ParamString(n, "store") != "" {
			store = "streams.Materialized(" + storeOptionsCode(n, basicSerdeCode(joinValueSerde), false) + ")"
		}
		code = call(method, right.code.expression(), joiner, namedCode(opName), serdes, store)
		out.typ = designer.Table
	}
	out.code = x.on(i, left, code)
	return out, nil
}
