package designer

import "strings"

// The catalog: every kind of node a design may hold, declared as data. The
// validator, the compiler, the Go exporter, the describe() importer and
// the browser's palette and property forms all read these declarations,
// so that a kind is described once.

// DataType is what flows along an edge; ports declare the types they take
// or give, and an edge is allowed only between matching types.
type DataType string

const (
	Stream         DataType = "stream"
	Table          DataType = "table"
	GroupedStream  DataType = "grouped-stream"
	GroupedTable   DataType = "grouped-table"
	WindowedStream DataType = "windowed-stream"
	// SameAsInput marks an output whose type is that of the node's input
	// (a filter of a table is a table).
	SameAsInput DataType = "same-as-input"
	// GroupedInput marks an output that is its input grouped: a grouped
	// stream from a stream, a grouped table from a table.
	GroupedInput DataType = "grouped-input"
)

// ParamType is the type of a parameter's value.
type ParamType string

const (
	// String is free text; Int a whole number; Duration a Go duration
	// string such as "10s" or "1m30s"; Enum one of Param.Enum.
	StringParam   ParamType = "string"
	IntParam      ParamType = "int"
	DurationParam ParamType = "duration"
	EnumParam     ParamType = "enum"
	// Expression is an expr-lang expression over the variables its
	// Param.Expr role gives (see ExprRole).
	ExpressionParam ParamType = "expression"
	// Topic is a Kafka topic name.
	TopicParam ParamType = "topic"
	// Serde names a serde: one of Serdes.
	SerdeParam ParamType = "serde"
	// Branches is the list of a branch node's outputs ([]Branch in JSON).
	BranchesParam ParamType = "branches"
)

// Serdes are the serde names a serde parameter takes. The windowed ones
// only serialize windowed keys (after a windowed aggregation): "windowed"
// is Kafka Streams' binary layout, "windowed-json" the JSON object
// {"key":...,"start":...,"end":...}; both wrap the grouping key's serde.
var Serdes = []string{"string", "json", "int64", "bytes", "windowed", "windowed-json"}

// ExprRole says what an expression computes and which variables it sees.
type ExprRole string

const (
	// Predicate: key, value, timestamp, headers -> bool.
	Predicate ExprRole = "predicate"
	// KeyMapper and ValueMapper: key, value, timestamp, headers -> the
	// new key or value.
	KeyMapper   ExprRole = "key"
	ValueMapper ExprRole = "value"
	// FlatMapper: key, value, timestamp, headers -> a list of
	// {"key": ..., "value": ...} objects.
	FlatMapper ExprRole = "flat-map"
	// ValuesMapper: key, value, timestamp, headers -> a list of values.
	ValuesMapper ExprRole = "flat-map-values"
	// Initializer: no variables -> the first aggregate.
	Initializer ExprRole = "initializer"
	// Aggregator: key, value, aggregate -> the new aggregate (adders and
	// subtractors of grouped tables too).
	Aggregator ExprRole = "aggregator"
	// Reducer: aggregate, value -> the new aggregate.
	Reducer ExprRole = "reducer"
	// SessionMerger: key, agg1, agg2 -> the merged aggregate.
	SessionMerger ExprRole = "merger"
	// TimestampExtractor: key, value, timestamp (the record's), headers ->
	// the event time in milliseconds since the epoch.
	TimestampExtractor ExprRole = "timestamp"
	// Joiner: key, left, right -> the joined value. The side a left or
	// outer join found no match for is nil.
	Joiner ExprRole = "joiner"
)

// Kind names a kind of node: Node.Kind, KindSpec.Name. Its constants are
// every kind the catalog declares; in JSON a kind is its name.
type Kind string

