package streams

import (
	"regexp"
	"strconv"
	"strings"
)

// Branch is one named branch of Stream.Branch. A record goes to the first
// branch whose Predicate returns true; a Branch with a nil Predicate is the
// default branch and must come last.
type Branch struct {
	Name      string
	Predicate Predicate
}

// Branch splits s: each record goes to the first branch whose predicate
// accepts it, or to the default branch, or nowhere. The result maps each
// branch's full name, the split's name followed by the branch's name, to
// its stream, as Kafka Streams' split() does. It takes Named, which sets
// the split's name (the prefix of the branch names).
func (s *Stream) Branch(branches []Branch, opts ...Option) map[string]*Stream {
	o := s.b.resolveOptions("Branch", optName, opts)
	split := s.b.addNode(s.b.nameOrGenerate(o.name, "KSTREAM-BRANCH-"), processorNode)
	split.op = "Branch"
	connect(s.node, split)
	if len(branches) == 0 {
		s.b.errorAt(blame{arg: "branches"}, "Branch %q: no branches given", split.name)
	}
	preds := make([]Predicate, len(branches))
	out := make(map[string]*Stream, len(branches))
	for i, br := range branches {
		isDefault := br.Predicate == nil
		if isDefault && i != len(branches)-1 {
			s.b.errorAt(blame{arg: "branches"}, "Branch %q: the default branch %q (nil Predicate) must be the last", split.name, br.Name)
		}
		preds[i] = br.Predicate
		// Unnamed branches are numbered from 1 after the split's name;
		// an unnamed default branch is number 0, as in Kafka Streams.
		suffix := br.Name
		switch {
		case suffix != "":
		case isDefault:
			suffix = "0"
		default:
			suffix = strconv.Itoa(i + 1)
		}
		name := split.name + suffix
		s.b.newName(name) // Kafka Streams burns a number per branch.
		child := s.b.addNode(name, processorNode)
		child.op = "Branch"
		child.makeProcessor = passFactory
		connect(split, child)
		cs := *s
		cs.node = child
		if _, dup := out[name]; dup {
			s.b.errorAt(blame{arg: "branches"}, "Branch %q: branch name %q is used twice", split.name, name)
		}
		out[name] = &cs
	}
	split.makeProcessor = branchFactory(preds)
	return out
}

// Repartition writes s to an internal topic, partitioned by the current
// key, and reads it back, so that downstream tasks see each key in one
// partition. The topic is "<application id>-<name>-repartition". It takes
// Named (the name of the topic and its nodes), WithSerdes and
// WithPartitions.
func (s *Stream) Repartition(opts ...Option) *Stream {
	o := s.b.resolveOptions("Repartition", optName|optSerdes|optPartitions, opts)
	base, by := o.name, blame{option: "Named"}
	if base == "" {
		base, by = s.b.newName("KSTREAM-REPARTITION-"), blame{}
	}
	return s.repartitionAs(base, by, o)
}

// generatedName matches names the Builder generated; Kafka Streams names a
// repartition's nodes after the topic only when its base name was given.
var generatedName = regexp.MustCompile(`^KSTREAM.*-[0-9]{10}$`)

// repartitionAs adds filter -> sink -> topic -> source below s for the
// internal topic base+"-repartition". The filter drops records with a nil
// key: they have no partition to go to. by is what of the current DSL
// call gave base, to blame for a bad topic: zero when the Builder
// generated it, or another call did (a grouping's Named, which its
// aggregations use).
func (s *Stream) repartitionAs(base string, by blame, o operatorOptions) *Stream {
	topic := repartitionTopic(base)
	sinkName := s.b.newName("KSTREAM-SINK-")
	filterName := s.b.newName("KSTREAM-FILTER-")
	sourceName := s.b.newName("KSTREAM-SOURCE-")
	if !generatedName.MatchString(base) {
		sinkName, filterName, sourceName = topic+"-sink", topic+"-filter", topic+"-source"
	}
	filter := s.b.addNode(filterName, processorNode)
	filter.op = "Repartition"
	filter.makeProcessor = dropNullKeyFactory
	connect(s.node, filter)
	in := *s
	in.node = filter
	return in.repartitionThrough(base, by, sinkName, sourceName, o)
}

// repartitionTopic is the internal topic of a repartition named base.
func repartitionTopic(base string) string {
	if strings.HasSuffix(base, "-repartition") {
		return base
	}
	return base + "-repartition"
}

