package designer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Problem is one thing wrong with a design, tied to the node and the
// parameter it is about so that the editor can show it there.
type Problem struct {
	// Node is the id of the node; "" for the design itself (or for a node
	// without an id, which Message then names by its index).
	Node string `json:"node,omitempty"`
	// Param is the parameter ("" when the problem is the node's, such as
	// an unconnected input). For the design, "name".
	Param   string `json:"param,omitempty"`
	Message string `json:"message"`
	// Kind is the node's kind, for messages; "" for the design.
	Kind Kind `json:"kind,omitempty"`
}

// Error says where and what: `node "f1" (filter), parameter "predicate":
// required`.
func (p Problem) Error() string {
	var b strings.Builder
	if p.Node == "" && p.Kind == "" {
		b.WriteString("design")
		if p.Param != "" {
			fmt.Fprintf(&b, ", field %q", p.Param)
		}
	} else {
		if p.Node != "" {
			fmt.Fprintf(&b, "node %q", p.Node)
		} else {
			b.WriteString("node")
		}
		if p.Kind != "" {
			fmt.Fprintf(&b, " (%s)", p.Kind)
		}
		if p.Param != "" {
			fmt.Fprintf(&b, ", parameter %q", p.Param)
		}
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem Validate found, in the order of the design's
// nodes (design-level problems first), then of the parameters as the
// node's kind declares them.
type Problems []Problem

// Error lists the problems, one a line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// ForNode returns the problems of the node with the given id.
func (ps Problems) ForNode(id string) Problems {
	var out Problems
	for _, p := range ps {
		if p.Node == id {
			out = append(out, p)
		}
	}
	return out
}

// MaxNameLength is the longest topic name Kafka accepts, and so the
// longest store or repartition name.
const MaxNameLength = 249

// ValidTopicName reports why s is not a Kafka topic name, or "" when it
// is one: 1 to 249 letters, digits, '.', '_' and '-', but not "." or "..".
func ValidTopicName(s string) string {
	if s == "." || s == ".." {
		return fmt.Sprintf("%q is not a valid topic name", s)
	}
	return validNameFragment(s)
}

// validNameFragment says why s cannot be part of a topic name, or "".
func validNameFragment(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > MaxNameLength {
		return fmt.Sprintf("is %d characters long; at most %d are allowed", len(s), MaxNameLength)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("%q holds %q: only letters, digits, '.', '_' and '-' are allowed", s, r)
		}
	}
	return ""
}

// aggregations are the kinds that take a grouped or windowed stream.
var aggregations = map[Kind]bool{KindCount: true, KindReduce: true, KindAggregate: true}

// derivedTableKinds derive a table from a table, and keep it in a store of
// their own when their "store" parameter names one; of a stream they keep
// nothing.
var derivedTableKinds = map[Kind]bool{KindFilter: true, KindMapValues: true}

// sourceKinds read topics.
var sourceKinds = map[Kind]bool{KindSourceStream: true, KindSourceTable: true}

// keyChangers give records a new key (after them a key is no longer
// windowed).
var keyChangers = map[Kind]bool{KindMap: true, KindFlatMap: true, KindSelectKey: true, KindGroupBy: true}

// isOperatorName reports whether k's "name" parameter is the operator's
// name (the common name parameter) rather than a repartition topic's.
func isOperatorName(k *KindSpec) bool {
	p, ok := paramOf(k, "name")
	return ok && p.Description == nameParam().Description
}

func paramOf(k *KindSpec, name string) (Param, bool) {
	for _, p := range k.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

func portOf(ports []Port, name string) (Port, bool) {
	for _, p := range ports {
		if p.Name == name {
			return p, true
		}
	}
	return Port{}, false
}

// MaxNodes is the most nodes a design may have, and MaxEdges the most
// edges: the editor renders a design of this size in a moment, while one of
// several thousand nodes freezes the browser tab for minutes. Validate
// reports a design over either as its only problem (see CheckSize), the
// API refuses to save, import, validate, compile or preview one, and the
// editor, which learns the limits from GET /api/catalog, says so rather
// than render one.
const (
	MaxNodes = 1000
	MaxEdges = 2 * MaxNodes
)

// CheckSize returns the problem of a design with more than MaxNodes nodes
// or MaxEdges edges, or nil: "the design has 5000 nodes; at most 1000 are
// supported". Its Param is "nodes" or "edges".
func CheckSize(d *Design) *Problem {
	if d == nil {
		return nil
	}
	if n := len(d.Nodes); n > MaxNodes {
		return &Problem{Param: "nodes", Message: fmt.Sprintf("the design has %d nodes; at most %d are supported", n, MaxNodes)}
	}
	if n := len(d.Edges); n > MaxEdges {
		return &Problem{Param: "edges", Message: fmt.Sprintf("the design has %d edges; at most %d are supported", n, MaxEdges)}
	}
	return nil
}

// Validate checks d against the catalog and returns every problem it
// finds, or none: the design's name; node ids; kinds; parameters (known,
// required, well-typed, applicable: an advance only on a hopping window);
// edges (known nodes and ports, matching data types, one edge per input
// except merge's); that every input and every output but a sink's is
// connected; cycles; that aggregations follow a grouping and windows an
// aggregation; subtractors, session mergers and the stores of filters
// and map-values where they belong; windowed key serdes only where keys
// are windowed; a stream-stream join's window and join inputs partitioned
// differently (see joins); and names that must be unique (operator, store
// and repartition names, source topics).
// Expressions are checked for presence only; the compiler parses them.
// A design over the size limits (CheckSize) has that as its only problem.
func Validate(d *Design) Problems {
	if d == nil {
		return Problems{{Message: "no design"}}
	}
	if p := CheckSize(d); p != nil {
		return Problems{*p}
	}
	v := newValidator(d)
	v.design()
	v.nodes()
	v.checkEdges()
	v.connections()
	v.cycles()
	v.semantics()
	v.joins()
	v.names()
	return v.sorted()
}

type problem struct {
	Problem
	node  int // index in d.Nodes; -1 for the design
	param int // the parameter's index in its kind, 0 for none
}

type edgeRef struct {
	edge     int
	from, to int // node indexes, -1 when unknown
	// fromOK and toOK say the ports exist.
	fromOK, toOK bool
}

type validator struct {
	d     *Design
	kinds []*KindSpec    // per node; nil for an unknown kind
	index map[string]int // node id -> first node with it
	probs []problem
	edges []edgeRef
	// in and out: per node, per port, the edges there.
	in, out []map[string][]int
	// types memoizes outType per node and port; visiting guards cycles.
	types    map[[2]string]DataType
	visiting map[int]bool
	// badBranches marks branch nodes whose branches parameter is wrong:
	// their output ports are unknown, and not checked.
	badBranches []bool
	// windowed memoizes windowedKey.
	windowed map[int]tristate
}

// tristate is a yes, a no, or "cannot tell".
type tristate int

const (
	unknown tristate = iota
	yes
	no
)

func newValidator(d *Design) *validator {
	v := &validator{
		d:           d,
		kinds:       make([]*KindSpec, len(d.Nodes)),
		index:       map[string]int{},
		in:          make([]map[string][]int, len(d.Nodes)),
		out:         make([]map[string][]int, len(d.Nodes)),
		types:       map[[2]string]DataType{},
		visiting:    map[int]bool{},
		badBranches: make([]bool, len(d.Nodes)),
		windowed:    map[int]tristate{},
	}
	for i, n := range d.Nodes {
		if k, ok := KindByName(n.Kind); ok {
			v.kinds[i] = &k
		}
		if _, dup := v.index[n.ID]; n.ID != "" && !dup {
			v.index[n.ID] = i
		}
		v.in[i] = map[string][]int{}
		v.out[i] = map[string][]int{}
	}
	return v
}

// add records a problem of node i (-1: the design) and parameter param.
func (v *validator) add(i int, param, format string, args ...any) {
	p := problem{node: i, Problem: Problem{Param: param, Message: fmt.Sprintf(format, args...)}}
	if i >= 0 {
		n := v.d.Nodes[i]
		p.Node, p.Kind = n.ID, n.Kind
		if k := v.kinds[i]; k != nil && param != "" {
			p.param = len(k.Params) + 1
			for j, kp := range k.Params {
				if kp.Name == param {
					p.param = j + 1
				}
			}
		}
	}
	v.probs = append(v.probs, p)
}

func (v *validator) sorted() Problems {
	sort.SliceStable(v.probs, func(a, b int) bool {
		pa, pb := v.probs[a], v.probs[b]
		if pa.node != pb.node {
			return pa.node < pb.node
		}
		if pa.param != pb.param {
			return pa.param < pb.param
		}
		return pa.Param < pb.Param
	})
	out := make(Problems, len(v.probs))
	for i, p := range v.probs {
		out[i] = p.Problem
	}
	return out
}

func (v *validator) design() {
	if v.d.Name == "" {
		v.add(-1, "name", "required")
	} else if why := ValidDesignName(v.d.Name); why != "" {
		v.add(-1, "name", "%s", why)
	}
}

func (v *validator) nodes() {
	seen := map[string]bool{}
	for i, n := range v.d.Nodes {
		switch {
		case n.ID == "":
			v.add(i, "", "nodes[%d] has no id", i)
		case seen[n.ID]:
			v.add(i, "", "another node has the id %q", n.ID)
		}
		seen[n.ID] = true
		k := v.kinds[i]
		if k == nil {
			if n.Kind == "" {
				v.add(i, "", "has no kind")
			} else {
				v.add(i, "", "unknown kind %q", n.Kind)
			}
			continue
		}
		if k.Name == KindOpaque {
			v.add(i, "", "unknown processor imported from describe(): replace it with a real operator")
		}
		v.params(i, k)
	}
}

// params checks the parameters of node i one by one.
func (v *validator) params(i int, k *KindSpec) {
	n := v.d.Nodes[i]
	names := make([]string, 0, len(n.Params))
	for name := range n.Params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, known := paramOf(k, name)
		if !known {
			v.add(i, name, "unknown parameter")
			continue
		}
		val := n.Params[name]
		if !IsSet(val) {
			continue
		}
		if p.When != nil && !conditionHolds(n, p.When) {
			v.add(i, name, "applies only when %s is %s", p.When.Param, strings.Join(p.When.Values, " or "))
			continue
		}
		if why := checkValue(p, val); why != "" {
			v.add(i, name, "%s", why)
			if p.Type == BranchesParam {
				v.badBranches[i] = true
			}
		}
	}
	for _, p := range k.Params {
		if p.Required && p.Default == nil && !IsSet(n.Params[p.Name]) {
			v.add(i, p.Name, "required")
			if p.Type == BranchesParam {
				v.badBranches[i] = true
			}
		}
	}
	if k.Name == KindWindowedBy {
		v.window(i)
	}
}

func conditionHolds(n Node, c *Condition) bool {
	got := ParamString(n, c.Param)
	for _, want := range c.Values {
		if got == want {
			return true
		}
	}
	return false
}

// describe names the JSON kind of a parameter value for messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return "the number " + string(v)
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	if _, ok := intOf(v); ok {
		return fmt.Sprintf("the number %v", v)
	}
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("the number %v", f)
	}
	return fmt.Sprintf("a %T", v)
}

