package streams

import (
	"errors"
	"fmt"
)

// Function types of the stateless operators. Returning an error sends the
// record to the processing error handler (Config.ProcessingErrors).
type (
	// Predicate decides whether a record passes.
	Predicate func(key, value any) (bool, error)
	// KeyValueMapper maps a record to a new key and value.
	KeyValueMapper func(key, value any) (newKey, newValue any, err error)
	// ValueMapper maps a value to a new value; the key stays.
	ValueMapper func(value any) (any, error)
	// KeySelector computes a new key for a record; the value stays.
	KeySelector func(key, value any) (any, error)
	// FlatMapper maps a record to zero or more records.
	FlatMapper func(key, value any) ([]KeyValue, error)
	// ValueFlatMapper maps a value to zero or more values, each with the
	// record's key.
	ValueFlatMapper func(value any) ([]any, error)
	// Action observes a record.
	Action func(key, value any)
)

// KeyValue is one record produced by a FlatMapper.
type KeyValue struct {
	Key, Value any
}

// Builder describes a topology. Call its Stream method to start, chain
// operators on the returned Stream, and call Build. A Builder collects
// every mistake made while building and Build reports them all.
type Builder struct {
	nodes []*graphNode
	// index is the counter behind generated names; like Kafka Streams'
	// it advances once per generated name, so that the same DSL calls
	// yield the same names as there.
	index int
	errs  []error
	// method and callStart are the DSL call whose options were resolved
	// last and the operators there were then, for BuildError.
	method    string
	callStart int
	// sourceTopics maps a topic to the source node that reads it: a topic
	// read by two sources would be consumed twice.
	sourceTopics map[string]*graphNode
	// copartitioned pairs the nodes whose records a join brings
	// together: their source topics must be co-partitioned.
	copartitioned [][2]*graphNode
	built         bool
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{sourceTopics: make(map[string]*graphNode)}
}

// Stream reads the given topics. It takes Named, WithSerdes (default: the
// Config's default serdes) and WithTimestamps.
func (b *Builder) Stream(topics []string, opts ...Option) *Stream {
	return b.source("Stream", "topics", topics, opts)
}

// source adds the source of the DSL call op, which reads topics, the
// call's argument arg: Builder.Table's source reports its mistakes as
// Table's, about its topic.
func (b *Builder) source(op, arg string, topics []string, opts []Option) *Stream {
	o := b.resolveOptions(op, optName|optSerdes|optTimestamps, opts)
	n := b.addNode(b.nameOrGenerate(o.name, "KSTREAM-SOURCE-"), sourceNode)
	n.topics = append([]string(nil), topics...)
	n.keySerde, n.valueSerde, n.timestamps = o.keySerde, o.valueSerde, o.timestamps
	if len(topics) == 0 {
		b.errorAt(blame{arg: arg}, "source %q: no topics given", n.name)
	}
	for _, t := range topics {
		if err := validTopicName(t); err != nil {
			b.errorAt(blame{arg: arg}, "source %q: %v", n.name, err)
			continue
		}
		if other, ok := b.sourceTopics[t]; ok {
			b.errorAt(blame{arg: arg}, "source %q: topic %q is already read by source %q", n.name, t, other.name)
			continue
		}
		b.sourceTopics[t] = n
	}
	return &Stream{b: b, node: n, keySerde: o.keySerde, valueSerde: o.valueSerde}
}