// repartitionThrough adds sink -> topic -> source below s for the internal
// topic of the repartition named base (by, as repartitionAs), with the
// given node names, and returns the stream read back. Records with a nil
// key must not reach it.
func (s *Stream) repartitionThrough(base string, by blame, sinkName, sourceName string, o operatorOptions) *Stream {
	topic := repartitionTopic(base)
	keySerde, valueSerde := s.keySerde, s.valueSerde
	if o.keySerde != nil {
		keySerde = o.keySerde
	}
	if o.valueSerde != nil {
		valueSerde = o.valueSerde
	}
	sink := s.b.addNode(sinkName, sinkNode)
	sink.op = "Repartition"
	sink.topic, sink.internal = topic, true
	sink.keySerde, sink.valueSerde = keySerde, valueSerde
	sink.partitions = o.partitions
	connect(s.node, sink)

	src := s.b.addNode(sourceName, sourceNode)
	src.op = "Repartition"
	src.topics, src.internal = []string{topic}, true
	src.keySerde, src.valueSerde = keySerde, valueSerde
	src.upstream = sink
	if err := validTopicName(topic); err != nil {
		s.b.errorAt(by, "Repartition %q: %v", base, err)
	}
	if other, ok := s.b.sourceTopics[topic]; ok {
		s.b.errorAt(by, "Repartition %q: topic %q is already read by source %q", base, topic, other.name)
	}
	s.b.sourceTopics[topic] = src
	return &Stream{b: s.b, node: src, keySerde: keySerde, valueSerde: valueSerde}
}

// To writes every record of s to topic. It takes Named and WithSerdes
// (default: the stream's known serdes, else the Config defaults).
func (s *Stream) To(topic string, opts ...Option) {
	o := s.b.resolveOptions("To", optName|optSerdes, opts)
	n := s.b.addNode(s.b.nameOrGenerate(o.name, "KSTREAM-SINK-"), sinkNode)
	n.op = "To"
	n.topic = topic
	n.keySerde, n.valueSerde = s.keySerde, s.valueSerde
	if o.keySerde != nil {
		n.keySerde = o.keySerde
	}
	if o.valueSerde != nil {
		n.valueSerde = o.valueSerde
	}
	if err := validTopicName(topic); err != nil {
		s.b.errorAt(blame{arg: "topic"}, "sink %q: %v", n.name, err)
	}
	connect(s.node, n)
}

// GroupedStream is a stream grouped by key, the KGroupedStream of Kafka
// Streams: aggregations hang from it. When the key may have changed
// upstream, the aggregation first repartitions by the new key.
type GroupedStream struct {
	stream *Stream
	// name names the repartition topic; empty means it is generated from
	// the aggregation's store name, as in Kafka Streams.
	name string
	// repartitioned is the named repartition the grouping's first
	// aggregation made, which later ones read too (see source).
	repartitioned *Stream
}

// GroupByKey groups s by its current key. It takes Named (the name of the
// repartition topic, if one is needed) and WithSerdes.
func (s *Stream) GroupByKey(opts ...Option) *GroupedStream {
	o := s.b.resolveOptions("GroupByKey", optName|optSerdes, opts)
	g := *s
	if o.keySerde != nil {
		g.keySerde = o.keySerde
	}
	if o.valueSerde != nil {
		g.valueSerde = o.valueSerde
	}
	return &GroupedStream{stream: &g, name: o.name}
}

// GroupBy groups s by the key fn selects; aggregations then repartition by
// it. It takes Named and WithSerdes, as GroupByKey.
func (s *Stream) GroupBy(fn KeySelector, opts ...Option) *GroupedStream {
	s.need("GroupBy", fnArg{"fn", fn == nil})
	o := s.b.resolveOptions("GroupBy", optName|optSerdes, opts)
	var named []Option
	if o.name != "" {
		named = append(named, Named(o.name))
	}
	sel, _ := s.derive("GroupBy", "KSTREAM-KEY-SELECT-", named, selectKeyFactory(fn))
	sel.keySerde, sel.repartitionRequired = o.keySerde, true
	if o.valueSerde != nil {
		sel.valueSerde = o.valueSerde
	}
	return &GroupedStream{stream: sel, name: o.name}
}

// source returns the stream an aggregation reads: s itself when its key is
// unchanged, else a repartition by the key. storeName names the
// repartition topic when the grouping was not named, as in Kafka Streams;
// byStore is what gave it (storeNameBlame).
func (g *GroupedStream) source(storeName string, byStore blame) *Stream {
	if !g.stream.repartitionRequired {
		return g.stream
	}
	if g.name != "" && g.repartitioned != nil {
		// As Kafka Streams: every aggregation of a named grouping reads
		// one repartition topic, though each uses up the names of one.
		g.stream.b.newName("KSTREAM-SINK-")
		g.stream.b.newName("KSTREAM-FILTER-")
		g.stream.b.newName("KSTREAM-SOURCE-")
		return g.repartitioned
	}
	base, by := g.name, blame{}
	if base == "" {
		base, by = storeName, byStore
	}
	g.repartitioned = g.stream.repartitionAs(base, by, operatorOptions{})
	return g.repartitioned
}