// checkValue says what is wrong with val, set for parameter p, or "".
func checkValue(p Param, val any) string {
	switch p.Type {
	case StringParam, ExpressionParam:
		s, ok := val.(string)
		if !ok {
			return fmt.Sprintf("must be a string, not %s", describe(val))
		}
		if p.Type == ExpressionParam && strings.TrimSpace(s) == "" {
			return "is blank: write an expression or leave it empty"
		}
	case IntParam:
		i, ok := intOf(val)
		if !ok {
			return fmt.Sprintf("must be a whole number, not %s", describe(val))
		}
		if i < 1 {
			return fmt.Sprintf("must be at least 1, not %d", i)
		}
	case DurationParam:
		_, err := durationOf(val)
		switch {
		case err == errNotString:
			return fmt.Sprintf(`must be a duration such as "500ms", "10s" or "1m30s", not %s`, describe(val))
		case err != nil && err.Error() == "negative":
			return fmt.Sprintf("must not be negative, not %s", describe(val))
		case err != nil:
			return fmt.Sprintf(`%s is not a duration: write a number and a unit, such as "500ms", "10s" or "1m30s"`, describe(val))
		}
	case EnumParam, SerdeParam:
		choices := p.Enum
		if p.Type == SerdeParam && len(choices) == 0 {
			choices = Serdes
		}
		s, ok := val.(string)
		if ok {
			for _, c := range choices {
				if s == c {
					return ""
				}
			}
		}
		return fmt.Sprintf("must be one of %s, not %s", strings.Join(choices, ", "), describe(val))
	case TopicParam:
		s, ok := val.(string)
		if !ok {
			return fmt.Sprintf("must be a topic name, not %s", describe(val))
		}
		if why := ValidTopicName(s); why != "" {
			return why
		}
	case BranchesParam:
		bs, err := branchesOf(val)
		if err != nil {
			return err.Error()
		}
		return checkBranches(bs)
	}
	return ""
}

