package web

import (
	"slices"
	"time"

	"github.com/braidstream/braid/compiler"
	"github.com/braidstream/braid/runtime/streams"
)

// compileAnswer is the answer of POST /api/compile.
type compileAnswer struct {
	// AppID is the application id the topic names were made with: the
	// one a deployment of the design runs with (designer.ApplicationID),
	// or ?appId=.
	AppID    string `json:"appId"`
	Describe string `json:"describe"`
	// SourceTopics and SinkTopics are the topics the topology reads and
	// writes (not the internal ones).
	SourceTopics  []string              `json:"sourceTopics"`
	SinkTopics    []string              `json:"sinkTopics"`
	Topics        []topicAnswer         `json:"topics"`
	Stores        []storeAnswer         `json:"stores"`
	Subtopologies []subtopologyAnswer   `json:"subtopologies"`
	Nodes         map[string]nodeAnswer `json:"nodes"`
}

// topicAnswer is an internal topic (streams.InternalTopic).
type topicAnswer struct {
	Name string `json:"name"`
	// Kind is "repartition" or "changelog".
	Kind string `json:"kind"`
	// Partitions is the count, or 0 when it is that of the widest of
	// PartitionsOf, known at run time.
	Partitions    int      `json:"partitions"`
	PartitionsOf  []string `json:"partitionsOf"`
	CleanupPolicy string   `json:"cleanupPolicy"`
	// Retention as Go writes a duration ("24h0m15s"), "" for none, and
	// in milliseconds.
	Retention   string `json:"retention"`
	RetentionMs int64  `json:"retentionMs"`
	Store       string `json:"store"`
}

// storeAnswer is a state store (streams.StoreInfo), with the design node
// that keeps it.
type storeAnswer struct {
	Name string `json:"name"`
	Node string `json:"node"`
	// Type is "key-value", "window" or "session".
	Type        string `json:"type"`
	Processor   string `json:"processor"`
	Subtopology int    `json:"subtopology"`
	Logged      bool   `json:"logged"`
	Cached      bool   `json:"cached"`
	Retention   string `json:"retention"`
	RetentionMs int64  `json:"retentionMs"`
	Grace       string `json:"grace"`
	GraceMs     int64  `json:"graceMs"`
	// Emit is "on-window-update" or "on-window-close" for windowed
	// stores, "" for key-value ones.
	Emit string `json:"emit"`
}

// subtopologyAnswer lists the design nodes with operators in one
// sub-topology, in the design's node order.
type subtopologyAnswer struct {
	ID    int      `json:"id"`
	Nodes []string `json:"nodes"`
}

// nodeAnswer is what one design node became.
type nodeAnswer struct {
	// Operator is the operator whose output is the node's output
	// (compiler.Compiled.Operators); "" for group-by-key and
	// windowed-by, which add none.
	Operator string `json:"operator"`
	// Parts are all the operators the node added, in creation order.
	Parts []string `json:"parts"`
	// Subtopologies are the sub-topologies the node's operators are in:
	// two for an aggregation that repartitions (the repartition topic's
	// sink before it, its source after). A node without operators is in
	// that of the operator whose records it passes on.
	Subtopologies []int `json:"subtopologies"`
}

func durationAnswer(d time.Duration) (string, int64) {
	if d == 0 {
		return "", 0
	}
	return d.String(), d.Milliseconds()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func compileAnswerOf(c *compiler.Compiled, appID string) compileAnswer {
	topo := c.Topology
	describe := topo.Describe()
	a := compileAnswer{
		AppID: appID, Describe: describe,
		SourceTopics: nonNil(topo.SourceTopics()), SinkTopics: nonNil(topo.SinkTopics()),
		Topics: []topicAnswer{}, Stores: []storeAnswer{}, Subtopologies: []subtopologyAnswer{},
		Nodes: make(map[string]nodeAnswer, len(c.Design.Nodes)),
	}
	for _, t := range topo.InternalTopics(appID) {
		ta := topicAnswer{Name: t.Name, Kind: t.Kind, Partitions: t.Partitions, PartitionsOf: nonNil(t.PartitionsOf),
			CleanupPolicy: t.CleanupPolicy, Store: t.Store}
		ta.Retention, ta.RetentionMs = durationAnswer(t.Retention)
		a.Topics = append(a.Topics, ta)
	}
	storeNode := c.StoreNodes
	for _, st := range topo.Stores() {
		sa := storeAnswer{Name: st.Name, Node: storeNode[st.Name], Type: st.Type, Processor: st.Processor,
			Subtopology: st.Subtopology, Logged: st.Logged, Cached: st.Cached}
		sa.Retention, sa.RetentionMs = durationAnswer(st.Retention)
		if st.Type != "key-value" {
			sa.Grace, sa.GraceMs = durationAnswer(st.Grace)
			sa.Emit = streams.EmitOnWindowUpdate.String()
			if st.EmitOnClose {
				sa.Emit = streams.EmitOnWindowClose.String()
			}
		}
		a.Stores = append(a.Stores, sa)
	}

	ops := topo.OperatorSubtopologies()
	members := make(map[int][]string, topo.Subtopologies())
	for _, n := range c.Design.Nodes {
		na := nodeAnswer{Operator: c.Operators[n.ID], Parts: nonNil(slices.Clone(c.Parts[n.ID])), Subtopologies: []int{}}
		add := func(op string) {
			if id, ok := ops[op]; ok && !slices.Contains(na.Subtopologies, id) {
				na.Subtopologies = append(na.Subtopologies, id)
			}
		}
		for _, op := range na.Parts {
			add(op)
		}
		if len(na.Subtopologies) == 0 {
			// group-by-key, windowed-by: where their records come from.
			for _, op := range c.Outputs[n.ID] {
				add(op)
			}
		}
		slices.Sort(na.Subtopologies)
		for _, id := range na.Subtopologies {
			members[id] = append(members[id], n.ID)
		}
		a.Nodes[n.ID] = na
	}
	for id := range topo.Subtopologies() {
		a.Subtopologies = append(a.Subtopologies, subtopologyAnswer{ID: id, Nodes: nonNil(members[id])})
	}
	return a
}
