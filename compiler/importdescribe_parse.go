package compiler

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file reads the text of Kafka Streams' Topology.describe(): the
// format of InternalTopologyBuilder.TopologyDescription.toString and its
// nodes' toString, which Braid's runtime prints byte for byte (see
// runtime/streams/testdata/describe/RULES.md):
//
//	Topologies:
//	   Sub-topology: 0
//	    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
//	      --> KSTREAM-FILTER-0000000001
//	    Processor: KSTREAM-FILTER-0000000001 (stores: [])
//	      --> KSTREAM-SINK-0000000002
//	      <-- KSTREAM-SOURCE-0000000000
//	    Sink: KSTREAM-SINK-0000000002 (topic: output)
//	      <-- KSTREAM-FILTER-0000000001
//
//	  Sub-topology: 1 for global store (will not generate tasks)
//	    Source: ... (topics: [t])
//	      --> P
//	    Processor: P (stores: [s])
//	      --> none
//	      <-- ...
//
// It also takes the variations found in the wild: indentation by any
// spaces or tabs, Windows line endings, a "Topology: <name>:" header (named
// topologies), sources of a pattern ("(topics: topic-\d+)" as Kafka prints
// it, or "(topicPattern: ...)"), sinks of a TopicNameExtractor ("(extractor
// class: ...)"), and the older one-line form of Kafka 1.0's documentation
// ("Sub-topologies:", "Source: X(topics: t) --> Y", "Global Stores:" and
// "none").

// describeNodeType is what a node line declares.
type describeNodeType int

const (
	describeSource describeNodeType = iota
	describeProcessor
	describeSink
)

func (t describeNodeType) String() string {
	switch t {
	case describeSource:
		return "source"
	case describeProcessor:
		return "processor"
	}
	return "sink"
}

// describeGroup is a sub-topology, or a global store's.
type describeGroup struct {
	index  int // in text order, from 0
	global bool
	nodes  []*describeNode
	// oldGlobals marks the "Global Stores:" section of the old format,
	// which may hold the single line "none".
	oldGlobals bool
}

// describeNode is one Source, Processor or Sink of the text.
type describeNode struct {
	typ   describeNodeType
	name  string
	line  int
	index int // in text order, from 0
	group *describeGroup

	topics    []string // a source's topics
	pattern   string   // a source's topic pattern, when it has one
	stores    []string // a processor's stores
	topic     string   // a sink's topic
	extractor string   // a sink's topic-name extractor, when it has one

	succ, pred         []string
	succLine, predLine int // 0 until the "-->" or "<--" list is read
}

// describeGraph is a parsed describe() text.
type describeGraph struct {
	groups []*describeGroup
	nodes  []*describeNode
	byName map[string]*describeNode
}

// describeError is a problem at a line of the text.
func describeError(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// describeQuote shows a line in an error message, shortened if long.
func describeQuote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}

type describeParser struct {
	g       *describeGraph
	header  bool // a "Topologies:" style header was read
	started bool // any non-blank line was read
	group   *describeGroup
	node    *describeNode // the node whose arrow lines may follow
}

// parseDescribe reads a describe() text and checks that its arrow lists
// name existing nodes and agree with each other.
func parseDescribe(text string) (*describeGraph, error) {
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	p := &describeParser{g: &describeGraph{byName: map[string]*describeNode{}}}
	for i, raw := range lines {
		if !utf8.ValidString(raw) {
			return nil, describeError(i+1, "expected UTF-8 text, found %s", describeQuote(raw))
		}
		if err := p.line(i+1, strings.TrimSpace(raw)); err != nil {
			return nil, err
		}
	}
	end := len(lines) + 1
	if strings.HasSuffix(text, "\n") {
		end = len(lines) // the empty string after the last newline
	}
	if !p.started {
		return nil, describeError(1, `expected "Topologies:", found an empty text`)
	}
	if err := p.finishNode(end, ""); err != nil {
		return nil, err
	}
	if err := p.g.check(); err != nil {
		return nil, err
	}
	return p.g, nil
}