// checkBranches says what is wrong with a branch node's branches, or "".
func checkBranches(bs []Branch) string {
	if len(bs) == 0 {
		return "needs at least one branch"
	}
	var why []string
	names := map[string]bool{}
	for j, b := range bs {
		switch {
		case b.Name == "":
			why = append(why, fmt.Sprintf("branch %d has no name", j+1))
		case names[b.Name]:
			why = append(why, fmt.Sprintf("two branches are called %q", b.Name))
		default:
			if w := validNameFragment(b.Name); w != "" {
				why = append(why, fmt.Sprintf("branch name %s", w))
			}
		}
		names[b.Name] = true
		if b.Predicate == "" && j != len(bs)-1 {
			why = append(why, fmt.Sprintf("branch %q has no predicate: only the last branch may be the default", b.Name))
		}
	}
	return strings.Join(why, "; ")
}

// window checks what a windowed-by node needs for its window type.
func (v *validator) window(i int) {
	n := v.d.Nodes[i]
	typ := ParamString(n, "type")
	need := func(name string) (time.Duration, bool) {
		val := n.Params[name]
		if !IsSet(val) {
			v.add(i, name, "required for %s windows", typ)
			return 0, false
		}
		d, err := durationOf(val)
		if err != nil {
			return 0, false // reported by checkValue
		}
		if d == 0 {
			v.add(i, name, "must be more than 0")
			return 0, false
		}
		return d, true
	}
	switch typ {
	case Tumbling, Sliding:
		need("size")
	case Hopping:
		size, okSize := need("size")
		adv, okAdv := need("advance")
		if okSize && okAdv && adv > size {
			v.add(i, "advance", "must not be more than the size (%v)", size)
		}
	case Session:
		need("gap")
	}
}

