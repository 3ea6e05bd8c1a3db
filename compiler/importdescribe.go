package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/braidstream/braid/designer"
)

// importGap is the distance in pixels between imported nodes on the
// canvas, across (depth) and down (sub-topologies).
const importGap = 220

// ImportDescribe turns the text of Kafka Streams' Topology.describe() (or
// Braid's, which prints the same) into a design called name ("imported"
// when empty). Malformed text gives an error naming the line and what was
// expected there; ImportDescribe never panics.
//
// The text tells the nodes' names, the topics and stores and how the nodes
// are connected, but not what the nodes compute, so the design has the
// structure and leaves the rest for a person to fill in:
//
//   - Every Source becomes a source-stream node reading its topic, every
//     Sink a sink node writing its topic, and every Processor a node of the
//     catalog kind whose Kafka name prefix (designer.KindSpec.KafkaNames) is
//     the longest that its name starts with. Where several kinds share a
//     prefix the importer takes filter (not filter-not) for
//     KSTREAM-FILTER-, select-key (not group-by) for KSTREAM-KEY-SELECT-,
//     and aggregate for KSTREAM-AGGREGATE- and KTABLE-AGGREGATE-: the text
//     cannot tell a count from an aggregate.
//   - Expressions (predicates, mappers, initializers, aggregators,
//     reducers, branch predicates) are not in the text and are left unset,
//     so that validation asks for them. Serdes, window sizes, grace periods
//     and partition counts are not in the text either.
//   - Every node keeps its original name in its "name" parameter when its
//     kind has an operator name; the repartition and group-by kinds' "name"
//     parameter names a repartition topic instead. A processor's first
//     store goes to the "store" parameter when its kind has one: so a
//     KTABLE-FILTER- or KTABLE-MAPVALUES- processor that lists a store
//     becomes a filter or map-values that materializes its table there,
//     and a stream-table join of it joins that node.
//   - A repartition topic (one whose name ends in "-repartition", written
//     by a sink and read by a source with the names Kafka Streams gives
//     them: KSTREAM-SINK- and KSTREAM-SOURCE-, <topic>-sink and
//     <topic>-source, or a table aggregation's X-sink and X-source) becomes
//     one repartition node named after the topic without "-repartition".
//     The null-key filter Kafka Streams puts before the sink
//     (KSTREAM-FILTER- numbered after the sink, or <topic>-filter) is
//     internal and disappears too. After a table's group-by (KTABLE-SELECT-)
//     the repartition is part of the group-by node, which gets its name. A
//     processor g of unknown kind that feeds the repartition g-repartition
//     is a key selector named by groupBy(Grouped.as("g")): a select-key
//     before a stream's repartition, a group-by before a table's.
//     A sink and a source of a topic the user named are kept as they are.
//   - A count, reduce or aggregate fed by a stream gets a group-by-key node
//     in front of it: after a groupBy the key was selected upstream (by the
//     select-key node the KSTREAM-KEY-SELECT- processor becomes) and the
//     repartition node carries the grouping. Windowed aggregations look
//     exactly like plain ones in describe() (the same processor and store
//     names, and no window), so a windowed aggregation is imported as an
//     unwindowed one, with a note saying so (ImportDescribeNotes). The
//     one tell is a suppress right after the aggregation (KTABLE-SUPPRESS-,
//     or s with the store s-store for withName("s")), taken for
//     untilWindowCloses: the suppress becomes a windowed-by node between
//     the group-by-key and the aggregation, emitting on window close, with
//     its type, size and grace unset so that validation asks for the size.
//   - A table source (a Source feeding only a KTABLE-SOURCE- processor, or
//     X-source, or the older X-table-source, feeding X) becomes one
//     source-table node with the topic and the store, named X unless both
//     names are generated.
//   - A branch processor and its per-branch child processors (split() and
//     the older branch()) become one branch node with one output per child,
//     named by what the child's name adds to the branch processor's; their
//     predicates are unknown and left empty.
//   - A source of several topics becomes one source per topic and a merge
//     carrying the source's name; several edges into an input that takes
//     one (a sink written by two processors) get a merge in front.
//   - The processors of a join become one join node of the join's kind,
//     with its type where the names tell it (importdescribe_join.go says
//     how); its joiner takes the default and a stream-stream join's window
//     is left for validation to ask for.
//   - What has no kind in the catalog becomes an "opaque" node, which
//     validation reports: processors whose name carries no known prefix
//     (operators named with Named lose their kind), named stream-table
//     joins, foreign-key joins, suppress (but the one above),
//     toTable, cogroup, the Processor API, and the processors of global
//     stores. A source of a topic pattern keeps the pattern as its topic
//     and a sink of a TopicNameExtractor has no topic; validation reports
//     both.
//
// Nodes are numbered n1, n2, ... in the order of the text (a node made from
// several takes the place of the first), and laid out with one band of rows
// per sub-topology and one column per depth, 220 pixels apart.
func ImportDescribe(text, name string) (*designer.Design, error) {
	d, _, err := ImportDescribeNotes(text, name)
	return d, err
}

