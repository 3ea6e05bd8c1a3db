package streams

import "time"

// Option adjusts one operator: its name, its serdes, its timestamp
// extractor or a repartition's partition count. Each operator documents the
// options it takes; Build reports an option given to an operator that does
// not take it.
type Option struct {
	kind  optionKind
	apply func(*operatorOptions)
}

type optionKind uint8

const (
	optName optionKind = 1 << iota
	optSerdes
	optTimestamps
	optPartitions
	optStore
	optJoinSerdes
)

var optionNames = map[optionKind]string{
	optName:       "Named",
	optSerdes:     "WithSerdes",
	optTimestamps: "WithTimestamps",
	optPartitions: "WithPartitions",
	optStore:      "Materialized",
	optJoinSerdes: "JoinSerdes",
}

type operatorOptions struct {
	name       string
	keySerde   Serde
	valueSerde Serde
	timestamps TimestampExtractor
	partitions int
	// partitionsSet tells WithPartitions(0) from no WithPartitions.
	partitionsSet bool
	store         StoreOptions
	// storeSet says Materialized was given, for operators that keep no
	// store without it.
	storeSet bool
	// joinKey, joinValue and joinOther are a join's input serdes
	// (JoinSerdes).
	joinKey, joinValue, joinOther Serde
}

// StoreOptions say how an aggregation or table keeps its state.
type StoreOptions struct {
	// Name names the store, its changelog topic
	// ("<app-id>-<name>-changelog") and its queries. Default: generated
	// as Kafka Streams does ("KSTREAM-AGGREGATE-STATE-STORE-0000000002").
	Name string
	// LoggingDisabled keeps the store without a changelog: faster, but a
	// task that moves starts from an empty store.
	LoggingDisabled bool
	// CachingDisabled sends every update downstream and to the
	// changelog; with the cache on (the default) repeated updates of one
	// key between commits go out once.
	CachingDisabled bool
	// KeySerde and ValueSerde (de)serialize the store's keys and values.
	// Defaults: the stream's key serde, and for values the operator's own
	// (Int64 for Count) or the stream's value serde.
	KeySerde, ValueSerde Serde
	// Retention is how long a window store keeps a window after its start
	// (a session store a session after its end), for queries. Default and
	// minimum: until the window closes (size + grace; for sessions gap +
	// grace). Windowed aggregations only.
	Retention time.Duration
}

// Materialized sets how an aggregation or a table keeps its state.
func Materialized(o StoreOptions) Option {
	return Option{kind: optStore, apply: func(oo *operatorOptions) { oo.store, oo.storeSet = o, true }}
}

// Named gives an operator its name in the topology and in Describe. Without
// it, names are generated the way Kafka Streams generates them
// ("KSTREAM-FILTER-0000000001").
func Named(name string) Option {
	return Option{kind: optName, apply: func(o *operatorOptions) { o.name = name }}
}

// WithSerdes sets the key and value serdes of a source, sink or
// repartition topic. A nil serde keeps what the stream already knows, or
// the Config default.
func WithSerdes(key, value Serde) Option {
	return Option{kind: optSerdes, apply: func(o *operatorOptions) { o.keySerde, o.valueSerde = key, value }}
}

// JoinSerdes sets the serdes of a stream join's inputs, as Kafka Streams'
// Joined and StreamJoined do: the key's, the (left) stream's values' and
// the other stream's values' (a stream-table join's table keeps its own).
// They serialize the repartition topic of an input whose key changed
// upstream and a stream-stream join's buffers; a nil serde keeps what the
// stream already knows, or the Config default. After Map, FlatMap or an
// operator that changes values a stream knows no value serde: a join
// there needs this option. WithSerdes sets the result's serdes.
func JoinSerdes(key, value, otherValue Serde) Option {
	return Option{kind: optJoinSerdes, apply: func(o *operatorOptions) { o.joinKey, o.joinValue, o.joinOther = key, value, otherValue }}
}

// WithTimestamps sets the timestamp extractor of a source. Default: the
// record's own timestamp.
func WithTimestamps(ex TimestampExtractor) Option {
	return Option{kind: optTimestamps, apply: func(o *operatorOptions) { o.timestamps = ex }}
}

// WithPartitions sets the partition count of a repartition topic. Default:
// the partition count of the upstream sub-topology's input topics.
func WithPartitions(n int) Option {
	return Option{kind: optPartitions, apply: func(o *operatorOptions) { o.partitions, o.partitionsSet = n, true }}
}

// resolveOptions applies opts for the operator op, recording an error in
// the builder for every option op does not take.
func (b *Builder) resolveOptions(op string, allowed optionKind, opts []Option) operatorOptions {
	b.begin(op)
	var o operatorOptions
	for _, opt := range opts {
		if opt.apply == nil {
			b.errorf("%s: a zero Option was given", op)
			continue
		}
		if opt.kind&allowed == 0 {
			b.errorAt(blame{option: optionNames[opt.kind]}, "%s: option %s does not apply to it", op, optionNames[opt.kind])
			continue
		}
		opt.apply(&o)
	}
	if o.partitionsSet && o.partitions <= 0 {
		b.errorAt(blame{option: "WithPartitions"}, "%s: WithPartitions(%d): the partition count must be positive", op, o.partitions)
	}
	return o
}

func (b *Builder) errorf(format string, args ...any) {
	b.errorAt(blame{}, format, args...)
}