// edges checks each edge's nodes and ports and records the valid ones.
func (v *validator) checkEdges() {
	for e, ed := range v.d.Edges {
		from, okFrom := v.index[ed.From]
		to, okTo := v.index[ed.To]
		r := edgeRef{edge: e, from: -1, to: -1}
		switch {
		case !okFrom && !okTo:
			v.add(-1, "", "edge %d goes from unknown node %q to unknown node %q", e+1, ed.From, ed.To)
			continue
		case !okFrom:
			v.add(to, "", "edge into input %q comes from unknown node %q", ed.ToPort, ed.From)
		case !okTo:
			v.add(from, "", "edge from output %q goes to unknown node %q", ed.FromPort, ed.To)
		}
		if okFrom {
			r.from = from
			if k := v.kinds[from]; k != nil && !v.badBranches[from] {
				if _, ok := portOf(outputPorts(*k, v.d.Nodes[from]), ed.FromPort); ok {
					r.fromOK = true
				} else if len(k.Outputs) == 0 && !k.BranchOutputs {
					v.add(from, "", "has no outputs, but an edge leaves it for %q", ed.To)
				} else {
					v.add(from, "", "no output port %q (edge to %q); it has %s", ed.FromPort, ed.To, portNames(outputPorts(*k, v.d.Nodes[from])))
				}
			}
		}
		if okTo {
			r.to = to
			if k := v.kinds[to]; k != nil {
				if _, ok := portOf(k.Inputs, ed.ToPort); ok {
					r.toOK = true
				} else if len(k.Inputs) == 0 {
					v.add(to, "", "has no inputs, but an edge from %q enters it", ed.From)
				} else {
					v.add(to, "", "no input port %q (edge from %q); it has %s", ed.ToPort, ed.From, portNames(k.Inputs))
				}
			}
		}
		if !okFrom || !okTo {
			continue
		}
		idx := len(v.edges)
		v.edges = append(v.edges, r)
		if r.fromOK {
			v.out[from][ed.FromPort] = append(v.out[from][ed.FromPort], idx)
		}
		if r.toOK {
			v.in[to][ed.ToPort] = append(v.in[to][ed.ToPort], idx)
		}
	}
}