// ImportNote is something of the text that the importer could not turn
// into the design, on the design node it concerns: what validation cannot
// ask for because the design does not show that it is missing (a window
// that describe() does not print), or a guess the importer made.
type ImportNote struct {
	// Node is the design node's id, Kind its kind.
	Node string        `json:"node"`
	Kind designer.Kind `json:"kind"`
	// Processor is the name of the text's node it is about.
	Processor string `json:"processor"`
	Message   string `json:"message"`
}

// String says where and what, as a validation problem does: `node "n3"
// (aggregate), KSTREAM-AGGREGATE-0000000002: ...`.
func (n ImportNote) String() string {
	return fmt.Sprintf("node %q (%s), %s: %s", n.Node, n.Kind, n.Processor, n.Message)
}

// ImportDescribeNotes is ImportDescribe, and also returns the notes on
// what the text does not tell, in the order of the design's nodes:
//
//   - Every count, reduce or aggregate fed by a stream gets a note that
//     describe() does not tell whether it was windowed, unless a suppress
//     follows it (see ImportDescribe), which tells it was.
//   - Every aggregate (KSTREAM-AGGREGATE-, KTABLE-AGGREGATE-) gets a note
//     that it may have been a count.
//   - A windowed-by node made from a suppress gets a note that its window
//     is not in the text.
func ImportDescribeNotes(text, name string) (*designer.Design, []ImportNote, error) {
	g, err := parseDescribe(text)
	if err != nil {
		return nil, nil, err
	}
	if name == "" {
		name = "imported"
	}
	im := &importer{
		g:        g,
		out:      map[*describeNode]importPort{},
		in:       map[*describeNode]*importNode{},
		done:     map[*describeNode]bool{},
		internal: map[*describeNode]*importRepartition{},
		inPort:   map[*describeNode]string{},
	}
	im.findRepartitions()
	im.tableSources()
	im.branches()
	im.joins()
	im.processors()
	im.suppressions()
	im.repartitions()
	im.sourcesAndSinks()
	im.connect()
	im.groupAggregations()
	im.mergeInputs()
	d := im.design(name)
	return d, im.notes(), nil
}

// importNode is a node of the design being built.
type importNode struct {
	kind   designer.Kind
	params map[string]any
	group  int // the sub-topology's index in the text
	pos    int // the text index of the first node it stands for
	sub    int // before (<0) or at (0) pos
	seq    int // creation order
	id     string
	depth  int
	// text is the name of the text's node it was made from, for notes.
	text string
	// suppress is the suppress processor that tells an aggregation was
	// windowed and emits final results: "" when there is none.
	suppress string
	// notes are the node's import notes, without the node.
	notes []string
	// window is, for an aggregation of a stream that may have been
	// windowed, the group-by-key node where a windowed-by would follow.
	window *importNode
}

type importPort struct {
	n    *importNode
	port string
}

type importEdge struct {
	from *importNode
	port string
	to   *importNode
	// toPort is the input port; "" means "in".
	toPort string
}

// importRepartition is a repartition topic with the sinks that write it,
// their null-key filters (nil where there is none) and the sources that
// read it.
type importRepartition struct {
	topic   string
	sinks   []*describeNode
	filters []*describeNode
	sources []*describeNode
}

