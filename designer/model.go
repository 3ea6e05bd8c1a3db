// Package designer owns the editable form of a topology: a design is a
// graph of nodes (operators with typed parameters and a position on the
// canvas) and edges between their ports. The node-kind catalog declares,
// as data, every kind of node, its ports and its parameters; the same
// declaration drives validation here, the compiler, and the palette and
// property forms of the browser editor. Designs and all their revisions are
// stored in pebble.
//
// The package knows the shape of a design, not what it computes: it never
// imports the runtime or the compiler. Expressions are checked for syntax
// and meaning by the compiler, which reports them as Problems too.
package designer

// FormatVersion is the version of the JSON form of a design this package
// writes. Designs of another version are refused with an error naming it.
const FormatVersion = 1

// Design is a topology as a person edits it.
type Design struct {
	ID string `json:"id"`
	// Name is what the design is called; it is also the default
	// application id of a deployment, so it follows Kafka's topic-name
	// rules after validation.
	Name string `json:"name"`
	// Version is the format version, FormatVersion.
	Version int    `json:"version"`
	Nodes   []Node `json:"nodes"`
	Edges   []Edge `json:"edges"`
}

// Node is one operator.
type Node struct {
	// ID is unique within the design; edges and problems name it.
	ID string `json:"id"`
	// Kind names a kind of the catalog, e.g. KindFilter.
	Kind Kind `json:"kind"`
	// Name is the operator's name in the topology (Kafka Streams'
	// Named); empty means generated.
	Name string `json:"name,omitempty"`
	// Params holds the parameter values by name, as JSON gives them:
	// strings, numbers, booleans, and for the branch kind a list of
	// branches. Parameters not set take their Param.Default.
	Params   map[string]any `json:"params,omitempty"`
	Position Position       `json:"position"`
}

// Position is where a node sits on the canvas.
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Edge connects an output port of one node to an input port of another.
type Edge struct {
	From     string `json:"from"`
	FromPort string `json:"fromPort"`
	To       string `json:"to"`
	ToPort   string `json:"toPort"`
}

// Branch is one output of a branch node: records for which Predicate is
// true leave through the port named Name; an empty Predicate is the
// default branch, which takes what no other branch took.
type Branch struct {
	Name      string `json:"name"`
	Predicate string `json:"predicate,omitempty"`
}
