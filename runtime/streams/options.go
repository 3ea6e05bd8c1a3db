package streams

import "fmt"

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
)

var optionNames = map[optionKind]string{
	optName:       "Named",
	optSerdes:     "WithSerdes",
	optTimestamps: "WithTimestamps",
	optPartitions: "WithPartitions",
}

type operatorOptions struct {
	name       string
	keySerde   Serde
	valueSerde Serde
	timestamps TimestampExtractor
	partitions int
	// partitionsSet tells WithPartitions(0) from no WithPartitions.
	partitionsSet bool
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
	var o operatorOptions
	for _, opt := range opts {
		if opt.apply == nil {
			b.errorf("%s: a zero Option was given", op)
			continue
		}
		if opt.kind&allowed == 0 {
			b.errorf("%s: option %s does not apply to it", op, optionNames[opt.kind])
			continue
		}
		opt.apply(&o)
	}
	if o.partitionsSet && o.partitions <= 0 {
		b.errorf("%s: WithPartitions(%d): the partition count must be positive", op, o.partitions)
	}
	return o
}

func (b *Builder) errorf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}