func portNames(ports []Port) string {
	if len(ports) == 0 {
		return "none"
	}
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = strconv.Quote(p.Name)
	}
	return strings.Join(names, ", ")
}

// connections checks that inputs take one edge (unless Multiple), that
// every input is connected, that every output is (a windowed-by's to an
// aggregation), and that edges carry the data types their inputs take.
func (v *validator) connections() {
	for i, n := range v.d.Nodes {
		k := v.kinds[i]
		if k == nil {
			continue
		}
		for _, p := range k.Inputs {
			switch edges := v.in[i][p.Name]; {
			case len(edges) == 0:
				v.add(i, "", "%s is not connected", portLabel("input", p.Name, len(k.Inputs)))
			case len(edges) > 1 && !p.Multiple:
				v.add(i, "", "%s has %d edges; it takes one (use a merge to join streams)", portLabel("input", p.Name, len(k.Inputs)), len(edges))
			}
		}
		outs := outputPorts(*k, n)
		if k.Name == KindWindowedBy {
			ok := len(v.out[i]["out"]) > 0
			for _, e := range v.out[i]["out"] {
				if to := v.edges[e].to; to >= 0 && (v.kinds[to] == nil || !aggregations[v.kinds[to].Name]) {
					ok = false
				}
			}
			if !ok {
				v.add(i, "", "a window needs an aggregation after it: connect its output to count, reduce or aggregate only")
			}
			continue
		}
		if v.badBranches[i] {
			continue
		}
		for _, p := range outs {
			// A table may end the graph: its store is what is queried.
			if len(v.out[i][p.Name]) == 0 && !slices.Contains(p.Types, Table) {
				v.add(i, "", "%s is not connected", portLabel("output", p.Name, len(outs)))
			}
		}
	}
	for _, r := range v.edges {
		if !r.fromOK || !r.toOK {
			continue
		}
		ed := v.d.Edges[r.edge]
		t := v.outType(r.from, ed.FromPort)
		if t == "" {
			continue
		}
		port, _ := portOf(v.kinds[r.to].Inputs, ed.ToPort)
		if takes(port, t) {
			continue
		}
		fromKind, toKind := v.kinds[r.from].Name, v.kinds[r.to].Name
		switch {
		case fromKind == KindWindowedBy:
			// The window says it needs an aggregation.
		case aggregations[toKind] && (t == Stream || t == Table):
			v.add(r.to, "", "%s needs a grouping: connect it after group-by-key, group-by or windowed-by", toKind)
		case toKind == KindWindowedBy && t == GroupedTable:
			v.add(r.to, "", "only grouped streams can be windowed, not a grouped table (from %q)", ed.From)
		case toKind == KindWindowedBy && (t == Stream || t == Table):
			v.add(r.to, "", "a window needs a grouping: connect it after group-by-key or group-by")
		default:
			v.add(r.to, "", "%s takes %s, not a %s (from %q)", portLabel("input", ed.ToPort, len(v.kinds[r.to].Inputs)), typeList(port.Types), t, ed.From)
		}
	}
}

