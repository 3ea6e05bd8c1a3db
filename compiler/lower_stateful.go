package compiler

import (
	"github.com/braidstream/braid/designer"
)

// regroup lowers the nodes that set a stream's serdes and name its
// repartition topic: repartition, group-by-key and group-by.
func (l *lowering) regroup(i int, in *shape) *plan {
	n := l.c.d.Nodes[i]
	name := repartitionName(n)
	key := keyInfo{serde: serdeParam(n, "keySerde", in.key.serde), win: in.key.win}
	value := serdeParam(n, "valueSerde", in.value)
	p := &plan{on: 0}
	p.needSerdes(key, value)
	opts := named(name)
	switch n.Kind {
	case designer.KindRepartition:
		opts = append(opts, serdesArg{keySerde(key, ""), serde{name: value}})
		if partitions := designer.ParamInt(n, "partitions"); partitions > 0 {
			opts = append(opts, partitionsArg(partitions))
		}
		p.calls = []dslCall{call("Repartition", opts...)}
		p.out = &shape{typ: designer.Stream, key: key, value: value}
	case designer.KindGroupByKey:
		p.calls = []dslCall{call("GroupByKey", append(opts, serdesArg{keySerde(key, ""), serde{name: value}})...)}
		p.out = &shape{typ: designer.GroupedStream, key: key, value: value, repart: in.repart, groupName: name}
	default: // group-by: a new key, never windowed
		key.win = nil
		opts = append(opts, serdesArg{serde{name: key.serde}, serde{name: value}})
		var fn arg = l.fn(i, "key", designer.KeyMapper)
		p.out = &shape{typ: designer.GroupedStream, key: key, value: value, repart: true, groupName: name}
		if in.typ == designer.Table {
			fn = keyValueArg{l.fn(i, "key", designer.KeyMapper), l.expr(i, "value", designer.ValueMapper)}
			p.out.typ = designer.GroupedTable
		}
		p.calls = []dslCall{call("GroupBy", args([]arg{fn}, opts)...)}
	}
	return p
}

// aggregateValueSerde is the serde of an aggregation's store values: its
// valueSerde parameter, else int64 for count, the stream's (inValue) for
// reduce and json for aggregate.
func aggregateValueSerde(n designer.Node, inValue string) string {
	dflt := "json"
	switch n.Kind {
	case designer.KindCount:
		dflt = "int64"
	case designer.KindReduce:
		dflt = inValue
	}
	return serdeParam(n, "valueSerde", dflt)
}

// aggregate lowers count, reduce and aggregate on a grouped stream or
// table or a windowed stream. A count whose store is count()'s (no name,
// nothing else set) is called without Materialized, so that the runtime
// (as Kafka Streams) generates no name it would throw away. An aggregate
// of session windows, or of any windows with a merger, merges sessions
// first.
func (l *lowering) aggregate(i int, in *shape, opName string) *plan {
	n := l.c.d.Nodes[i]
	value := aggregateValueSerde(n, in.value)
	p := &plan{on: 0, keepsStore: true}
	if value == "" {
		p.problems = append(p.problems, nodeProblem{"valueSerde", "the streams merged before this node have different value serdes: set valueSerde"})
	}
	store := storeOf(n, value)
	windowed := in.typ == designer.WindowedStream
	if windowed && designer.IsSet(n.Params["retention"]) {
		store.retention = designer.ParamDuration(n, "retention")
	}
	opts := named(opName)
	if n.Kind != designer.KindCount || store != (storeArg{serde: "int64"}) {
		opts = append(opts, store)
	}
	table := in.typ == designer.GroupedTable
	switch n.Kind {
	case designer.KindCount:
		p.calls = []dslCall{call("Count", opts...)}
	case designer.KindReduce:
		fns := []arg{l.fn(i, "reducer", designer.Reducer)}
		if table {
			fns = append(fns, l.fn(i, "subtractor", designer.Reducer))
		}
		p.calls = []dslCall{call("Reduce", args(fns, opts)...)}
	default:
		fns := []arg{l.fn(i, "initializer", designer.Initializer), l.fn(i, "aggregator", designer.Aggregator)}
		if table {
			fns = append(fns, l.fn(i, "subtractor", designer.Aggregator))
		}
		if windowed && (in.win.session || l.expr(i, "merger", designer.SessionMerger) != nil) {
			p.calls = []dslCall{call("MergeSessionsWith", l.fn(i, "merger", designer.SessionMerger))}
		}
		p.calls = append(p.calls, call("Aggregate", args(fns, opts)...))
	}
	key := in.key
	if windowed {
		key.win = in.win
	}
	p.out = &shape{typ: designer.Table, key: key, value: value}
	return p
}

// join lowers a join node: the left (or stream) input's join method,
// taking the right (or table) input. Its result keeps the left input's
// key serde and has the json value serde (what a joiner makes is an
// expression's value, an object by default). A stream input's own serdes
// go with JoinSerdes: after a map the runtime knows them no more, and
// repartitions and buffers the stream in them.
func (l *lowering) join(i int, in []*shape, ports map[string]int, opName string) *plan {
	n := l.c.d.Nodes[i]
	leftPort, rightPort := "left", "right"
	if n.Kind == designer.KindStreamTableJoin {
		leftPort, rightPort = "stream", "table"
	}
	on, ok1 := ports[leftPort]
	other, ok2 := ports[rightPort]
	if !ok1 || !ok2 {
		return nil // Validate reports the unconnected input
	}
	left, right := in[on], in[other]
	method := map[string]string{designer.LeftJoin: "LeftJoin", designer.OuterJoin: "OuterJoin"}[designer.ParamString(n, "type")]
	if method == "" {
		method = "Join"
	}
	key := serde{name: left.key.serde}
	opts := args(named(opName), []arg{serdesArg{key, serde{name: joinValueSerde}}})
	fns := []arg{inputArg(other), l.fn(i, "joiner", designer.Joiner)}
	p := &plan{on: on, out: &shape{typ: designer.Stream, key: keyInfo{serde: left.key.serde}, value: joinValueSerde}}
	switch n.Kind {
	case designer.KindStreamJoin:
		fns = append(fns, joinWindows(n))
		opts = append(opts, joinSerdesArg{key, serde{name: left.value}, serde{name: right.value}})
	case designer.KindStreamTableJoin:
		if method != "LeftJoin" {
			method = "Join"
		}
		method += "Table"
		opts = append(opts, joinSerdesArg{key, serde{name: left.value}, serde{}})
	case designer.KindTableJoin:
		if designer.ParamString(n, "store") != "" {
			opts = append(opts, storeOf(n, joinValueSerde))
			p.keepsStore = true
		}
		p.out.typ = designer.Table
	}
	p.calls = []dslCall{call(method, args(fns, opts)...)}
	return p
}

// sink lowers a sink: its keySerde parameter may give a basic serde, or
// write windowed keys as "windowed" (Kafka Streams' binary layout, the
// default) or "windowed-json".
func (l *lowering) sink(i int, in *shape, opName string) *plan {
	n := l.c.d.Nodes[i]
	kp := designer.ParamString(n, "keySerde")
	key, value := in.key, serdeParam(n, "valueSerde", in.value)
	if kp != "" && kp != "windowed" && kp != "windowed-json" {
		key = keyInfo{serde: kp}
	}
	p := &plan{on: 0}
	p.needSerdes(key, value)
	p.calls = []dslCall{call("To", args([]arg{topicArg(designer.ParamString(n, "topic"))}, named(opName),
		[]arg{serdesArg{keySerde(key, kp), serde{name: value}}})...)}
	return p
}