type importer struct {
	g     *describeGraph
	nodes []*importNode
	edges []*importEdge
	// out is what stands for a text node's output, in for its input.
	out map[*describeNode]importPort
	in  map[*describeNode]*importNode
	// done marks the text nodes that have a design node.
	done map[*describeNode]bool
	// internal marks the sinks, filters and sources of repartitions.
	internal map[*describeNode]*importRepartition
	parts    []*importRepartition
	// inPort is the input port of its design node that a text node's
	// input enters, where it is not "in": a join's sides.
	inPort map[*describeNode]string
	// tableLinks are the stream-table joins and their tables.
	tableLinks []joinTableLink
	// sorted are the nodes in the design's order, once numbered.
	sorted []*importNode
}

func (im *importer) add(kind designer.Kind, group, pos, sub int, params map[string]any) *importNode {
	if params == nil {
		params = map[string]any{}
	}
	n := &importNode{kind: kind, params: params, group: group, pos: pos, sub: sub, seq: len(im.nodes)}
	im.nodes = append(im.nodes, n)
	return n
}

// stand makes n the design node of the text node nd.
func (im *importer) stand(nd *describeNode, n *importNode) {
	if n.text == "" {
		n.text = nd.name
	}
	im.out[nd] = importPort{n, "out"}
	im.in[nd] = n
	im.done[nd] = true
}

// importKindTable is what the importer needs from the catalog.
type importKindTable struct {
	kinds map[designer.Kind]designer.KindSpec
	// prefixes are the Kafka name prefixes of the kinds a processor may
	// have (with an input and an output), longest first, and kindOf the
	// kind each one gives.
	prefixes []string
	kindOf   map[string]designer.Kind
	// operatorName is the description of the common "name" parameter.
	operatorName string
}

// importPreferred settles the prefixes that several kinds declare.
var importPreferred = map[string]designer.Kind{
	"KSTREAM-FILTER-":     designer.KindFilter,
	"KSTREAM-KEY-SELECT-": designer.KindSelectKey,
	"KSTREAM-AGGREGATE-":  designer.KindAggregate,
	"KTABLE-AGGREGATE-":   designer.KindAggregate,
}