func portLabel(what, name string, ports int) string {
	if ports == 1 && (name == "in" || name == "out") {
		return what
	}
	return fmt.Sprintf("%s %q", what, name)
}

func typeList(ts []DataType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	if len(s) == 1 {
		return "a " + s[0]
	}
	return "a " + strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func takes(p Port, t DataType) bool {
	for _, pt := range p.Types {
		if pt == t {
			return true
		}
	}
	return false
}

// inType is the data type entering node i: that of the first edge into
// its first input, if it is known and the input takes it; "" otherwise.
func (v *validator) inType(i int) DataType {
	k := v.kinds[i]
	if k == nil || len(k.Inputs) == 0 {
		return ""
	}
	edges := v.in[i][k.Inputs[0].Name]
	if len(edges) == 0 {
		return ""
	}
	r := v.edges[edges[0]]
	if !r.fromOK {
		return ""
	}
	t := v.outType(r.from, v.d.Edges[r.edge].FromPort)
	if !takes(k.Inputs[0], t) {
		return ""
	}
	return t
}

// outType is the data type leaving node i through port: the port's,
// resolving SameAsInput and GroupedInput from the node's input; "" when
// unknown (an unknown kind or port, an unconnected or mistyped input, a
// cycle).
func (v *validator) outType(i int, port string) DataType {
	key := [2]string{strconv.Itoa(i), port}
	if t, ok := v.types[key]; ok {
		return t
	}
	if v.visiting[i] {
		return ""
	}
	v.visiting[i] = true
	defer delete(v.visiting, i)
	var t DataType
	if k := v.kinds[i]; k != nil {
		if p, ok := portOf(outputPorts(*k, v.d.Nodes[i]), port); ok && len(p.Types) > 0 {
			t = p.Types[0]
			if v.mistypedInput(i) {
				t = ""
			}
			switch t {
			case SameAsInput:
				t = v.inType(i)
			case GroupedInput:
				switch v.inType(i) {
				case Stream:
					t = GroupedStream
				case Table:
					t = GroupedTable
				default:
					t = ""
				}
			}
		}
	}
	v.types[key] = t
	return t
}

// mistypedInput reports whether an edge into node i carries a type its
// input does not take; the node's output type is then unknown, so that
// one mistake is reported once rather than all the way downstream.
func (v *validator) mistypedInput(i int) bool {
	k := v.kinds[i]
	for _, p := range k.Inputs {
		for _, e := range v.in[i][p.Name] {
			r := v.edges[e]
			if !r.fromOK {
				continue
			}
			if t := v.outType(r.from, v.d.Edges[r.edge].FromPort); t != "" && !takes(p, t) {
				return true
			}
		}
	}
	return false
}

// cycles reports each cycle once, on its first node in design order.
func (v *validator) cycles() {
	succ := make([][]int, len(v.d.Nodes))
	self := make([]bool, len(v.d.Nodes))
	for _, r := range v.edges {
		if r.from >= 0 && r.to >= 0 {
			succ[r.from] = append(succ[r.from], r.to)
			if r.from == r.to {
				self[r.from] = true
			}
		}
	}
	for _, comp := range stronglyConnected(succ) {
		if len(comp) == 1 && !self[comp[0]] {
			continue
		}
		sort.Ints(comp)
		if len(comp) == 1 {
			v.add(comp[0], "", "is connected to itself: a topology cannot have cycles")
			continue
		}
		ids := make([]string, len(comp))
		for j, n := range comp {
			ids[j] = strconv.Quote(v.d.Nodes[n].ID)
		}
		v.add(comp[0], "", "is part of a cycle (%s): a topology cannot have cycles", strings.Join(ids, ", "))
	}
}

// stronglyConnected returns the strongly connected components of the
// graph succ (Tarjan's algorithm, iterative so that no design can
// overflow the stack).
func stronglyConnected(succ [][]int) [][]int {
	n := len(succ)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var comps [][]int
	next := 0
	type frame struct{ node, child int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		calls := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			u := f.node
			if f.child < len(succ[u]) {
				w := succ[u][f.child]
				f.child++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{w, 0})
				} else if onStack[w] && index[w] < low[u] {
					low[u] = index[w]
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].node
				if low[u] < low[p] {
					low[p] = low[u]
				}
			}
			if low[u] == index[u] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == u {
						break
					}
				}
				comps = append(comps, comp)
			}
		}
	}
	return comps
}

