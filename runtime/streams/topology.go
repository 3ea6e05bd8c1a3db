package streams

import (
	"slices"
	"sort"
)

type nodeKind uint8

const (
	sourceNode nodeKind = iota
	processorNode
	sinkNode
)

// graphNode is one operator of the topology graph as the Builder leaves it.
// It is immutable after Build; tasks instantiate processors from it.
type graphNode struct {
	name  string
	kind  nodeKind
	op    string // the DSL call that made it, for errors
	order int    // creation order

	// Sources: the topics read; sinks: the topic written. internal marks a
	// repartition topic, whose real name gets the application id prefix.
	topics   []string
	topic    string
	internal bool
	// partitions of an internal topic written by this sink; 0 means
	// "as many as the upstream sub-topology's inputs".
	partitions int
	// upstream is, for a repartition source, the sink that writes its topic.
	upstream *graphNode

	keySerde, valueSerde Serde
	timestamps           TimestampExtractor

	stores        []string
	storeSpecs    []*storeSpec
	makeProcessor processorFactory

	parents, children []*graphNode
	subtopology       int
}

// Topology is a built, immutable topology: its sub-topologies and the
// internal topics they need. One Topology can back many Apps.
type Topology struct {
	nodes         []*graphNode
	subtopologies []*subtopology
	// bySourceTopic maps every topic the topology reads (internal topics
	// by their short name) to its sub-topology.
	bySourceTopic map[string]*subtopology
	// copartitioned lists the groups of topics (internal ones by their
	// short name) that joins read together, each sorted.
	copartitioned [][]string
}

// subtopology is a connected part of the graph; repartition topics are
// the only links between sub-topologies.
type subtopology struct {
	id      int
	nodes   []*graphNode
	sources []*graphNode
}

func newTopology(nodes []*graphNode, copartitioned [][2]*graphNode) *Topology {
	t := &Topology{nodes: nodes, bySourceTopic: make(map[string]*subtopology)}
	t.copartitioned = copartitionGroups(copartitioned)
	groups := connectedGroups(nodes)
	for i, g := range groups {
		st := &subtopology{id: i, nodes: g}
		for _, n := range g {
			n.subtopology = i
			if n.kind == sourceNode {
				st.sources = append(st.sources, n)
				for _, topic := range n.topics {
					t.bySourceTopic[topic] = st
				}
			}
		}
		t.subtopologies = append(t.subtopologies, st)
	}
	return t
}

// connectedGroups splits nodes into the connected components of the graph
// (edges taken in both directions, and between nodes that use one store,
// as a join and the table it looks up), numbered the way Kafka Streams
// numbers its node groups: in the order of each group's first source node.
func connectedGroups(nodes []*graphNode) [][]*graphNode {
	byStore := make(map[string][]*graphNode)
	for _, n := range nodes {
		for _, s := range n.stores {
			byStore[s] = append(byStore[s], n)
		}
	}
	seen := make(map[*graphNode]bool, len(nodes))
	var groups [][]*graphNode
	for _, start := range nodes {
		if seen[start] || start.kind != sourceNode {
			continue
		}
		var group []*graphNode
		stack := []*graphNode{start}
		seen[start] = true
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			group = append(group, n)
			neighbors := slices.Concat(n.parents, n.children)
			for _, s := range n.stores {
				neighbors = append(neighbors, byStore[s]...)
			}
			for _, m := range neighbors {
				if !seen[m] {
					seen[m] = true
					stack = append(stack, m)
				}
			}
		}
		sort.Slice(group, func(i, j int) bool { return group[i].order < group[j].order })
		groups = append(groups, group)
	}
	return groups
}

// internalTopic is a repartition topic the App creates before it starts.
type internalTopic struct {
	name       string // without the application id
	partitions int    // 0: from the upstream sub-topology's inputs
	writer     *subtopology
	reader     *subtopology
}

// internalTopics returns the repartition topics in sub-topology order.
func (t *Topology) internalTopics() []internalTopic {
	var out []internalTopic
	for _, n := range t.nodes {
		if n.kind == sinkNode && n.internal {
			out = append(out, internalTopic{
				name:       n.topic,
				partitions: n.partitions,
				writer:     t.subtopologies[n.subtopology],
				reader:     t.bySourceTopic[n.topic],
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].writer.id < out[j].writer.id })
	return out
}

// SourceTopics returns the user topics the topology reads, without the
// internal ones.
func (t *Topology) SourceTopics() []string {
	var out []string
	for _, n := range t.nodes {
		if n.kind == sourceNode && !n.internal {
			out = append(out, n.topics...)
		}
	}
	return out
}

// SinkTopics returns the user topics the topology writes.
func (t *Topology) SinkTopics() []string {
	var out []string
	for _, n := range t.nodes {
		if n.kind == sinkNode && !n.internal && !slices.Contains(out, n.topic) {
			out = append(out, n.topic)
		}
	}
	return out
}

// SinkNodes returns the names of every sink node, the internal ones that
// write repartition topics included: the nodes whose records leave a
// task, as Describe lists them.
func (t *Topology) SinkNodes() []string {
	var out []string
	for _, n := range t.nodes {
		if n.kind == sinkNode {
			out = append(out, n.name)
		}
	}
	return out
}

// RepartitionTopics returns the names of the internal repartition topics
// for the given application id, "<app-id>-<name>-repartition".
func (t *Topology) RepartitionTopics(applicationID string) []string {
	var out []string
	for _, it := range t.internalTopics() {
		out = append(out, applicationID+"-"+it.name)
	}
	return out
}

// Subtopologies returns the number of sub-topologies.
func (t *Topology) Subtopologies() int { return len(t.subtopologies) }

// copartitionGroups returns, for the node pairs that joins bring
// together, the groups of source topics that must be co-partitioned: the
// topics each node reads through its sub-topology, pairs that share a
// topic merged into one group.
func copartitionGroups(pairs [][2]*graphNode) [][]string {
	var groups [][]string
	for _, pair := range pairs {
		group := slices.Concat(upstreamTopics(pair[0]), upstreamTopics(pair[1]))
		// Merge every group that shares a topic with this one.
		kept := groups[:0]
		for _, g := range groups {
			if slices.ContainsFunc(g, func(topic string) bool { return slices.Contains(group, topic) }) {
				group = append(group, g...)
			} else {
				kept = append(kept, g)
			}
		}
		slices.Sort(group)
		groups = append(kept, slices.Compact(group))
	}
	return groups
}

// upstreamTopics returns the topics the source nodes above n in its
// sub-topology read.
func upstreamTopics(n *graphNode) []string {
	var out []string
	seen := make(map[*graphNode]bool)
	var walk func(n *graphNode)
	walk = func(n *graphNode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.kind == sourceNode {
			out = append(out, n.topics...)
		}
		for _, p := range n.parents {
			walk(p)
		}
	}
	walk(n)
	return out
}
