package streams

// Stream is an unbounded sequence of records, the KStream of Kafka Streams.
// Its methods add operators to the Builder it came from and return the
// stream of their output.
type Stream struct {
	b    *Builder
	node *graphNode
	// keySerde and valueSerde are what is known to (de)serialize the
	// stream's keys and values: the source's, until an operator changes
	// them. nil means unknown; sinks then use the Config default.
	keySerde, valueSerde Serde
	// repartitionRequired is set once an operator may have changed the
	// key, so that a grouping must repartition first.
	repartitionRequired bool
}

// derive adds a processor node below s and returns its stream.
func (s *Stream) derive(op, prefix string, opts []Option, make processorFactory) (*Stream, *graphNode) {
	o := s.b.resolveOptions(op, optName, opts)
	n := s.b.addNode(s.b.nameOrGenerate(o.name, prefix), processorNode)
	n.op = op
	n.makeProcessor = make
	connect(s.node, n)
	out := *s
	out.node = n
	return &out, n
}

// Filter keeps the records for which pred returns true. It takes Named.
func (s *Stream) Filter(pred Predicate, opts ...Option) *Stream {
	s.need("Filter", fnArg{"pred", pred == nil})
	out, _ := s.derive("Filter", "KSTREAM-FILTER-", opts, filterFactory(pred, false))
	return out
}

// FilterNot keeps the records for which pred returns false. It takes Named.
func (s *Stream) FilterNot(pred Predicate, opts ...Option) *Stream {
	s.need("FilterNot", fnArg{"pred", pred == nil})
	out, _ := s.derive("FilterNot", "KSTREAM-FILTER-", opts, filterFactory(pred, true))
	return out
}

// Map replaces each record's key and value. The key may change, so a later
// grouping repartitions. It takes Named.
func (s *Stream) Map(fn KeyValueMapper, opts ...Option) *Stream {
	s.need("Map", fnArg{"fn", fn == nil})
	out, _ := s.derive("Map", "KSTREAM-MAP-", opts, mapFactory(fn))
	out.keySerde, out.valueSerde, out.repartitionRequired = nil, nil, true
	return out
}

// MapValues replaces each record's value; the key stays. It takes Named.
func (s *Stream) MapValues(fn ValueMapper, opts ...Option) *Stream {
	s.need("MapValues", fnArg{"fn", fn == nil})
	out, _ := s.derive("MapValues", "KSTREAM-MAPVALUES-", opts, mapValuesFactory(fn))
	out.valueSerde = nil
	return out
}

// FlatMap replaces each record with zero or more records. It takes Named.
func (s *Stream) FlatMap(fn FlatMapper, opts ...Option) *Stream {
	s.need("FlatMap", fnArg{"fn", fn == nil})
	out, _ := s.derive("FlatMap", "KSTREAM-FLATMAP-", opts, flatMapFactory(fn))
	out.keySerde, out.valueSerde, out.repartitionRequired = nil, nil, true
	return out
}

// FlatMapValues replaces each value with zero or more values, each with
// the record's key. It takes Named.
func (s *Stream) FlatMapValues(fn ValueFlatMapper, opts ...Option) *Stream {
	s.need("FlatMapValues", fnArg{"fn", fn == nil})
	out, _ := s.derive("FlatMapValues", "KSTREAM-FLATMAPVALUES-", opts, flatMapValuesFactory(fn))
	out.valueSerde = nil
	return out
}

// SelectKey sets each record's key to fn's result. It takes Named.
func (s *Stream) SelectKey(fn KeySelector, opts ...Option) *Stream {
	s.need("SelectKey", fnArg{"fn", fn == nil})
	out, _ := s.derive("SelectKey", "KSTREAM-KEY-SELECT-", opts, selectKeyFactory(fn))
	out.keySerde, out.repartitionRequired = nil, true
	return out
}

// Peek calls fn for each record and passes the record on. It takes Named.
func (s *Stream) Peek(fn Action, opts ...Option) *Stream {
	s.need("Peek", fnArg{"fn", fn == nil})
	out, _ := s.derive("Peek", "KSTREAM-PEEK-", opts, peekFactory(fn))
	return out
}

// Merge returns a stream with the records of s and other. Records of a
// task come out in the order the task processes them. It takes Named.
func (s *Stream) Merge(other *Stream, opts ...Option) *Stream {
	if other == nil || other.b != s.b {
		s.b.begin("Merge")
		s.b.errorAt(blame{arg: "other"}, "Merge: the other stream is nil or comes from another Builder")
		return s
	}
	out, n := s.derive("Merge", "KSTREAM-MERGE-", opts, passFactory)
	connect(other.node, n)
	out.repartitionRequired = s.repartitionRequired || other.repartitionRequired
	if !sameSerde(s.keySerde, other.keySerde) {
		out.keySerde = nil
	}
	if !sameSerde(s.valueSerde, other.valueSerde) {
		out.valueSerde = nil
	}
	return out
}

func sameSerde(a, b Serde) bool {
	return a != nil && b != nil && a.Name() == b.Name()
}

// fnArg is a function argument of a DSL call, by its name in the
// method's signature, and whether it was given nil.
type fnArg struct {
	name    string
	missing bool
}

// need begins the DSL call op and records a builder error, naming the
// first missing one, when a required function is missing.
func (s *Stream) need(op string, fns ...fnArg) {
	s.b.begin(op)
	for _, fn := range fns {
		if fn.missing {
			s.b.errorAt(blame{arg: fn.name}, "%s: the function is nil", op)
			return
		}
	}
}