// importKinds reads the catalog once.
var importKinds = sync.OnceValue(func() *importKindTable {
	t := &importKindTable{kinds: map[designer.Kind]designer.KindSpec{}, kindOf: map[string]designer.Kind{}}
	for _, k := range designer.Catalog() {
		t.kinds[k.Name] = k
		// Kinds of two inputs (joins) are made from groups of
		// processors, never from one name.
		if len(k.Inputs) != 1 || len(k.Outputs) == 0 && !k.BranchOutputs {
			continue
		}
		for _, p := range k.KafkaNames {
			if _, ok := t.kindOf[p]; !ok {
				t.prefixes = append(t.prefixes, p)
				t.kindOf[p] = k.Name
			}
			if importPreferred[p] == k.Name {
				t.kindOf[p] = k.Name
			}
		}
	}
	slices.SortStableFunc(t.prefixes, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	if p, ok := kindParam(t.kinds[designer.KindOpaque], "name"); ok {
		t.operatorName = p.Description
	}
	return t
})

// kafkaKind is the kind of a processor called name, by the longest Kafka
// name prefix it starts with.
func kafkaKind(name string) (designer.Kind, bool) {
	t := importKinds()
	for _, p := range t.prefixes {
		if strings.HasPrefix(name, p) {
			return t.kindOf[p], true
		}
	}
	return "", false
}

func kindParam(k designer.KindSpec, name string) (designer.Param, bool) {
	for _, p := range k.Params {
		if p.Name == name {
			return p, true
		}
	}
	return designer.Param{}, false
}

// nodeParams are the parameters the text gives a node of kind for nd: its
// operator name and its store.
func nodeParams(kind designer.Kind, nd *describeNode) map[string]any {
	t := importKinds()
	k := t.kinds[kind]
	params := map[string]any{}
	if p, ok := kindParam(k, "name"); ok && p.Description == t.operatorName {
		params["name"] = nd.name
	}
	if _, ok := kindParam(k, "store"); ok && len(nd.stores) > 0 {
		params["store"] = nd.stores[0]
	}
	return params
}

// generatedIndex is the number of a name Kafka Streams generated with
// prefix: prefix followed by digits only.
func generatedIndex(name, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// findRepartitions finds the repartition topics: a sink and a source, both
// with names Kafka Streams gives its own nodes, on a topic ending in
// "-repartition".
func (im *importer) findRepartitions() {
	readers := map[string][]*describeNode{}
	for _, nd := range im.g.nodes {
		if nd.typ == describeSource && !nd.group.global && len(nd.topics) == 1 {
			readers[nd.topics[0]] = append(readers[nd.topics[0]], nd)
		}
	}
	byTopic := map[string]*importRepartition{}
	for _, s := range im.g.nodes {
		t := s.topic
		if s.typ != describeSink || s.group.global || !strings.HasSuffix(t, "-repartition") {
			continue
		}
		_, genSink := generatedIndex(s.name, "KSTREAM-SINK-")
		// A table's group-by names its sink and source after the
		// aggregation: X-sink and X-source.
		pair, paired := strings.CutSuffix(s.name, "-sink")
		var sources []*describeNode
		for _, src := range readers[t] {
			if _, gen := generatedIndex(src.name, "KSTREAM-SOURCE-"); gen || src.name == t+"-source" || paired && src.name == pair+"-source" {
				sources = append(sources, src)
			}
		}
		if len(sources) == 0 || !genSink && s.name != t+"-sink" && !(paired && slices.ContainsFunc(sources, func(src *describeNode) bool { return src.name == pair+"-source" })) {
			continue
		}
		r := byTopic[t]
		if r == nil {
			r = &importRepartition{topic: t}
			byTopic[t] = r
			im.parts = append(im.parts, r)
		}
		r.sinks = append(r.sinks, s)
		r.filters = append(r.filters, im.nullKeyFilter(s, t))
		for _, src := range sources {
			if im.internal[src] == nil {
				r.sources = append(r.sources, src)
				im.internal[src] = r
			}
		}
		im.internal[s] = r
		if f := r.filters[len(r.filters)-1]; f != nil {
			im.internal[f] = r
		}
	}
}

// nullKeyFilter is the filter Kafka Streams puts before the sink s of the
// repartition topic t, or nil: a stateless processor feeding only s, named
// t-filter, or a generated filter numbered after a generated sink (Kafka
// Streams numbers the sink, then the filter, then the source).
func (im *importer) nullKeyFilter(s *describeNode, t string) *describeNode {
	if len(s.pred) != 1 {
		return nil
	}
	f := im.g.byName[s.pred[0]]
	if f.typ != describeProcessor || f.group.global || len(f.succ) != 1 || len(f.pred) != 1 || len(f.stores) != 0 || im.internal[f] != nil {
		return nil
	}
	if f.name == t+"-filter" {
		return f
	}
	fi, genFilter := generatedIndex(f.name, "KSTREAM-FILTER-")
	si, genSink := generatedIndex(s.name, "KSTREAM-SINK-")
	if genFilter && genSink && fi > si {
		return f
	}
	return nil
}

// tableSources collapses a source and the KTABLE-SOURCE- processor it
// feeds into a source-table node.
func (im *importer) tableSources() {
	for _, p := range im.g.nodes {
		if p.typ != describeProcessor || p.group.global || im.internal[p] != nil || len(p.pred) != 1 {
			continue
		}
		src := im.g.byName[p.pred[0]]
		if src.typ != describeSource || im.internal[src] != nil || im.done[src] || len(src.succ) != 1 || len(src.topics) != 1 {
			continue
		}
		if !strings.HasPrefix(p.name, "KTABLE-SOURCE-") && src.name != p.name+"-source" && src.name != p.name+"-table-source" {
			continue
		}
		params := map[string]any{"topic": src.topics[0], "name": p.name}
		_, genTable := generatedIndex(p.name, "KTABLE-SOURCE-")
		if _, genSource := generatedIndex(src.name, "KSTREAM-SOURCE-"); genTable && genSource {
			// A name would name the source "<name>-source" too (as
			// Kafka Streams' Consumed.as does); both generated names
			// come back from the counter instead.
			delete(params, "name")
		}
		if len(p.stores) > 0 {
			params["store"] = p.stores[0]
		}
		n := im.add(designer.KindSourceTable, src.group.index, min(src.index, p.index), 0, params)
		im.stand(src, n)
		im.stand(p, n)
	}
}

// branches collapses branch processors and their per-branch children into
// branch nodes.
func (im *importer) branches() {
	for _, b := range im.g.nodes {
		if b.typ != describeProcessor || b.group.global || im.internal[b] != nil || im.done[b] || len(b.stores) != 0 || len(b.succ) == 0 {
			continue
		}
		generated := strings.HasPrefix(b.name, "KSTREAM-BRANCH-")
		if !generated {
			// split(Named.as("s-")) names the children s-<branch>; ask
			// for two of them before taking a named processor for one.
			if _, known := kafkaKind(b.name); known || len(b.succ) < 2 {
				continue
			}
		}
		type branch struct {
			child *describeNode
			name  string
		}
		var bs []branch
		for _, name := range b.succ {
			c := im.g.byName[name]
			if c.typ != describeProcessor || c.group.global || im.internal[c] != nil || im.done[c] || len(c.pred) != 1 || len(c.stores) != 0 {
				bs = nil
				break
			}
			if suffix, ok := strings.CutPrefix(c.name, b.name); ok && suffix != "" {
				bs = append(bs, branch{c, suffix})
			} else if _, ok := generatedIndex(c.name, "KSTREAM-BRANCHCHILD-"); ok && generated {
				bs = append(bs, branch{c, c.name})
			} else {
				bs = nil
				break
			}
		}
		if len(bs) == 0 {
			continue
		}
		// Creation order where the names tell it: split() numbers its
		// branches 1, 2, ... and the default branch 0; branch() numbers
		// its children in order.
		number := func(br branch) (int, bool) {
			if i, ok := generatedIndex(br.name, "KSTREAM-BRANCHCHILD-"); ok {
				return i, true
			}
			if i, ok := generatedIndex(br.name, ""); ok {
				if i == 0 {
					return int(^uint(0) >> 1), true
				}
				return i, true
			}
			return 0, false
		}
		if !slices.ContainsFunc(bs, func(br branch) bool { _, ok := number(br); return !ok }) {
			slices.SortStableFunc(bs, func(x, y branch) int {
				i, _ := number(x)
				j, _ := number(y)
				return cmp.Compare(i, j)
			})
		}
		list := make([]any, len(bs))
		for i, br := range bs {
			list[i] = map[string]any{"name": br.name}
		}
		n := im.add(designer.KindBranch, b.group.index, b.index, 0, map[string]any{"branches": list, "name": b.name})
		im.stand(b, n)
		for _, br := range bs {
			im.out[br.child] = importPort{n, br.name}
			im.in[br.child] = n
			im.done[br.child] = true
		}
	}
}

// processors gives every other processor its kind.
func (im *importer) processors() {
	for _, p := range im.g.nodes {
		if p.typ != describeProcessor || im.done[p] || im.internal[p] != nil {
			continue
		}
		kind, ok := kafkaKind(p.name)
		switch {
		case p.group.global:
			// The catalog has no global stores or tables.
			kind = designer.KindOpaque
		case ok && kind == designer.KindBranch:
			// A branch processor whose children branches() could not
			// take as its branches: a branch node needs them, so the
			// processor stays what it can be shown as.
			kind = designer.KindOpaque
		case !ok:
			kind = designer.KindOpaque
			// groupBy(Grouped.as("g")) names its key selector g and its
			// repartition topic g-repartition. A stream's has the null-key
			// filter after it, a table's goes straight to the sink.
			if len(p.succ) == 1 {
				next := im.g.byName[p.succ[0]]
				if r := im.internal[next]; r != nil && r.topic == p.name+"-repartition" {
					if next.typ == describeSink {
						kind = designer.KindGroupBy
					} else {
						kind = designer.KindSelectKey
					}
				}
			}
		}
		im.stand(p, im.add(kind, p.group.index, p.index, 0, nodeParams(kind, p)))
	}
}

// suppressions takes a suppress right after a stream's count, reduce or
// aggregate for suppress(Suppressed.untilWindowCloses(...)): the
// aggregation was windowed and emits one final result per window, which
// in a design is a windowed-by node emitting on window close
// (groupAggregations puts it in front of the aggregation). The suppress
// is generated (KTABLE-SUPPRESS-<n>) or named by withName("s"): s with
// the store s-store. Its aggregation must feed only it. Nothing in the
// text tells the window; the note says what to set.
func (im *importer) suppressions() {
	for _, s := range im.g.nodes {
		if s.typ != describeProcessor || s.group.global || im.internal[s] != nil || len(s.pred) != 1 {
			continue
		}
		_, generated := generatedIndex(s.name, "KTABLE-SUPPRESS-")
		named := len(s.stores) == 1 && s.stores[0] == s.name+"-store"
		if !generated && !named {
			continue
		}
		a := im.g.byName[s.pred[0]]
		n, sn := im.in[a], im.in[s]
		if n == nil || sn == nil || sn.kind != designer.KindOpaque || a.typ != describeProcessor || len(a.succ) != 1 || !strings.HasPrefix(a.name, "KSTREAM-") {
			continue
		}
		if n.kind != designer.KindCount && n.kind != designer.KindReduce && n.kind != designer.KindAggregate {
			continue
		}
		im.nodes = slices.DeleteFunc(im.nodes, func(x *importNode) bool { return x == sn })
		n.suppress = s.name
		im.out[s] = importPort{n, "out"}
		im.in[s] = n
		im.done[s] = true
	}
}

// repartitions makes the repartition nodes, or lets a table's group-by
// stand for its repartition.
func (im *importer) repartitions() {
	for _, r := range im.parts {
		base := strings.TrimSuffix(r.topic, "-repartition")
		if len(r.sinks) == 1 && r.filters[0] == nil && len(r.sinks[0].pred) == 1 {
			up := im.g.byName[r.sinks[0].pred[0]]
			if n := im.in[up]; n != nil && n.kind == designer.KindGroupBy && len(up.succ) == 1 {
				n.params["name"] = base
				im.in[r.sinks[0]] = n
				im.done[r.sinks[0]] = true
				for _, src := range r.sources {
					im.stand(src, n)
				}
				continue
			}
		}
		first := r.sinks[0]
		pos := first.index
		for _, nd := range slices.Concat(r.sinks, r.filters, r.sources) {
			if nd != nil {
				pos = min(pos, nd.index)
			}
		}
		n := im.add(designer.KindRepartition, first.group.index, pos, 0, map[string]any{"name": base})
		for i, s := range r.sinks {
			im.stand(s, n)
			if f := r.filters[i]; f != nil {
				im.stand(f, n)
			}
		}
		for _, src := range r.sources {
			im.stand(src, n)
		}
	}
}

// sourcesAndSinks makes the remaining sources and sinks.
func (im *importer) sourcesAndSinks() {
	for _, nd := range im.g.nodes {
		if im.done[nd] {
			continue
		}
		switch nd.typ {
		case describeSource:
			if len(nd.topics) > 1 {
				// One source per topic, merged under the source's name.
				merge := im.add(designer.KindMerge, nd.group.index, nd.index, 0, map[string]any{"name": nd.name})
				for _, t := range nd.topics {
					src := im.add(designer.KindSourceStream, nd.group.index, nd.index, -1, map[string]any{"topic": t})
					im.edges = append(im.edges, &importEdge{from: src, port: "out", to: merge})
				}
				im.stand(nd, merge)
				continue
			}
			params := map[string]any{"name": nd.name}
			switch {
			case len(nd.topics) == 1:
				params["topic"] = nd.topics[0]
			case nd.pattern != "":
				params["topic"] = nd.pattern
			}
			im.stand(nd, im.add(designer.KindSourceStream, nd.group.index, nd.index, 0, params))
		case describeSink:
			params := map[string]any{"name": nd.name}
			if nd.topic != "" {
				params["topic"] = nd.topic
			}
			im.stand(nd, im.add(designer.KindSink, nd.group.index, nd.index, 0, params))
		}
	}
}

// connect turns the "-->" lists into edges.
func (im *importer) connect() {
	seen := map[importEdge]bool{}
	for _, e := range im.edges {
		seen[*e] = true
	}
	for _, nd := range im.g.nodes {
		for _, name := range nd.succ {
			next := im.g.byName[name]
			from, to := im.out[nd], im.in[next]
			e := importEdge{from.n, from.port, to, im.inPort[next]}
			if from.n == nil || to == nil || from.n == to || seen[e] {
				continue
			}
			seen[e] = true
			im.edges = append(im.edges, &e)
		}
	}
	im.linkTables(seen)
}

// incoming lists the edges into each node.
func (im *importer) incoming() map[*importNode][]*importEdge {
	ins := map[*importNode][]*importEdge{}
	for _, e := range im.edges {
		ins[e.to] = append(ins[e.to], e)
	}
	return ins
}

// types computes what each node's output gives, as validation would.
func (im *importer) types() map[*importNode]designer.DataType {
	t := importKinds()
	ins := im.incoming()
	types := map[*importNode]designer.DataType{}
	visiting := map[*importNode]bool{}
	var typeOf func(n *importNode) designer.DataType
	typeOf = func(n *importNode) designer.DataType {
		if ty, ok := types[n]; ok {
			return ty
		}
		if visiting[n] {
			return ""
		}
		visiting[n] = true
		k := t.kinds[n.kind]
		var ty designer.DataType
		switch {
		case k.BranchOutputs:
			ty = designer.Stream
		case len(k.Outputs) > 0 && len(k.Outputs[0].Types) > 0:
			ty = k.Outputs[0].Types[0]
		}
		var in designer.DataType
		if es := ins[n]; len(es) > 0 {
			in = typeOf(es[0].from)
		}
		switch ty {
		case designer.SameAsInput:
			ty = in
		case designer.GroupedInput:
			switch in {
			case designer.Stream:
				ty = designer.GroupedStream
			case designer.Table:
				ty = designer.GroupedTable
			default:
				ty = ""
			}
		}
		types[n] = ty
		return ty
	}
	for _, n := range im.nodes {
		typeOf(n)
	}
	return types
}

// groupAggregations puts a group-by-key node before every aggregation fed
// by a stream.
func (im *importer) groupAggregations() {
	types := im.types()
	ins := im.incoming()
	for _, n := range slices.Clone(im.nodes) {
		if n.kind != designer.KindCount && n.kind != designer.KindReduce && n.kind != designer.KindAggregate {
			continue
		}
		es := ins[n]
		if !slices.ContainsFunc(es, func(e *importEdge) bool { return types[e.from] == designer.Stream }) {
			if n.suppress != "" {
				n.notes = append(n.notes, fmt.Sprintf("%s after it is taken for suppress(Suppressed.untilWindowCloses(...)), a window's final result, but the importer cannot tell what feeds it: put group-by-key and a windowed-by node emitting %s before it, with the window's type, size and grace", n.suppress, designer.EmitOnWindowClose))
			}
			continue
		}
		into := n
		if n.suppress != "" {
			w := im.add(designer.KindWindowedBy, n.group, n.pos, n.sub-1, map[string]any{"emit": designer.EmitOnWindowClose})
			w.text = n.suppress
			w.notes = append(w.notes, fmt.Sprintf("taken for suppress(Suppressed.untilWindowCloses(...)) after %s: the aggregation was windowed and emits one final result per window. describe() does not print the window: set its type (tumbling unless set), size (gap for session windows, and advance for hopping ones) and grace. A suppress(untilTimeLimit(...)) prints the same and has no counterpart in a design: then delete this node", n.text))
			im.edges = append(im.edges, &importEdge{from: w, port: "out", to: n})
			into = w
		}
		g := im.add(designer.KindGroupByKey, n.group, n.pos, into.sub-1, nil)
		for _, e := range es {
			e.to = g
		}
		im.edges = append(im.edges, &importEdge{from: g, port: "out", to: into})
		if n.suppress == "" {
			n.window = g
		}
	}
}

// notes lists the import notes of the numbered nodes, in their order.
func (im *importer) notes() []ImportNote {
	var notes []ImportNote
	for _, n := range im.sorted {
		if n.window != nil {
			notes = append(notes, ImportNote{Node: n.id, Kind: n.kind, Processor: n.text, Message: fmt.Sprintf(
				"describe() prints a windowed aggregation (windowedBy) as it prints an unwindowed one, without the window, so it is imported unwindowed: if it was windowed, put a windowed-by node between %s and %s and set its type, size and grace (emit %s for an emitStrategy(onWindowClose))",
				n.window.id, n.id, designer.EmitOnWindowClose)})
		}
		if n.kind == designer.KindAggregate && (strings.HasPrefix(n.text, "KSTREAM-AGGREGATE-") || strings.HasPrefix(n.text, "KTABLE-AGGREGATE-")) {
			notes = append(notes, ImportNote{Node: n.id, Kind: n.kind, Processor: n.text,
				Message: "describe() names a count() as it names an aggregate(), so it is imported as an aggregate: if it was a count, make it a count node"})
		}
		for _, m := range n.notes {
			notes = append(notes, ImportNote{Node: n.id, Kind: n.kind, Processor: n.text, Message: m})
		}
	}
	return notes
}

// mergeInputs puts a merge before an input that takes one edge but has
// several, when they are all streams.
func (im *importer) mergeInputs() {
	t := importKinds()
	types := im.types()
	ins := im.incoming()
	for _, n := range slices.Clone(im.nodes) {
		k := t.kinds[n.kind]
		es := ins[n]
		if n.kind == designer.KindOpaque || len(k.Inputs) != 1 || k.Inputs[0].Multiple || len(es) < 2 || !slices.Contains(k.Inputs[0].Types, designer.Stream) {
			continue
		}
		if slices.ContainsFunc(es, func(e *importEdge) bool { return types[e.from] != designer.Stream }) {
			continue
		}
		m := im.add(designer.KindMerge, n.group, n.pos, n.sub-1, nil)
		for _, e := range es {
			e.to = m
		}
		im.edges = append(im.edges, &importEdge{from: m, port: "out", to: n})
	}
}

// design numbers and lays out the nodes and returns the design.
func (im *importer) design(name string) *designer.Design {
	nodes := slices.Clone(im.nodes)
	slices.SortStableFunc(nodes, func(a, b *importNode) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.sub, b.sub), cmp.Compare(a.seq, b.seq))
	})
	im.sorted = nodes
	order := map[*importNode]int{}
	for i, n := range nodes {
		n.id = "n" + strconv.Itoa(i+1)
		order[n] = i
	}
	im.layout(nodes)
	slices.SortStableFunc(im.edges, func(a, b *importEdge) int {
		return cmp.Or(cmp.Compare(order[a.from], order[b.from]), cmp.Compare(order[a.to], order[b.to]), strings.Compare(a.port, b.port), strings.Compare(a.toPort, b.toPort))
	})
	d := &designer.Design{Name: name, Version: designer.FormatVersion, Nodes: []designer.Node{}, Edges: []designer.Edge{}}
	for _, n := range nodes {
		dn := designer.Node{ID: n.id, Kind: n.kind, Position: designer.Position{X: float64(n.depth * importGap)}}
		if len(n.params) > 0 {
			dn.Params = n.params
		}
		d.Nodes = append(d.Nodes, dn)
	}
	rows := im.rows(nodes)
	for i, n := range nodes {
		d.Nodes[i].Position.Y = float64(rows[n] * importGap)
	}
	for _, e := range im.edges {
		toPort := e.toPort
		if toPort == "" {
			toPort = "in"
		}
		d.Edges = append(d.Edges, designer.Edge{From: e.from.id, FromPort: e.port, To: e.to.id, ToPort: toPort})
	}
	return d
}