// semantics checks what depends on what a node receives: subtractors,
// session mergers, retention, a group-by's value mapper, the store of a
// filter or map-values, windowed serdes.
func (v *validator) semantics() {
	for i, n := range v.d.Nodes {
		k := v.kinds[i]
		if k == nil {
			continue
		}
		in := v.inType(i)
		switch k.Name {
		case KindReduce, KindAggregate:
			adder := "reducer"
			if k.Name == KindAggregate {
				adder = "aggregator"
			}
			switch {
			case in == GroupedTable && !IsSet(n.Params["subtractor"]):
				v.add(i, "subtractor", "required on a grouped table: a row's old value is taken out with the subtractor as its new one is added with the %s", adder)
			case (in == GroupedStream || in == WindowedStream) && IsSet(n.Params["subtractor"]):
				v.add(i, "subtractor", "applies only to a grouped table (after group-by on a table)")
			}
		}
		if aggregations[k.Name] && in != "" {
			window, windowed := v.windowOf(i)
			if in == WindowedStream && windowed {
				typ := ParamString(window, "type")
				if k.Name == KindAggregate {
					if typ == Session && !IsSet(n.Params["merger"]) {
						v.add(i, "merger", "session windows need a merger")
					}
					if typ != Session && IsSet(n.Params["merger"]) {
						v.add(i, "merger", "applies only after session windows")
					}
				}
				if r := n.Params["retention"]; IsSet(r) {
					if ret, err := durationOf(r); err == nil {
						length := ParamDuration(window, "size")
						if typ == Session {
							length = ParamDuration(window, "gap")
						}
						if min := length + ParamDuration(window, "grace"); ret < min {
							v.add(i, "retention", "must be at least the window's %s plus its grace, %v", map[bool]string{true: "gap", false: "size"}[typ == Session], min)
						}
					}
				}
			}
			if in != WindowedStream {
				if IsSet(n.Params["retention"]) {
					v.add(i, "retention", "applies only to windowed aggregations")
				}
				if k.Name == KindAggregate && IsSet(n.Params["merger"]) {
					v.add(i, "merger", "applies only after session windows")
				}
			}
		}
		if k.Name == KindGroupBy && in == Stream && IsSet(n.Params["value"]) {
			v.add(i, "value", "applies only when grouping a table")
		}
		if derivedTableKinds[k.Name] && in == Stream && IsSet(n.Params["store"]) {
			v.add(i, "store", "applies only to a table's %s: a stream's %s keeps no state, so leave it empty", k.Name, k.Name)
		}
		v.serdes(i, k)
	}
}

// windowOf returns the windowed-by node feeding aggregation i.
func (v *validator) windowOf(i int) (Node, bool) {
	for _, e := range v.in[i]["in"] {
		if r := v.edges[e]; r.from >= 0 && v.kinds[r.from] != nil && v.kinds[r.from].Name == KindWindowedBy {
			return v.d.Nodes[r.from], true
		}
	}
	return Node{}, false
}

func isWindowedSerde(s string) bool { return s == "windowed" || s == "windowed-json" }