// The kinds of the catalog, in palette order (see Catalog for what each
// does).
const (
	KindSourceStream    Kind = "source-stream"
	KindSourceTable     Kind = "source-table"
	KindFilter          Kind = "filter"
	KindFilterNot       Kind = "filter-not"
	KindMap             Kind = "map"
	KindMapValues       Kind = "map-values"
	KindFlatMap         Kind = "flat-map"
	KindFlatMapValues   Kind = "flat-map-values"
	KindSelectKey       Kind = "select-key"
	KindPeek            Kind = "peek"
	KindBranch          Kind = "branch"
	KindMerge           Kind = "merge"
	KindRepartition     Kind = "repartition"
	KindGroupByKey      Kind = "group-by-key"
	KindGroupBy         Kind = "group-by"
	KindCount           Kind = "count"
	KindReduce          Kind = "reduce"
	KindAggregate       Kind = "aggregate"
	KindWindowedBy      Kind = "windowed-by"
	KindToStream        Kind = "to-stream"
	KindStreamJoin      Kind = "stream-join"
	KindStreamTableJoin Kind = "stream-table-join"
	KindTableJoin       Kind = "table-join"
	KindSink            Kind = "sink"
	// KindOpaque is a processor the describe() importer could not
	// recognise (KindSpec.ImportOnly).
	KindOpaque Kind = "opaque"
)

// KindSpec declares one kind of node.
type KindSpec struct {
	Name        Kind   `json:"name"`
	Title       string `json:"title"`
	Group       string `json:"group"`
	Description string `json:"description"`
	Inputs      []Port `json:"inputs"`
	Outputs     []Port `json:"outputs"`
	// BranchOutputs says the outputs are the node's branches (its
	// "branches" parameter), one port per branch name, each giving a
	// stream; Outputs is then empty.
	BranchOutputs bool    `json:"branchOutputs,omitempty"`
	Params        []Param `json:"params"`
	// KafkaNames are the prefixes of the names Kafka Streams generates
	// for this kind's processors ("KSTREAM-FILTER-"), for import.
	KafkaNames []string `json:"kafkaNames,omitempty"`
	// ImportOnly marks a kind that only an import makes (a processor the
	// importer could not recognise): it is valid in a design, but the
	// palette does not offer it.
	ImportOnly bool `json:"importOnly,omitempty"`
}

// Port is an input or output of a kind.
type Port struct {
	Name string `json:"name"`
	// Types lists the data an input takes or an output gives; an output
	// gives exactly one type, possibly SameAsInput.
	Types []DataType `json:"types"`
	// Multiple lets an input take several edges (merge).
	Multiple bool `json:"multiple,omitempty"`
}