func (p *describeParser) line(n int, s string) error {
	if s == "" {
		return nil
	}
	first := !p.started
	p.started = true
	switch {
	case s == "Topologies:" || s == "Sub-topologies:" || strings.HasPrefix(s, "Topology: ") && strings.HasSuffix(s, ":"):
		if !first {
			return describeError(n, "a second header %s: expected one describe() text", describeQuote(s))
		}
		p.header = true
		return nil
	case strings.HasPrefix(s, "Sub-topology:"):
		if err := p.finishNode(n, s); err != nil {
			return err
		}
		return p.subtopology(n, strings.TrimSpace(strings.TrimPrefix(s, "Sub-topology:")))
	case s == "Global Stores:":
		if err := p.finishNode(n, s); err != nil {
			return err
		}
		p.newGroup(true).oldGlobals = true
		return nil
	case s == "none" && p.group != nil && p.group.oldGlobals && len(p.group.nodes) == 0:
		return nil
	case strings.HasPrefix(s, "Source:"), strings.HasPrefix(s, "Processor:"), strings.HasPrefix(s, "Sink:"):
		if err := p.finishNode(n, s); err != nil {
			return err
		}
		if p.group == nil {
			return describeError(n, "expected \"Sub-topology: N\" before the first node, found %s", describeQuote(s))
		}
		return p.nodeLine(n, s)
	case strings.HasPrefix(s, "-->"), strings.HasPrefix(s, "<--"):
		if p.node == nil {
			return describeError(n, "expected a Source, Processor or Sink line before %s", describeQuote(s))
		}
		return p.arrows(n, s)
	}
	if first {
		return describeError(n, `expected "Topologies:" at the start of a describe() text, found %s`, describeQuote(s))
	}
	return describeError(n, `expected "Sub-topology: N", "Source: ", "Processor: ", "Sink: ", "--> " or "<-- ", found %s`, describeQuote(s))
}

func (p *describeParser) newGroup(global bool) *describeGroup {
	grp := &describeGroup{index: len(p.g.groups), global: global}
	p.g.groups = append(p.g.groups, grp)
	p.group = grp
	return grp
}

// subtopology reads what follows "Sub-topology:".
func (p *describeParser) subtopology(n int, rest string) error {
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return describeError(n, `expected a number after "Sub-topology:", found %s`, describeQuote(rest))
	}
	tail := strings.TrimSpace(rest[digits:])
	switch {
	case tail == "":
		p.newGroup(false)
	case strings.HasPrefix(tail, "for global store"):
		p.newGroup(true)
	default:
		return describeError(n, `expected the end of the line or "for global store" after "Sub-topology: %s", found %s`, rest[:digits], describeQuote(tail))
	}
	return nil
}

// finishNode checks that the node before line n got the arrow lines it
// must have; s is line n's text ("" at the end of the text).
func (p *describeParser) finishNode(n int, s string) error {
	nd := p.node
	p.node = nil
	if nd == nil {
		return nil
	}
	found := "the end of the text"
	if s != "" {
		found = describeQuote(s)
	}
	needSucc := nd.typ != describeSink && nd.succLine == 0
	needPred := nd.typ != describeSource && nd.predLine == 0
	switch {
	case nd.typ == describeProcessor && needSucc && needPred:
		return describeError(n, `expected "--> " or "<-- " after a node line (processor %q), found %s`, nd.name, found)
	case needSucc:
		return describeError(n, `expected "--> " after %s %q, found %s`, nd.typ, nd.name, found)
	case needPred:
		return describeError(n, `expected "<-- " after %s %q, found %s`, nd.typ, nd.name, found)
	}
	return nil
}

// attribute keys of node lines, by node type.
var describeAttrs = map[describeNodeType][]string{
	describeSource:    {"(topics:", "(topicPattern:"},
	describeProcessor: {"(stores:"},
	describeSink:      {"(topic:", "(extractor class:"},
}

