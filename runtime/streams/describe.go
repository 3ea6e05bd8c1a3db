package streams

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Describe returns the topology in the text format of Kafka Streams'
// Topology.describe(), byte for byte, so that tools and people who read
// those texts can read Braid's. Repartition topics appear without the
// application id, as there.
//
// Kafka Streams orders each node's successors and predecessors with a
// tree set whose comparator reads subtree sizes that change while the
// set is filled, visiting nodes in Java hash-map order. The order is a
// consequence of that implementation, not a rule, so describe.go
// reproduces the implementation: Java's string hash, HashMap iteration
// and red-black TreeMap insertion.
func (t *Topology) Describe() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n ")
	for _, st := range t.subtopologies {
		sb.WriteString("  Sub-topology: ")
		sb.WriteString(strconv.Itoa(st.id))
		sb.WriteString("\n")
		for _, n := range describeSubtopology(st) {
			sb.WriteString("    ")
			n.write(&sb)
			sb.WriteString("\n")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func (t *Topology) String() string { return t.Describe() }

// descNode mirrors Kafka Streams' AbstractNode while describing.
type descNode struct {
	g            *graphNode
	size         int
	predecessors *javaTreeSet
	successors   *javaTreeSet
}

func (n *descNode) write(sb *strings.Builder) {
	switch n.g.kind {
	case sourceNode:
		sb.WriteString("Source: " + n.g.name + " (topics: " + javaSetString(n.g.topics) + ")")
		sb.WriteString("\n      --> " + n.successors.names())
	case processorNode:
		sb.WriteString("Processor: " + n.g.name + " (stores: " + javaSetString(describedStores(n.g)) + ")")
		sb.WriteString("\n      --> " + n.successors.names())
		sb.WriteString("\n      <-- " + n.predecessors.names())
	case sinkNode:
		sb.WriteString("Sink: " + n.g.name + " (topic: " + n.g.topic + ")")
		sb.WriteString("\n      <-- " + n.predecessors.names())
	}
}

// describedStores lists g's stores as Kafka Streams does: without those it
// would not have materialized (storeSpec.lazy).
func describedStores(g *graphNode) []string {
	var out []string
	for _, name := range g.stores {
		lazy := slices.ContainsFunc(g.storeSpecs, func(s *storeSpec) bool { return s.name == name && s.lazy })
		if !lazy {
			out = append(out, name)
		}
	}
	return out
}

// describeSubtopology connects the nodes of st as Kafka Streams does and
// returns them in its order: largest subtree first, then by name.
func describeSubtopology(st *subtopology) []*descNode {
	byGraph := make(map[*graphNode]*descNode, len(st.nodes))
	names := make([]string, len(st.nodes))
	byName := make(map[string]*descNode, len(st.nodes))
	for i, g := range st.nodes {
		d := &descNode{g: g, size: 1, predecessors: &javaTreeSet{}, successors: &javaTreeSet{}}
		byGraph[g] = d
		names[i] = g.name
		byName[g.name] = d
	}
	var updateSize func(n *descNode, delta int)
	updateSize = func(n *descNode, delta int) {
		n.size += delta
		n.predecessors.each(func(p *descNode) { updateSize(p, delta) })
	}
	for _, name := range javaHashOrder(names) {
		node := byName[name]
		for _, pg := range node.g.parents {
			pred := byGraph[pg]
			node.predecessors.add(pred)
			pred.successors.add(node)
			updateSize(pred, node.size)
		}
	}
	out := make([]*descNode, 0, len(st.nodes))
	for _, g := range st.nodes {
		out = append(out, byGraph[g])
	}
	slices.SortFunc(out, compareDescNodes)
	return out
}

// compareDescNodes is Kafka Streams' NodeComparator.
func compareDescNodes(a, b *descNode) int {
	if a == b {
		return 0
	}
	if a.size != b.size {
		return b.size - a.size
	}
	return compareJavaStrings(a.g.name, b.g.name)
}

// compareJavaStrings orders as java.lang.String.compareTo: by UTF-16 code
// units.
func compareJavaStrings(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// javaStringHash is java.lang.String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// javaHashOrder returns keys, given in insertion order, in the iteration
// order of a java.util.HashMap (or HashSet) with default settings holding
// them: by bucket, and by insertion order within a bucket.
func javaHashOrder(keys []string) []string {
	capacity := 16
	for len(keys) > capacity*3/4 {
		capacity *= 2
	}
	bucket := func(s string) int {
		h := uint32(javaStringHash(s))
		return int((h ^ (h >> 16)) & uint32(capacity-1))
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(bucket(a), bucket(b)) })
	return out
}

// javaSetString prints items as Java's HashSet<String>.toString does.
func javaSetString(items []string) string {
	var uniq []string
	for _, s := range items {
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	return "[" + strings.Join(javaHashOrder(uniq), ", ") + "]"
}

// javaTreeSet is a java.util.TreeSet of nodes ordered by
// compareDescNodes evaluated at insertion time: a red-black tree as
// java.util.TreeMap builds it, rotations included, because later
// insertions compare against whatever nodes the rotations put on their
// path.
type javaTreeSet struct {
	root *rbNode
}

type rbNode struct {
	item                *descNode
	left, right, parent *rbNode
	black               bool
}

func (s *javaTreeSet) add(item *descNode) {
	if s.root == nil {
		s.root = &rbNode{item: item, black: true}
		return
	}
	t := s.root
	var parent *rbNode
	var c int
	for t != nil {
		parent = t
		c = compareDescNodes(item, t.item)
		switch {
		case c < 0:
			t = t.left
		case c > 0:
			t = t.right
		default:
			return
		}
	}
	e := &rbNode{item: item, parent: parent}
	if c < 0 {
		parent.left = e
	} else {
		parent.right = e
	}
	s.fixAfterInsertion(e)
}

func (s *javaTreeSet) each(fn func(*descNode)) {
	var walk func(n *rbNode)
	walk = func(n *rbNode) {
		if n == nil {
			return
		}
		walk(n.left)
		fn(n.item)
		walk(n.right)
	}
	walk(s.root)
}

func (s *javaTreeSet) names() string {
	var names []string
	s.each(func(n *descNode) { names = append(names, n.g.name) })
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func isBlack(n *rbNode) bool { return n == nil || n.black }

func parentOf(n *rbNode) *rbNode {
	if n == nil {
		return nil
	}
	return n.parent
}

func leftOf(n *rbNode) *rbNode {
	if n == nil {
		return nil
	}
	return n.left
}

func rightOf(n *rbNode) *rbNode {
	if n == nil {
		return nil
	}
	return n.right
}

func setBlack(n *rbNode, black bool) {
	if n != nil {
		n.black = black
	}
}

// fixAfterInsertion restores the red-black properties after inserting x,
// following the CLR algorithm as java.util.TreeMap does.
func (s *javaTreeSet) fixAfterInsertion(x *rbNode) {
	x.black = false
	for x != nil && x != s.root && !x.parent.black {
		if parentOf(x) == leftOf(parentOf(parentOf(x))) {
			y := rightOf(parentOf(parentOf(x)))
			if !isBlack(y) {
				setBlack(parentOf(x), true)
				setBlack(y, true)
				setBlack(parentOf(parentOf(x)), false)
				x = parentOf(parentOf(x))
				continue
			}
			if x == rightOf(parentOf(x)) {
				x = parentOf(x)
				s.rotateLeft(x)
			}
			setBlack(parentOf(x), true)
			setBlack(parentOf(parentOf(x)), false)
			s.rotateRight(parentOf(parentOf(x)))
		} else {
			y := leftOf(parentOf(parentOf(x)))
			if !isBlack(y) {
				setBlack(parentOf(x), true)
				setBlack(y, true)
				setBlack(parentOf(parentOf(x)), false)
				x = parentOf(parentOf(x))
				continue
			}
			if x == leftOf(parentOf(x)) {
				x = parentOf(x)
				s.rotateRight(x)
			}
			setBlack(parentOf(x), true)
			setBlack(parentOf(parentOf(x)), false)
			s.rotateLeft(parentOf(parentOf(x)))
		}
	}
	s.root.black = true
}

func (s *javaTreeSet) rotateLeft(p *rbNode) {
	if p == nil {
		return
	}
	r := p.right
	p.right = r.left
	if r.left != nil {
		r.left.parent = p
	}
	r.parent = p.parent
	switch {
	case p.parent == nil:
		s.root = r
	case p.parent.left == p:
		p.parent.left = r
	default:
		p.parent.right = r
	}
	r.left = p
	p.parent = r
}

func (s *javaTreeSet) rotateRight(p *rbNode) {
	if p == nil {
		return
	}
	l := p.left
	p.left = l.right
	if l.right != nil {
		l.right.parent = p
	}
	l.parent = p.parent
	switch {
	case p.parent == nil:
		s.root = l
	case p.parent.right == p:
		p.parent.right = l
	default:
		p.parent.left = l
	}
	l.right = p
	p.parent = l
}