// layout gives every node its depth: the length of the longest path to it
// from a node without inputs.
func (im *importer) layout(nodes []*importNode) {
	ins := map[*importNode]int{}
	outs := map[*importNode][]*importNode{}
	for _, e := range im.edges {
		ins[e.to]++
		outs[e.from] = append(outs[e.from], e.to)
	}
	var queue []*importNode
	for _, n := range nodes {
		if ins[n] == 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range outs[n] {
			m.depth = max(m.depth, n.depth+1)
			if ins[m]--; ins[m] == 0 {
				queue = append(queue, m)
			}
		}
	}
}

// rows gives every node its row: each sub-topology has a band of rows as
// high as its most crowded column, and nodes of one column take its rows in
// order.
func (im *importer) rows(nodes []*importNode) map[*importNode]int {
	groups := len(im.g.groups)
	used := make([]map[int]int, groups)
	slot := map[*importNode]int{}
	for _, n := range nodes {
		if used[n.group] == nil {
			used[n.group] = map[int]int{}
		}
		slot[n] = used[n.group][n.depth]
		used[n.group][n.depth]++
	}
	start := make([]int, groups)
	next := 0
	for g := range groups {
		start[g] = next
		height := 0
		for _, c := range used[g] {
			height = max(height, c)
		}
		next += max(height, 1)
	}
	rows := map[*importNode]int{}
	for _, n := range nodes {
		rows[n] = start[n.group] + slot[n]
	}
	return rows
}