// nodeLine reads a Source, Processor or Sink line.
func (p *describeParser) nodeLine(n int, s string) error {
	var typ describeNodeType
	var rest string
	switch {
	case strings.HasPrefix(s, "Source:"):
		typ, rest = describeSource, s[len("Source:"):]
	case strings.HasPrefix(s, "Processor:"):
		typ, rest = describeProcessor, s[len("Processor:"):]
	default:
		typ, rest = describeSink, s[len("Sink:"):]
	}
	at, key := -1, ""
	for _, k := range describeAttrs[typ] {
		if i := strings.Index(rest, k); i >= 0 && (at < 0 || i < at) {
			at, key = i, k
		}
	}
	if at < 0 {
		want := map[describeNodeType]string{
			describeSource:    `"(topics: [...])"`,
			describeProcessor: `"(stores: [...])"`,
			describeSink:      `"(topic: ...)" or "(extractor class: ...)"`,
		}[typ]
		return describeError(n, "expected %s after the %s's name, found %s", want, typ, describeQuote(s))
	}
	name := strings.TrimSpace(rest[:at])
	if name == "" {
		return describeError(n, "expected a name after %q, found %s", s[:len(s)-len(rest)], describeQuote(s))
	}
	after := rest[at+len(key):]
	// The one-line form puts the arrow lists after the closing parenthesis.
	inline := len(after)
	for _, a := range []string{"-->", "<--"} {
		if i := strings.Index(after, a); i >= 0 && i < inline {
			inline = i
		}
	}
	attr := strings.TrimSpace(after[:inline])
	if !strings.HasSuffix(attr, ")") {
		return describeError(n, "expected %q to end with \")\", found %s", key, describeQuote(s))
	}
	value := strings.TrimSpace(attr[:len(attr)-1])
	if prev, ok := p.g.byName[name]; ok {
		return describeError(n, "%s %q is already defined on line %d", typ, name, prev.line)
	}
	nd := &describeNode{typ: typ, name: name, line: n, index: len(p.g.nodes), group: p.group}
	if err := nd.setAttr(n, key, value, s); err != nil {
		return err
	}
	p.g.nodes = append(p.g.nodes, nd)
	p.g.byName[name] = nd
	p.group.nodes = append(p.group.nodes, nd)
	p.node = nd
	if tail := strings.TrimSpace(after[inline:]); tail != "" {
		return p.arrows(n, tail)
	}
	return nil
}

// setAttr sets what the attribute key of line n (s) says of nd: value
// is what stands between key and the closing parenthesis.
func (nd *describeNode) setAttr(n int, key, value, s string) error {
	switch key {
	case "(topics:":
		if strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]") {
			nd.topics = describeSplit(value[1 : len(value)-1])
		} else if names := describeSplit(value); len(names) > 0 && describeTopicNames(names) {
			// The old format printed topics without brackets.
			nd.topics = names
		} else if value != "" {
			// Kafka prints a pattern's source as the pattern itself.
			nd.pattern = value
		}
	case "(topicPattern:":
		nd.pattern = value
	case "(stores:":
		nd.stores = describeSplit(strings.TrimSuffix(strings.TrimPrefix(value, "["), "]"))
	case "(topic:":
		if value == "" {
			return describeError(n, "expected a topic after \"(topic:\", found %s", describeQuote(s))
		}
		nd.topic = value
	case "(extractor class:":
		nd.extractor = value
		if nd.extractor == "" {
			nd.extractor = "?"
		}
	}
	return nil
}