// Param declares one parameter of a kind.
type Param struct {
	Name     string    `json:"name"`
	Type     ParamType `json:"type"`
	Required bool      `json:"required,omitempty"`
	// Default is used when the node does not set the parameter; nil
	// means none.
	Default     any      `json:"default,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Description string   `json:"description"`
	Example     string   `json:"example,omitempty"`
	// Expr is the role of an expression parameter.
	Expr ExprRole `json:"expr,omitempty"`
	// When limits the parameter to nodes whose parameter When.Param has
	// one of When.Values (hopping windows have an advance, sessions a
	// gap); elsewhere it must be unset.
	When *Condition `json:"when,omitempty"`
}

// Condition makes a parameter depend on another's value.
type Condition struct {
	Param  string   `json:"param"`
	Values []string `json:"values"`
}

// Groups of the palette, in palette order.
const (
	GroupSources     = "sources"
	GroupStateless   = "stateless"
	GroupAggregation = "grouping and aggregation"
	GroupWindows     = "windows"
	GroupJoins       = "joins"
	GroupSinks       = "sinks"
)

// Groups lists the palette groups in order.
var Groups = []string{GroupSources, GroupStateless, GroupAggregation, GroupWindows, GroupJoins, GroupSinks}

// Window types of the windowed-by kind.
const (
	Tumbling = "tumbling"
	Hopping  = "hopping"
	Sliding  = "sliding"
	Session  = "session"
)

// Join types of the join kinds: inner joins emit only matches; a left
// join also emits the left side unmatched (right nil); an outer join
// either side unmatched.
const (
	InnerJoin = "inner"
	LeftJoin  = "left"
	OuterJoin = "outer"
)

// DefaultJoiner is the joiner of a join node that sets none. It keeps
// both sides whole, under their names, rather than merging their fields:
// it works for values of every serde (strings and numbers have no
// fields) and for the nil side of an unmatched record, and loses nothing
// when both sides have a field of the same name.
const DefaultJoiner = "{left: left, right: right}"

// Emit strategies of the windowed-by kind.
const (
	EmitOnWindowUpdate = "on-window-update"
	EmitOnWindowClose  = "on-window-close"
)

func in(types ...DataType) []Port  { return []Port{{Name: "in", Types: types}} }
func out(types ...DataType) []Port { return []Port{{Name: "out", Types: types}} }

func joinTypeParam(types ...string) Param {
	descs := map[string]string{
		InnerJoin: "inner: only records that match",
		LeftJoin:  "left: also left records without a match (right is nil)",
		OuterJoin: "outer: also unmatched records of either side (the other is nil)",
	}
	var d []string
	for _, t := range types {
		d = append(d, descs[t])
	}
	return Param{Name: "type", Type: EnumParam, Required: true, Enum: types, Default: InnerJoin,
		Description: strings.Join(d, "; ") + "."}
}

func joinerParam() Param {
	return Param{Name: "joiner", Type: ExpressionParam, Expr: Joiner, Required: true, Default: DefaultJoiner,
		Description: "The joined value from key, left and right (nil for the side without a match); default: an object holding both.",
		Example:     "{order: left.id, amount: left.amount, customer: right.name}"}
}

func nameParam() Param {
	return Param{Name: "name", Type: StringParam, Description: "The operator's name in the topology; empty means generated as Kafka Streams does.", Example: "big-orders"}
}

func serdeParam(name, what, def string) Param {
	p := Param{Name: name, Type: SerdeParam, Enum: Serdes, Description: what}
	if def != "" {
		p.Default = def
	}
	return p
}

func exprParam(name string, role ExprRole, required bool, description, example string) Param {
	return Param{Name: name, Type: ExpressionParam, Expr: role, Required: required, Description: description, Example: example}
}

func storeParams(windowed bool) []Param {
	ps := []Param{
		{Name: "store", Type: StringParam, Description: "The state store's name; it also names the changelog topic <app>-<store>-changelog and is how queries find it. Empty means generated.", Example: "orders-per-customer"},
		{Name: "logging", Type: EnumParam, Enum: []string{"on", "off"}, Default: "on", Description: "Log every change to a changelog topic, so that a task that moves restores its state."},
		{Name: "caching", Type: EnumParam, Enum: []string{"on", "off"}, Default: "on", Description: "Hold updates in the record cache until a commit, sending each key's latest once."},
		serdeParam("valueSerde", "Serde of the stored aggregate; default: the operator's (int64 for count, the stream's for reduce, json for aggregate).", ""),
	}
	if windowed {
		ps = append(ps, Param{Name: "retention", Type: DurationParam, Description: "How long a windowed store keeps a window, for queries; default and minimum: until it closes.", Example: "1h"})
	}
	return ps
}

// derivedStoreParam is the store of a table filter or map-values: what
// the table-join's store is to a joined table.
func derivedStoreParam(what, example string) Param {
	return Param{Name: "store", Type: StringParam, Example: example,
		Description: "Tables only: materializes " + what + " in a store of this name (and changelog <app>-<store>-changelog), so that it can be joined and queried; empty means not materialized."}
}

// Catalog returns every kind, in palette order. The slice and its kinds
// are fresh copies: callers may change them.
func Catalog() []KindSpec {
	return catalog()
}

// KindByName returns the declaration of kind name.
func KindByName(name Kind) (KindSpec, bool) {
	for _, k := range catalog() {
		if k.Name == name {
			return k, true
		}
	}
	return KindSpec{}, false
}

func catalog() []KindSpec {
	streamOrTable := []DataType{Stream, Table}
	aggIn := in(GroupedStream, WindowedStream, GroupedTable)
	return []KindSpec{
		{Name: KindSourceStream, Title: "Stream source", Group: GroupSources,
			Description: "Reads a topic as a stream of records.",
			Outputs:     out(Stream), KafkaNames: []string{"KSTREAM-SOURCE-"},
			Params: []Param{
				{Name: "topic", Type: TopicParam, Required: true, Description: "The topic to read.", Example: "orders"},
				serdeParam("keySerde", "How record keys are decoded.", "string"),
				serdeParam("valueSerde", "How record values are decoded.", "json"),
				exprParam("timestamp", TimestampExtractor, false, "Event time in milliseconds since the epoch, taken from the record; default: the record's own timestamp.", "value.ts"),
				nameParam(),
			}},
		{Name: KindSourceTable, Title: "Table source", Group: GroupSources,
			Description: "Reads a topic as a table: the latest value per key; a null value deletes the key.",
			Outputs:     out(Table), KafkaNames: []string{"KTABLE-SOURCE-"},
			Params: append([]Param{
				{Name: "topic", Type: TopicParam, Required: true, Description: "The topic to read.", Example: "customers"},
				serdeParam("keySerde", "How record keys are decoded.", "string"),
				serdeParam("valueSerde", "How record values are decoded.", "json"),
				exprParam("timestamp", TimestampExtractor, false, "Event time in milliseconds since the epoch; default: the record's own timestamp.", "value.updatedAt"),
				nameParam(),
			}, storeParams(false)[:3]...)},
		{Name: KindFilter, Title: "Filter", Group: GroupStateless,
			Description: "Keeps the records for which the predicate is true; on a table, a row that stops passing is deleted downstream.",
			Inputs:      in(streamOrTable...), Outputs: out(SameAsInput), KafkaNames: []string{"KSTREAM-FILTER-", "KTABLE-FILTER-"},
			Params: []Param{
				exprParam("predicate", Predicate, true, "True keeps the record.", "value.amount >= 50"),
				nameParam(),
				derivedStoreParam("the filtered table", "active-customers"),
			}},
		{Name: KindFilterNot, Title: "Filter not", Group: GroupStateless,
			Description: "Drops the records for which the predicate is true.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-FILTER-"},
			Params: []Param{exprParam("predicate", Predicate, true, "True drops the record.", `value.status == "test"`), nameParam()}},
		{Name: KindMap, Title: "Map", Group: GroupStateless,
			Description: "Computes a new key and value for each record; grouping after it repartitions.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-MAP-"},
			Params: []Param{
				exprParam("key", KeyMapper, true, "The new key.", "value.customer"),
				exprParam("value", ValueMapper, true, "The new value.", "{id: key, total: value.amount * value.qty}"),
				nameParam(),
			}},
		{Name: KindMapValues, Title: "Map values", Group: GroupStateless,
			Description: "Computes a new value for each record (or table row); the key stays.",
			Inputs:      in(streamOrTable...), Outputs: out(SameAsInput), KafkaNames: []string{"KSTREAM-MAPVALUES-", "KTABLE-MAPVALUES-"},
			Params: []Param{
				exprParam("value", ValueMapper, true, "The new value.", "value.amount * 1.2"),
				nameParam(),
				derivedStoreParam("the mapped table", "customer-tiers"),
			}},
		{Name: KindFlatMap, Title: "Flat map", Group: GroupStateless,
			Description: "Turns each record into zero or more records.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-FLATMAP-"},
			Params: []Param{exprParam("records", FlatMapper, true, `A list of {"key": ..., "value": ...} objects.`, "map(value.items, ({key: #.sku, value: #}))"), nameParam()}},
		{Name: KindFlatMapValues, Title: "Flat map values", Group: GroupStateless,
			Description: "Turns each record into zero or more records with the same key.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-FLATMAPVALUES-"},
			Params: []Param{exprParam("values", ValuesMapper, true, "A list of values.", "value.items"), nameParam()}},
		{Name: KindSelectKey, Title: "Select key", Group: GroupStateless,
			Description: "Gives each record a new key; grouping after it repartitions.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-KEY-SELECT-"},
			Params: []Param{exprParam("key", KeyMapper, true, "The new key.", "value.customer"), nameParam()}},
		{Name: KindPeek, Title: "Peek", Group: GroupStateless,
			Description: "Passes records on unchanged; the preview shows what passes here.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-PEEK-"},
			Params: []Param{nameParam()}},
		{Name: KindBranch, Title: "Branch", Group: GroupStateless,
			Description: "Sends each record to the first branch whose predicate is true; a branch without a predicate takes the rest.",
			Inputs:      in(Stream), BranchOutputs: true, KafkaNames: []string{"KSTREAM-BRANCH-", "KSTREAM-BRANCHCHILD-"},
			Params: []Param{
				{Name: "branches", Type: BranchesParam, Required: true, Description: "The branches in order: a name (the output port) and a predicate, empty for the default branch.",
					Example: `[{"name":"big","predicate":"value.amount >= 100"},{"name":"rest"}]`},
				nameParam(),
			}},
		{Name: KindMerge, Title: "Merge", Group: GroupStateless,
			Description: "Merges streams into one.",
			Inputs:      []Port{{Name: "in", Types: []DataType{Stream}, Multiple: true}}, Outputs: out(Stream), KafkaNames: []string{"KSTREAM-MERGE-"},
			Params: []Param{nameParam()}},
		{Name: KindRepartition, Title: "Repartition", Group: GroupStateless,
			Description: "Writes the stream to an internal topic and reads it back, partitioned by the current key.",
			Inputs:      in(Stream), Outputs: out(Stream), KafkaNames: []string{"KSTREAM-REPARTITION-"},
			Params: []Param{
				{Name: "name", Type: StringParam, Description: "Names the topic <app>-<name>-repartition; empty means generated.", Example: "by-customer"},
				{Name: "partitions", Type: IntParam, Description: "Partitions of the topic; default: as many as the upstream input.", Example: "6"},
				serdeParam("keySerde", "Serde of keys on the topic; default: the stream's.", ""),
				serdeParam("valueSerde", "Serde of values on the topic; default: the stream's.", ""),
			}},
		{Name: KindGroupByKey, Title: "Group by key", Group: GroupAggregation,
			Description: "Groups the stream by its key, for an aggregation; repartitions if the key changed upstream.",
			Inputs:      in(Stream), Outputs: out(GroupedStream),
			Params: []Param{
				{Name: "name", Type: StringParam, Description: "Names the repartition topic, if one is needed.", Example: "by-customer"},
				serdeParam("keySerde", "Serde of the grouping key; default: the stream's.", ""),
				serdeParam("valueSerde", "Serde of the values; default: the stream's.", ""),
			}},
		{Name: KindGroupBy, Title: "Group by", Group: GroupAggregation,
			Description: "Groups by a key computed from each record (a stream) or row (a table), repartitioning by it.",
			Inputs:      in(Stream, Table), Outputs: out(GroupedInput), KafkaNames: []string{"KSTREAM-KEY-SELECT-", "KTABLE-SELECT-"},
			Params: []Param{
				exprParam("key", KeyMapper, true, "The grouping key.", "value.customer"),
				exprParam("value", ValueMapper, false, "For a table: the value to aggregate; default: the row's value.", "value.amount"),
				{Name: "name", Type: StringParam, Description: "Names the repartition topic.", Example: "by-customer"},
				serdeParam("keySerde", "Serde of the grouping key.", ""),
				serdeParam("valueSerde", "Serde of the values.", ""),
			}},
		{Name: KindCount, Title: "Count", Group: GroupAggregation,
			Description: "Counts records per key (per window after windowed-by) into a table of int64.",
			Inputs:      aggIn, Outputs: out(Table), KafkaNames: []string{"KSTREAM-AGGREGATE-", "KTABLE-AGGREGATE-"},
			Params: append([]Param{nameParam()}, storeParams(true)...)},
		{Name: KindReduce, Title: "Reduce", Group: GroupAggregation,
			Description: "Combines each key's values (per window after windowed-by) with an expression; the first value is the first aggregate.",
			Inputs:      aggIn, Outputs: out(Table), KafkaNames: []string{"KSTREAM-REDUCE-", "KTABLE-REDUCE-"},
			Params: append([]Param{
				exprParam("reducer", Reducer, true, "The new aggregate from aggregate and value.", "aggregate + value.amount"),
				exprParam("subtractor", Reducer, false, "After group-by on a table: removes an old value from the aggregate.", "aggregate - value.amount"),
				nameParam(),
			}, storeParams(true)...)},
		{Name: KindAggregate, Title: "Aggregate", Group: GroupAggregation,
			Description: "Folds each key's values (per window after windowed-by) into an aggregate that starts from the initializer.",
			Inputs:      aggIn, Outputs: out(Table), KafkaNames: []string{"KSTREAM-AGGREGATE-", "KTABLE-AGGREGATE-"},
			Params: append([]Param{
				exprParam("initializer", Initializer, true, "The aggregate before the first value.", "{count: 0, total: 0}"),
				exprParam("aggregator", Aggregator, true, "The new aggregate from key, value and aggregate.", "{count: aggregate.count + 1, total: aggregate.total + value.amount}"),
				exprParam("subtractor", Aggregator, false, "After group-by on a table: removes an old value from the aggregate.", "{count: aggregate.count - 1, total: aggregate.total - value.amount}"),
				exprParam("merger", SessionMerger, false, "Session windows: merges two sessions' aggregates.", "{count: agg1.count + agg2.count, total: agg1.total + agg2.total}"),
				nameParam(),
			}, storeParams(true)...)},
		{Name: KindWindowedBy, Title: "Windowed by", Group: GroupWindows,
			Description: "Cuts a grouped stream into time windows for the aggregation after it. A window closes when stream time reaches its end plus the grace period.",
			Inputs:      in(GroupedStream), Outputs: out(WindowedStream),
			Params: []Param{
				{Name: "type", Type: EnumParam, Required: true, Enum: []string{Tumbling, Hopping, Sliding, Session}, Default: Tumbling, Description: "Tumbling: fixed, non-overlapping; hopping: fixed, overlapping; sliding: by the records' time difference; session: by inactivity gaps."},
				{Name: "size", Type: DurationParam, Description: "Window size (tumbling, hopping) or time difference (sliding).", Example: "10s",
					When: &Condition{Param: "type", Values: []string{Tumbling, Hopping, Sliding}}},
				{Name: "advance", Type: DurationParam, Description: "Distance between window starts (hopping).", Example: "5s",
					When: &Condition{Param: "type", Values: []string{Hopping}}},
				{Name: "gap", Type: DurationParam, Description: "Inactivity gap that ends a session.", Example: "30m",
					When: &Condition{Param: "type", Values: []string{Session}}},
				{Name: "grace", Type: DurationParam, Default: "0s", Description: "How long after its end a window still accepts out-of-order records.", Example: "5s"},
				{Name: "emit", Type: EnumParam, Enum: []string{EmitOnWindowUpdate, EmitOnWindowClose}, Default: EmitOnWindowUpdate, Description: "Send every update, or one final result per window when it closes."},
			}},
		{Name: KindToStream, Title: "To stream", Group: GroupAggregation,
			Description: "Turns a table's updates into a stream.",
			Inputs:      in(Table), Outputs: out(Stream), KafkaNames: []string{"KTABLE-TOSTREAM-"},
			Params: []Param{nameParam()}},
		{Name: KindStreamJoin, Title: "Stream-stream join", Group: GroupJoins,
			Description: "Joins two streams on their keys: records whose timestamps lie within the join window of each other. Both streams must be partitioned alike (same key, same partition count).",
			Inputs:      []Port{{Name: "left", Types: []DataType{Stream}}, {Name: "right", Types: []DataType{Stream}}},
			Outputs:     out(Stream),
			KafkaNames:  []string{"KSTREAM-JOINTHIS-", "KSTREAM-JOINOTHER-", "KSTREAM-OUTERTHIS-", "KSTREAM-OUTEROTHER-", "KSTREAM-WINDOWED-"},
			Params: []Param{
				joinTypeParam(InnerJoin, LeftJoin, OuterJoin),
				joinerParam(),
				{Name: "window", Type: DurationParam, Description: "The time difference: a left and a right record join when their timestamps are at most this far apart. Required unless before and after are both set.", Example: "5m"},
				{Name: "before", Type: DurationParam, Description: "How much earlier than a left record a right record may be; default: the window.", Example: "5m"},
				{Name: "after", Type: DurationParam, Description: "How much later than a left record a right record may be; default: the window.", Example: "1m"},
				{Name: "grace", Type: DurationParam, Default: "0s", Description: "How long after a window ends out-of-order records still join; left and outer joins emit unmatched records only then.", Example: "30s"},
				nameParam(),
			}},
		{Name: KindStreamTableJoin, Title: "Stream-table join", Group: GroupJoins,
			Description: "Looks up each stream record's key in the table; table updates emit nothing. The stream and the table must be partitioned alike.",
			Inputs:      []Port{{Name: "stream", Types: []DataType{Stream}}, {Name: "table", Types: []DataType{Table}}},
			Outputs:     out(Stream), KafkaNames: []string{"KSTREAM-JOIN-", "KSTREAM-LEFTJOIN-"},
			Params: []Param{joinTypeParam(InnerJoin, LeftJoin), joinerParam(), nameParam()}},
		{Name: KindTableJoin, Title: "Table-table join", Group: GroupJoins,
			Description: "Joins two tables on their keys into a table that changes when either side does. Both tables must be partitioned alike.",
			Inputs:      []Port{{Name: "left", Types: []DataType{Table}}, {Name: "right", Types: []DataType{Table}}},
			Outputs:     out(Table),
			KafkaNames:  []string{"KTABLE-JOINTHIS-", "KTABLE-JOINOTHER-", "KTABLE-LEFTTHIS-", "KTABLE-LEFTOTHER-", "KTABLE-OUTERTHIS-", "KTABLE-OUTEROTHER-", "KTABLE-MERGE-"},
			Params: []Param{
				joinTypeParam(InnerJoin, LeftJoin, OuterJoin),
				joinerParam(),
				nameParam(),
				{Name: "store", Type: StringParam, Description: "Materializes the joined table in a store of this name (and changelog <app>-<store>-changelog), for queries; empty means not materialized.", Example: "orders-with-customers"},
			}},
		{Name: KindSink, Title: "Sink", Group: GroupSinks,
			Description: "Writes the stream to a topic.",
			Inputs:      in(Stream), KafkaNames: []string{"KSTREAM-SINK-"},
			Params: []Param{
				{Name: "topic", Type: TopicParam, Required: true, Description: "The topic to write.", Example: "big-orders"},
				serdeParam("keySerde", "How keys are written; default: the stream's (windowed keys: windowed over the grouping key's serde).", ""),
				serdeParam("valueSerde", "How values are written; default: the stream's.", ""),
				nameParam(),
			}},
		{Name: KindOpaque, Title: "Unknown processor", Group: GroupStateless,
			Description: "A processor imported from describe() whose kind cannot be told from its name; replace it.",
			Inputs:      in(Stream), Outputs: out(Stream),
			Params: []Param{nameParam()}, ImportOnly: true},
	}
}