// serdes checks that windowed serdes are used for windowed keys only.
func (v *validator) serdes(i int, k *KindSpec) {
	n := v.d.Nodes[i]
	for _, p := range k.Params {
		if p.Type != SerdeParam {
			continue
		}
		s, _ := n.Params[p.Name].(string)
		if !isWindowedSerde(s) {
			continue
		}
		switch {
		case p.Name != "keySerde":
			v.add(i, p.Name, "%s is for the keys of a windowed aggregation's results, not for values", s)
		case sourceKinds[k.Name]:
			v.add(i, p.Name, "%s is for the keys of a windowed aggregation's results, not for reading topics", s)
		case k.Name == KindSink:
			if v.windowedKey(i) == no {
				v.add(i, p.Name, "the keys here are not windowed: %s is for the results of a windowed aggregation", s)
			}
		}
	}
	if k.Name == KindSink {
		if s, _ := n.Params["keySerde"].(string); IsSet(s) && !isWindowedSerde(s) {
			if v.windowedKey(i) == yes {
				v.add(i, "keySerde", "the keys here are windowed: use windowed or windowed-json, or leave it unset")
			}
		}
	}
}

// windowedKey reports whether the records node i receives have windowed
// keys: yes, no, or unknown (an unknown kind, a mistyped input, inputs
// that disagree, a cycle).
func (v *validator) windowedKey(i int) tristate {
	if w, ok := v.windowed[i]; ok {
		return w
	}
	v.windowed[i] = unknown // until known; guards cycles
	k := v.kinds[i]
	if k == nil || len(k.Inputs) == 0 || v.mistypedInput(i) {
		return unknown
	}
	w := unknown
	for n, e := range v.in[i][k.Inputs[0].Name] {
		r := v.edges[e]
		if !r.fromOK {
			return unknown
		}
		from := v.windowedOut(r.from)
		if from == unknown || (n > 0 && from != w) {
			return unknown
		}
		w = from
	}
	v.windowed[i] = w
	return w
}

// windowedOut reports whether node i's output has windowed keys.
func (v *validator) windowedOut(i int) tristate {
	k := v.kinds[i]
	switch {
	case k == nil:
		return unknown
	case sourceKinds[k.Name] || keyChangers[k.Name]:
		return no
	case aggregations[k.Name]:
		switch v.inType(i) {
		case "":
			return unknown
		case WindowedStream:
			return yes
		}
		return no
	}
	return v.windowedKey(i)
}

// names checks operator, store and repartition names and source topics.
func (v *validator) names() {
	ops, stores, reparts, topics := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	claim := func(m map[string]int, name string, i int, param, what string) {
		if first, dup := m[name]; dup {
			verb := "used"
			if param == "topic" {
				verb = "read"
			}
			v.add(i, param, "%s %q is also %s by node %q", what, name, verb, v.d.Nodes[first].ID)
			return
		}
		m[name] = i
	}
	for i, n := range v.d.Nodes {
		k := v.kinds[i]
		if k == nil {
			continue
		}
		opName := n.Name
		pname, _ := n.Params["name"].(string)
		if isOperatorName(k) && pname != "" {
			if opName != "" && opName != pname {
				v.add(i, "name", "is %q but the node's name is %q", pname, opName)
			}
			if opName == "" {
				opName = pname
			}
		}
		if opName != "" {
			claim(ops, opName, i, "name", "name")
		}
		if !isOperatorName(k) && pname != "" {
			if _, ok := paramOf(k, "name"); ok {
				if why := validNameFragment(pname); why != "" {
					v.add(i, "name", "%s (it names the topic <app>-%s-repartition)", why, pname)
				} else {
					claim(reparts, pname, i, "name", "repartition name")
				}
			}
		}
		if store, _ := n.Params["store"].(string); store != "" {
			if _, ok := paramOf(k, "store"); ok {
				if why := validNameFragment(store); why != "" {
					v.add(i, "store", "%s (it names the topic <app>-%s-changelog)", why, store)
				} else {
					claim(stores, store, i, "store", "store")
				}
			}
		}
		if sourceKinds[k.Name] {
			if topic, _ := n.Params["topic"].(string); topic != "" {
				claim(topics, topic, i, "topic", "topic")
			}
		}
	}
}
