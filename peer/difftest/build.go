package difftest

import (
	"github.com/braidstream/braid/designer"
)

// n makes a node of kind with the parameters given as name, value pairs.
func n(id string, kind designer.Kind, params ...string) designer.Node {
	node := designer.Node{ID: id, Kind: kind}
	if len(params) > 0 {
		node.Params = map[string]any{}
	}
	for i := 0; i+1 < len(params); i += 2 {
		node.Params[params[i]] = params[i+1]
	}
	return node
}

// chain makes a design of nodes, each feeding the next.
func chain(nodes ...designer.Node) *designer.Design {
	d := &designer.Design{ID: "diff", Name: "diff", Version: designer.FormatVersion, Nodes: nodes}
	for i := 1; i < len(nodes); i++ {
		d.Edges = append(d.Edges, designer.Edge{From: nodes[i-1].ID, FromPort: "out", To: nodes[i].ID, ToPort: "in"})
	}
	for i := range d.Nodes {
		d.Nodes[i].Position = designer.Position{X: float64(200 * i)}
	}
	return d
}

// rec makes an input record; an empty value is null (a tombstone).
func rec(topic, key, value string, ts int64) Input {
	in := Input{Topic: topic, Key: &key, Timestamp: ts}
	if value != "" {
		in.Value = &value
	}
	return in
}