// Build checks the topology and returns it, or every problem found: each
// a *BuildError, joined by errors.Join.
func (b *Builder) Build() (*Topology, error) {
	if b.built {
		return nil, &BuildError{Method: "Build", Err: errors.New("Build was already called on this Builder")}
	}
	b.built = true
	errs := append([]error(nil), b.errs...)
	names := make(map[string]bool, len(b.nodes))
	for _, n := range b.nodes {
		for _, spec := range n.storeSpecs {
			// A store Kafka Streams would not have has no cache
			// either: its table forwards every update at once.
			spec.cached = spec.cached && !spec.lazy
		}
		if names[n.name] {
			errs = append(errs, &BuildError{Operator: n.name, Option: "Named", Err: fmt.Errorf("operator name %q is used twice", n.name)})
		}
		names[n.name] = true
	}
	if len(b.sourceTopics) == 0 && len(errs) == 0 {
		errs = append(errs, &BuildError{Err: errors.New("the topology reads no topic: call Builder.Stream")})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return newTopology(b.nodes, b.copartitioned), nil
}

// nameOrGenerate returns given, or a generated name when given is empty.
// It advances the counter either way, as Kafka Streams does, so that
// naming one operator does not rename the ones after it.
func (b *Builder) nameOrGenerate(given, prefix string) string {
	generated := b.newName(prefix)
	if given == "" {
		return generated
	}
	if err := validNodeName(given); err != nil {
		b.errs = append(b.errs, &BuildError{Operator: given, Method: b.method, Option: "Named", Err: err})
	}
	return given
}

// begin notes that the DSL call op starts, for the BuildErrors it finds.
func (b *Builder) begin(op string) {
	b.method, b.callStart = op, len(b.nodes)
}

// blame is the part of a DSL call a mistake is about, as BuildError
// names it: an option and the field of its argument, or a positional
// argument; zero for the call as a whole.
type blame struct{ option, arg string }

// storeNameBlame blames Materialized's store name, when the caller gave one:
// a name the Builder generated is nobody's mistake.
func storeNameBlame(o StoreOptions) blame {
	if o.Name == "" {
		return blame{}
	}
	return blame{option: "Materialized", arg: "Name"}
}

// errorAt records a mistake of the current DSL call, about the part at.
func (b *Builder) errorAt(at blame, format string, args ...any) {
	e := &BuildError{Method: b.method, Option: at.option, Arg: at.arg, Err: fmt.Errorf(format, args...)}
	if len(b.nodes) > b.callStart {
		e.Operator = b.nodes[len(b.nodes)-1].name
	}
	b.errs = append(b.errs, e)
}

// burnAnonymousStore advances the counter once more when opts carry a
// Materialized without a store name. Kafka Streams' count(Materialized)
// of a grouped stream and of time and session windows generates a store
// name there and throws it away, and later names count on it.
func (b *Builder) burnAnonymousStore(opts []Option, prefix string) {
	var o operatorOptions
	for _, opt := range opts {
		if opt.kind == optStore && opt.apply != nil {
			opt.apply(&o)
		}
	}
	if o.storeSet && o.store.Name == "" {
		b.newName(prefix + "STATE-STORE-")
	}
}

// addNode adds a node with a final name.
func (b *Builder) addNode(name string, kind nodeKind) *graphNode {
	n := &graphNode{name: name, kind: kind, order: len(b.nodes)}
	b.nodes = append(b.nodes, n)
	return n
}

// newName generates a name the way Kafka Streams does: a prefix and a
// ten-digit counter shared by all generated names.
func (b *Builder) newName(prefix string) string {
	name := fmt.Sprintf("%s%010d", prefix, b.index)
	b.index++
	return name
}

func connect(parent, child *graphNode) {
	parent.children = append(parent.children, child)
	child.parents = append(child.parents, parent)
}

func validNodeName(name string) error {
	if len(name) > 249 {
		return fmt.Errorf("operator name %q is longer than 249 characters", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("operator name %q contains a control character", name)
		}
	}
	return nil
}

// validTopicName applies Kafka's rules for topic names.
func validTopicName(t string) error {
	switch {
	case t == "":
		return errors.New("topic name is empty")
	case t == "." || t == "..":
		return fmt.Errorf("topic name %q is not allowed", t)
	case len(t) > 249:
		return fmt.Errorf("topic name %q is longer than 249 characters", t)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q contains %q; only letters, digits, '.', '_' and '-' are allowed", t, r)
		}
	}
	return nil
}