// arrows reads "--> a, b" and "<-- c" lists, one or (in the one-line
// form) both on the line.
func (p *describeParser) arrows(n int, s string) error {
	nd := p.node
	for s != "" {
		arrow := s[:3]
		rest := s[3:]
		next := len(rest)
		for _, a := range []string{"-->", "<--"} {
			if i := strings.Index(rest, a); i >= 0 && i < next {
				next = i
			}
		}
		list := strings.TrimSpace(rest[:next])
		s = strings.TrimSpace(rest[next:])
		if list == "" {
			return describeError(n, "expected node names or \"none\" after %q", arrow)
		}
		var names []string
		if list != "none" {
			seen := map[string]bool{}
			for _, part := range strings.Split(list, ",") {
				name := strings.TrimSpace(part)
				if name == "" {
					return describeError(n, "expected a node name between the commas after %q, found %s", arrow, describeQuote(list))
				}
				if !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			}
		}
		if arrow == "-->" {
			switch {
			case nd.typ == describeSink:
				return describeError(n, "sink %q has no successors: expected no \"-->\" line", nd.name)
			case nd.succLine != 0:
				return describeError(n, "a second \"-->\" line for %s %q (the first is on line %d)", nd.typ, nd.name, nd.succLine)
			}
			nd.succ, nd.succLine = names, n
		} else {
			switch {
			case nd.typ == describeSource:
				return describeError(n, "source %q has no predecessors: expected no \"<--\" line", nd.name)
			case nd.predLine != 0:
				return describeError(n, "a second \"<--\" line for %s %q (the first is on line %d)", nd.typ, nd.name, nd.predLine)
			}
			nd.pred, nd.predLine = names, n
		}
	}
	return nil
}

// check makes sure every name in an arrow list is a node of the right
// type, that the "-->" and "<--" lists agree, and that there is no cycle.
func (g *describeGraph) check() error {
	set := func(names []string) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	succs := make([]map[string]bool, len(g.nodes))
	preds := make([]map[string]bool, len(g.nodes))
	for i, nd := range g.nodes {
		succs[i], preds[i] = set(nd.succ), set(nd.pred)
	}
	for _, nd := range g.nodes {
		for _, name := range nd.succ {
			to, ok := g.byName[name]
			switch {
			case !ok:
				return describeError(nd.succLine, "%s %q lists %q after \"-->\", but there is no node of that name", nd.typ, nd.name, name)
			case to.typ == describeSource:
				return describeError(nd.succLine, "%s %q lists source %q after \"-->\", but a source has no predecessors", nd.typ, nd.name, name)
			case !preds[to.index][nd.name]:
				return describeError(nd.succLine, "%s %q lists %q after \"-->\", but %s %q (line %d) does not list %q after \"<--\"", nd.typ, nd.name, name, to.typ, name, to.line, nd.name)
			}
		}
		for _, name := range nd.pred {
			from, ok := g.byName[name]
			switch {
			case !ok:
				return describeError(nd.predLine, "%s %q lists %q after \"<--\", but there is no node of that name", nd.typ, nd.name, name)
			case from.typ == describeSink:
				return describeError(nd.predLine, "%s %q lists sink %q after \"<--\", but a sink has no successors", nd.typ, nd.name, name)
			case !succs[from.index][nd.name]:
				return describeError(nd.predLine, "%s %q lists %q after \"<--\", but %s %q (line %d) does not list %q after \"-->\"", nd.typ, nd.name, name, from.typ, name, from.line, nd.name)
			}
		}
	}
	// A cycle: depth-first search, colouring nodes grey while on the path.
	const white, grey, black = 0, 1, 2
	colour := make([]int, len(g.nodes))
	type frame struct {
		nd   *describeNode
		next int
	}
	for _, start := range g.nodes {
		if colour[start.index] != white {
			continue
		}
		stack := []frame{{nd: start}}
		colour[start.index] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(top.nd.succ) {
				colour[top.nd.index] = black
				stack = stack[:len(stack)-1]
				continue
			}
			to := g.byName[top.nd.succ[top.next]]
			top.next++
			switch colour[to.index] {
			case grey:
				return describeError(top.nd.succLine, "%s %q and %q are in a cycle: a topology has none", top.nd.typ, top.nd.name, to.name)
			case white:
				colour[to.index] = grey
				stack = append(stack, frame{nd: to})
			}
		}
	}
	return nil
}

// describeSplit splits "a, b" into names, dropping empty ones.
func describeSplit(s string) []string {
	var names []string
	for _, part := range strings.Split(s, ",") {
		if name := strings.TrimSpace(part); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// describeTopicNames reports whether every name could be a Kafka topic's:
// 1 to 249 letters, digits, '.', '_' and '-'.
func describeTopicNames(names []string) bool {
	for _, n := range names {
		if n == "" || len(n) > 249 {
			return false
		}
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return false
			}
		}
	}
	return true
}
