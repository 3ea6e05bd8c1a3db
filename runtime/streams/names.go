package streams

// The names the Builder gave: what a caller that builds topologies from
// another description (a designer's graph) needs to tell which operators
// and stores each of its DSL calls made, without counting generated names
// itself.

// Name returns the name of the operator whose records the stream carries:
// the source, processor or repartition source that made it. A branch of
// Branch is its branch processor, the result of Merge the merge, of a
// stream-stream join the join's merge.
func (s *Stream) Name() string { return s.node.name }

// Name returns the name of the operator whose updates the table carries:
// a source table's KTABLE-SOURCE processor (not its source), an
// aggregation's aggregating processor, a table-table join's merge.
func (t *Table) Name() string { return t.node.name }

// Name returns the name of the operator whose records the grouping
// groups: for GroupBy its key selector, for GroupByKey the stream's own
// operator. The repartition an aggregation may add comes after it.
func (g *GroupedStream) Name() string { return g.stream.node.name }

// Name returns the name of the table grouping's select processor
// (KTABLE-SELECT), whose records its aggregations repartition.
func (g *GroupedTable) Name() string { return g.stream.node.name }

// A Mark is a point in the building of a topology: the operators a
// Builder held when Builder.Mark returned it.
type Mark struct {
	b                 *Builder
	operators, errors int
}

// Mark returns the current point of b, for Added.
func (b *Builder) Mark() Mark { return Mark{b: b, operators: len(b.nodes), errors: len(b.errs)} }

// Added is what the DSL calls made since a Mark added to a Builder.
type Added struct {
	// Operators are the names of the sources, processors and sinks
	// added, in the order they were added: a repartition's filter, sink
	// and source before the aggregation or join that needed it.
	Operators []string
	// Stores are the names of the state stores those operators keep, in
	// the same order: an aggregation's, a source table's, a stream-stream
	// join's buffers and store of unmatched records.
	Stores []string
	// Errors are the mistakes those calls made, which Build reports
	// among its BuildErrors.
	Errors []*BuildError
}

// Added returns the operators, stores and mistakes added to b since m. A
// mark of another Builder gives everything b holds.
func (b *Builder) Added(m Mark) Added {
	from, errs := m.operators, m.errors
	if m.b != b || from > len(b.nodes) || errs > len(b.errs) {
		from, errs = 0, 0
	}
	var a Added
	for _, err := range b.errs[errs:] {
		if be, ok := err.(*BuildError); ok {
			a.Errors = append(a.Errors, be)
		}
	}
	for _, n := range b.nodes[from:] {
		a.Operators = append(a.Operators, n.name)
		for _, spec := range n.storeSpecs {
			a.Stores = append(a.Stores, spec.name)
		}
	}
	return a
}
