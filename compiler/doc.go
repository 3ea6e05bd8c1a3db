// Package compiler turns designs (package designer) into runtime topologies
// (package streams): expressions, compilation, preview on sample records, Go
// export, and import of Kafka Streams' Topology.describe() text.
//
// # Expressions
//
// Expressions are expr-lang expressions (https://expr-lang.org), compiled
// once per node parameter for the role the catalog gives the parameter
// (designer.ExprRole). The role decides the variables an expression sees:
//
//	predicate, key, value, flat-map, flat-map-values, timestamp:
//	             key, value, timestamp, headers
//	initializer: none
//	aggregator:  key, value, aggregate
//	reducer:     aggregate, value
//	merger:      key, agg1, agg2
//	joiner:      key, left, right (nil for the side without a match)
//
// A name that is not one of these variables, a builtin or a variable the
// expression declares itself is a compile error, as is a result of the
// wrong type when the type is known at compile time (a predicate must be
// a bool, a timestamp a number or a time, a flat-map a list): from the
// expression's static type or, when it reads a record's untyped values,
// from its operator (value.temp + 1 is a number whatever temp is,
// value.temp > 1 a bool; value.temp alone only a record tells).
//
// Keys and values are what the stream's serdes decode: for the JSON serde
// map[string]any, []any, float64, string, bool and nil (a missing field of
// an object is nil, not an error); for the string serde a string; for
// int64 an int64; for bytes a []byte. Aggregates are whatever the
// initializer, aggregator or reducer returned (after a restore: what the
// store's serde decodes). timestamp is the record's timestamp in
// milliseconds since the epoch (int64), headers its headers as a
// map[string]string (a header sent twice: the last value; a missing one:
// "").
//
// Results are normalized in one way: a number that is whole comes out as
// an int64 — every Go integer type, and a float64 without a fraction
// within ±2^53 — so that a JSON number can become an int64 key or value
// (the int64 serde takes nothing else) and 42 is never written as 42.0.
// Other numbers stay float64; everything else is returned as the
// expression made it: map literals are map[string]any, lists []any,
// strings string. Within an expression JSON numbers are float64 and
// integer literals int; expr-lang mixes them freely, except that % needs
// integers (int(x) converts).
//
// A predicate that gives nil (a missing field) is false. A timestamp may
// be a number of milliseconds (a fraction is cut off) or a time
// (date(value.at)); nil or anything else is an error. A flat-map must give
// a list of objects each holding "key" and "value"; a flat-map-values a
// list of values; nil is an empty list.
//
// An evaluation error (a field of a string, a wrong type) is returned to
// the runtime as the operator's error, which hands it to the processing
// error handler (Config.ProcessingErrors): failing the task names the
// operator, topic, partition and offset, and the EvalError the design's
// node id.
//
// # Compilation
//
// Compiling a design calls the runtime's DSL once per node, in the
// design's node order except that a node waits for the nodes feeding it
// (a topological order that, among the nodes ready, takes the first in
// the design). Generated operator names count up in that order, as Kafka
// Streams' do in the order of the DSL calls, so that a design whose nodes
// are listed in the order a Kafka Streams program makes its calls
// describes exactly as that program's topology does. A node whose output
// feeds several nodes gives them the same stream: Kafka Streams'
// multiple children. A merge node merges its inputs in the order of their
// edges in the design, a.Merge(b).Merge(c) for three; its name goes to
// the last merge.
//
// A join node calls the join method of its left (or stream) input with
// its right (or table) input: Join, LeftJoin or OuterJoin, JoinTable or
// LeftJoinTable, and for a stream-stream join the windows of its window,
// before, after and grace parameters. Its joiner sees key, left and right
// (nil for the side a left or outer join found no match for) and defaults
// to {left: left, right: right}. The runtime repartitions an input whose
// key may have changed, and names the join's processors and stores; the
// compiler learns those names from the runtime's Builder, as every node's
// (see Compiled). A join's result keeps
// the left input's key serde and has the json value serde. A table input is
// looked up in its store: that of a table source, of an aggregation, or of
// a table join, table filter or table map-values whose store parameter
// names one (Materialized with that name, and for a filter or map-values
// the value serde the design gives the table's values); a join of another
// table is a problem of the join node.
//
// Serdes are carried along the graph by name. A source sets its key and
// value serdes (default string and json); a repartition, group-by-key,
// group-by or sink node may set others; an aggregation sets its value
// serde (valueSerde, default int64 for count, the stream's value serde
// for reduce, json for aggregate). Nothing else changes them: a map or
// select-key that computes a new key keeps the stream's key serde, so the
// new key must fit it (a string for the string serde; see Expressions
// above for the types expressions give). After a windowed aggregation keys are windowed
// over the grouping key's serde; a sink writes them with "windowed"
// (Kafka Streams' binary layout, the default) or "windowed-json". Every
// topic the compiled topology writes gets its serdes explicitly, so the
// runtime's Config defaults never apply.
//
// # One lowering, two back-ends
//
// Compile and ExportGo must make the same DSL calls: an exported program
// describes and runs as the compiled topology does. So that they cannot
// drift, each node is lowered once (lower.go) into a plan, its DSL calls
// with typed arguments, and the serdes, windows and repartitions the
// compiler tracks are decided there alone. Every argument carries its
// runtime value and its Go code side by side (lower_args.go,
// lower_exprs.go); Compile applies plans to a streams.Builder
// (compile_apply.go) and ExportGo prints them (export_plan.go).
//
// The runtime passes the stateless operators' functions only a record's
// key and value (MapValues and FlatMapValues only the value; a timestamp
// extractor also the record's timestamp), so an expression there that
// reads timestamp or headers (or key, in map-values) is a problem of its
// node rather than a silent nil.
package compiler
