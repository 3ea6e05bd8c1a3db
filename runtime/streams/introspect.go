package streams

import (
	"time"
)

// InternalTopic describes a topic an App creates for its topology: a
// repartition topic or a store's changelog.
type InternalTopic struct {
	// Name is the full topic name, with the application id.
	Name string
	// Kind is "repartition" or "changelog".
	Kind string
	// Partitions is the partition count, or 0 when it is taken at run time
	// from the widest of the topics in PartitionsOf.
	Partitions   int
	PartitionsOf []string
	// CleanupPolicy is "delete" (repartition), "compact" (key-value
	// changelogs) or "compact,delete" (windowed changelogs), whose
	// retention is Retention.
	CleanupPolicy string
	Retention     time.Duration
	// Store names the store of a changelog.
	Store string
}

// StoreInfo describes a state store of the topology.
type StoreInfo struct {
	Name string
	// Type is "key-value", "window" or "session".
	Type string
	// Processor is the operator that writes the store; Subtopology the
	// sub-topology it belongs to.
	Processor   string
	Subtopology int
	// Logged says the store has a changelog; Cached that it has a record
	// cache.
	Logged, Cached bool
	// Retention is how long a windowed store keeps a window; Grace the
	// window's grace period. Both zero for key-value stores.
	Retention, Grace time.Duration
	// EmitOnClose says a windowed store sends its results when windows
	// close.
	EmitOnClose bool
	// Join says the store is one side's buffer of a stream-stream join
	// (Type "window"): it holds that side's records for Retention behind
	// the side's latest record; it has no windows that open and close,
	// and App.OpenWindows refuses it.
	Join bool `json:",omitempty"`
}

// InternalTopics lists the repartition topics and then the changelogs an
// App with the given application id creates, in sub-topology order.
func (t *Topology) InternalTopics(applicationID string) []InternalTopic {
	var out []InternalTopic
	for _, it := range t.internalTopics() {
		topic := InternalTopic{Name: applicationID + "-" + it.name, Kind: "repartition", Partitions: it.partitions, CleanupPolicy: "delete"}
		if it.partitions == 0 {
			topic.PartitionsOf = t.inputTopics(it.writer, applicationID)
		}
		out = append(out, topic)
	}
	for _, st := range t.subtopologies {
		for _, n := range st.nodes {
			for _, spec := range n.storeSpecs {
				if !spec.logged {
					continue
				}
				cfg := changelogConfig(spec)
				topic := InternalTopic{Name: changelogTopic(applicationID, spec.name), Kind: "changelog",
					PartitionsOf: t.inputTopics(st, applicationID), CleanupPolicy: *cfg["cleanup.policy"], Store: spec.name}
				if spec.window != nil {
					topic.Retention = time.Duration(spec.retention)*time.Millisecond + windowChangelogExtraRetention
				}
				out = append(out, topic)
			}
		}
	}
	return out
}

// inputTopics returns the real names of the topics st reads.
func (t *Topology) inputTopics(st *subtopology, applicationID string) []string {
	var out []string
	for _, src := range st.sources {
		for _, topic := range src.topics {
			if src.internal {
				topic = applicationID + "-" + topic
			}
			out = append(out, topic)
		}
	}
	return out
}

// Stores lists the topology's state stores in sub-topology order.
func (t *Topology) Stores() []StoreInfo {
	var out []StoreInfo
	for _, st := range t.subtopologies {
		for _, n := range st.nodes {
			for _, spec := range n.storeSpecs {
				info := StoreInfo{Name: spec.name, Type: "key-value", Processor: n.name, Subtopology: st.id,
					Logged: spec.logged, Cached: spec.cached}
				if w := spec.window; w != nil {
					info.Type = "window"
					if w.kind == sessionWindowKind {
						info.Type = "session"
					}
					info.Retention = time.Duration(spec.retention) * time.Millisecond
					info.Grace = time.Duration(w.grace) * time.Millisecond
					info.EmitOnClose = spec.emitFinal
					info.Join = w.kind == joinWindowKind
				}
				out = append(out, info)
			}
		}
	}
	return out
}

// OperatorSubtopologies maps every operator of the topology (sources,
// processors and sinks, by their names in Describe) to the sub-topology
// it belongs to.
func (t *Topology) OperatorSubtopologies() map[string]int {
	out := make(map[string]int, len(t.nodes))
	for _, n := range t.nodes {
		out[n.name] = n.subtopology
	}
	return out
}
