package designgen

import (
	"github.com/braidstream/braid/designer"
)

// Input is a record piped into a source topic: key and value are the
// record's bytes (nil for null), on the partition of its key (of one in
// Kafka Streams' TopologyTestDriver, of Case.Partitions in Braid's
// TestDriver).
type Input struct {
	Topic     string  `json:"topic"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Timestamp int64   `json:"timestamp"`
}

// Case is a design and the records to run it on.
type Case struct {
	Name   string
	Design *designer.Design
	Input  []Input
	// Partitions, if more than 1, is the partition count of every source
	// topic in Braid's TestDriver, whose records go to the partition of
	// their key; TopologyTestDriver has one partition per topic.
	Partitions int
}

// Node makes a node of kind with the parameters given as name, value
// pairs.
func Node(id string, kind designer.Kind, params ...string) designer.Node {
	node := designer.Node{ID: id, Kind: kind}
	if len(params) > 0 {
		node.Params = map[string]any{}
	}
	for i := 0; i+1 < len(params); i += 2 {
		node.Params[params[i]] = params[i+1]
	}
	return node
}

// Chain makes a design of nodes, each feeding the next.
func Chain(nodes ...designer.Node) *designer.Design {
	d := &designer.Design{ID: "diff", Name: "diff", Version: designer.FormatVersion, Nodes: nodes}
	for i := 1; i < len(nodes); i++ {
		d.Edges = append(d.Edges, designer.Edge{From: nodes[i-1].ID, FromPort: "out", To: nodes[i].ID, ToPort: "in"})
	}
	for i := range d.Nodes {
		d.Nodes[i].Position = designer.Position{X: float64(200 * i)}
	}
	return d
}

// Record makes an input record; an empty value is null (a tombstone).
func Record(topic, key, value string, ts int64) Input {
	in := Input{Topic: topic, Key: &key, Timestamp: ts}
	if value != "" {
		in.Value = &value
	}
	return in
}
