package compiler

import (
	"strconv"
	"strings"
	"time"

	"github.com/braidstream/braid/designer"
	"github.com/braidstream/braid/runtime/streams"
)

// The arguments of a plan's DSL calls. Each knows what it is twice, side
// by side: value, what the runtime's DSL takes (Compile's back-end), and
// code, the Go source an exported program passes (ExportGo's back-end).
// Keeping both in one type is what keeps the two back-ends from drifting:
// a serde, a store's options or a window is decided once, by the lowering,
// and only spelled two ways here.

// arg is one argument of a DSL call: a positional one (a function, a
// window, another input) or an Option.
type arg interface {
	// value is the argument for the runtime; in are the node's inputs.
	value(in []*val) any
	// code is the argument as Go source; in are the node's inputs.
	code(x *exporter, in []*xval) string
	// paramFor is the design parameter this argument came from that a
	// Build error blaming at means: "" when at is not about this
	// argument, or when no one parameter makes it (windows, from a size
	// and a grace) and the node as a whole is at fault.
	paramFor(at blame) string
}

// blame is what of a DSL call a streams.BuildError says is at fault:
// its Option and Arg.
type blame struct{ option, arg string }

func blameOf(be *streams.BuildError) blame { return blame{be.Option, be.Arg} }

// serde is a serde by name: a basic serde ("string", "json", "int64",
// "bytes"; "" where merged streams disagree, nil to the runtime), windowed
// by win when win is set, as JSON when json is set (a sink's
// "windowed-json").
type serde struct {
	name string
	win  *windowInfo
	json bool
}

// keySerde is the serde of keys k, which a sink's keySerde parameter
// (param, "" for the default) may override with a basic serde or ask
// for as windowed-json.
func keySerde(k keyInfo, param string) serde {
	if param != "" && param != "windowed" && param != "windowed-json" {
		return serde{name: param}
	}
	return serde{name: k.serde, win: k.win, json: param == "windowed-json"}
}

func (s serde) value() streams.Serde {
	inner := basicSerde(s.name)
	if s.win == nil || inner == nil {
		return inner
	}
	switch {
	case s.json:
		return streams.WindowedJSON(inner)
	case s.win.session:
		return streams.SessionWindowedSerde(inner)
	default:
		return streams.TimeWindowedSerde(inner, s.win.size.Milliseconds())
	}
}

func (s serde) code() string {
	inner := basicSerdeCode(s.name)
	if s.win == nil || inner == "nil" {
		return inner
	}
	switch {
	case s.json:
		return "streams.WindowedJSON(" + inner + ")"
	case s.win.session:
		return "streams.SessionWindowedSerde(" + inner + ")"
	default:
		return "streams.TimeWindowedSerde(" + inner + ", " + strconv.FormatInt(s.win.size.Milliseconds(), 10) + ")"
	}
}

func basicSerde(name string) streams.Serde {
	switch name {
	case "string":
		return streams.String
	case "json":
		return streams.JSON
	case "int64":
		return streams.Int64
	case "bytes":
		return streams.Bytes
	}
	return nil
}

func basicSerdeCode(name string) string {
	switch name {
	case "string":
		return "streams.String"
	case "json":
		return "streams.JSON"
	case "int64":
		return "streams.Int64"
	case "bytes":
		return "streams.Bytes"
	}
	return "nil"
}

// namedArg is streams.Named.
type namedArg string

func (a namedArg) value([]*val) any                    { return streams.Named(string(a)) }
func (a namedArg) code(*exporter, []*xval) string      { return "streams.Named(" + quote(string(a)) + ")" }
func (a topicArg) value([]*val) any                    { return string(a) }
func (a topicArg) code(*exporter, []*xval) string      { return quote(string(a)) }
func (a topicsArg) value([]*val) any                   { return []string{string(a)} }
func (a topicsArg) code(*exporter, []*xval) string     { return "[]string{" + quote(string(a)) + "}" }
func (a inputArg) value(in []*val) any                 { return in[a].h }
func (a inputArg) code(_ *exporter, in []*xval) string { return in[a].code.expression() }
func (emitArg) value([]*val) any                       { return streams.EmitOnWindowClose }
func (emitArg) code(*exporter, []*xval) string         { return "streams.EmitOnWindowClose" }

// A node's operator name is its name parameter (or Node.Name, which the
// designer shows as it); a topic is the topic parameter.
func (namedArg) paramFor(at blame) string  { return when(at == blame{option: "Named"}, "name") }
func (topicArg) paramFor(at blame) string  { return when(at == blame{arg: "topic"}, "topic") }
func (topicsArg) paramFor(at blame) string { return when(at == blame{arg: "topics"}, "topic") }
func (inputArg) paramFor(blame) string     { return "" } // an edge
func (emitArg) paramFor(blame) string      { return "" } // the runtime checks nothing

// when is param when blamed, else "".
func when(blamed bool, param string) string {
	if blamed {
		return param
	}
	return ""
}

// topicArg is a topic's name, Table's and To's argument; topicsArg a
// source's one topic, Stream's.
type (
	topicArg  string
	topicsArg string
)

// inputArg is the node's input of that index, a join's other side or a
// stream merged in.
type inputArg int

// emitArg is streams.EmitOnWindowClose, WindowedStream.Emit's argument.
type emitArg struct{}

// named is the Named option of name, none for "".
func named(name string) []arg {
	if name == "" {
		return nil
	}
	return []arg{namedArg(name)}
}

// serdesArg is streams.WithSerdes.
type serdesArg struct{ key, val serde }

func (a serdesArg) value([]*val) any {
	return streams.WithSerdes(a.key.value(), a.val.value())
}

func (a serdesArg) code(*exporter, []*xval) string {
	return "streams.WithSerdes(" + a.key.code() + ", " + a.val.code() + ")"
}

// The runtime finds no mistake in serdes; a nil one means the default.
func (serdesArg) paramFor(blame) string     { return "" }
func (joinSerdesArg) paramFor(blame) string { return "" }

// joinSerdesArg is streams.JoinSerdes: a stream join's inputs' serdes.
type joinSerdesArg struct{ key, val, other serde }

func (a joinSerdesArg) value([]*val) any {
	return streams.JoinSerdes(a.key.value(), a.val.value(), a.other.value())
}

func (a joinSerdesArg) code(*exporter, []*xval) string {
	return "streams.JoinSerdes(" + a.key.code() + ", " + a.val.code() + ", " + a.other.code() + ")"
}

// partitionsArg is streams.WithPartitions.
type partitionsArg int

func (a partitionsArg) value([]*val) any { return streams.WithPartitions(int(a)) }
func (a partitionsArg) code(*exporter, []*xval) string {
	return "streams.WithPartitions(" + strconv.Itoa(int(a)) + ")"
}

func (partitionsArg) paramFor(at blame) string {
	return when(at == blame{option: "WithPartitions"}, "partitions")
}

// storeArg is streams.Materialized with the options of a node's store.
type storeArg struct {
	name             string
	logging, caching bool // disabled
	serde            string
	retention        time.Duration // 0: the runtime's default
}

// storeOf is the store node n asks for with its store, logging and
// caching parameters, its values in serde (none for "").
func storeOf(n designer.Node, serde string) storeArg {
	return storeArg{
		name:    designer.ParamString(n, "store"),
		logging: designer.ParamString(n, "logging") == "off",
		caching: designer.ParamString(n, "caching") == "off",
		serde:   serde,
	}
}

func (a storeArg) value([]*val) any {
	return streams.Materialized(streams.StoreOptions{Name: a.name, LoggingDisabled: a.logging, CachingDisabled: a.caching,
		ValueSerde: basicSerde(a.serde), Retention: a.retention})
}

func (a storeArg) code(*exporter, []*xval) string {
	var fields []string
	if a.name != "" {
		fields = append(fields, "Name: "+quote(a.name))
	}
	if a.logging {
		fields = append(fields, "LoggingDisabled: true")
	}
	if a.caching {
		fields = append(fields, "CachingDisabled: true")
	}
	if s := basicSerdeCode(a.serde); s != "nil" {
		fields = append(fields, "ValueSerde: "+s)
	}
	if a.retention != 0 {
		fields = append(fields, "Retention: "+durationCode(a.retention))
	}
	return "streams.Materialized(streams.StoreOptions{" + strings.Join(fields, ", ") + "})"
}

// paramFor is the parameter of the field at fault, as storeOf and the
// lowering of aggregations set them: a store's name, its retention.
func (storeArg) paramFor(at blame) string {
	switch at {
	case blame{option: "Materialized", arg: "Name"}:
		return "store"
	case blame{option: "Materialized", arg: "Retention"}:
		return "retention"
	}
	return ""
}

// windowsArg is a windowed-by node's windows.
type windowsArg struct {
	typ                       string
	size, advance, gap, grace time.Duration
}

// windowsOf returns the windows of a windowed-by node, and what keys
// windowed by them are.
func windowsOf(n designer.Node) (windowsArg, *windowInfo) {
	w := windowsArg{typ: designer.ParamString(n, "type"), grace: designer.ParamDuration(n, "grace")}
	switch w.typ {
	case designer.Session:
		w.gap = designer.ParamDuration(n, "gap")
		return w, &windowInfo{session: true}
	case designer.Hopping:
		w.advance = designer.ParamDuration(n, "advance")
	case designer.Sliding:
	default:
		w.typ = designer.Tumbling
	}
	w.size = designer.ParamDuration(n, "size")
	return w, &windowInfo{size: w.size, sliding: w.typ == designer.Sliding}
}

func (w windowsArg) value([]*val) any {
	switch w.typ {
	case designer.Hopping:
		return streams.Hopping(w.size, w.advance, w.grace)
	case designer.Sliding:
		return streams.Sliding(w.size, w.grace)
	case designer.Session:
		return streams.Sessions(w.gap, w.grace)
	}
	return streams.Tumbling(w.size, w.grace)
}

func (w windowsArg) code(*exporter, []*xval) string {
	grace := durationCode(w.grace)
	switch w.typ {
	case designer.Hopping:
		return "streams.Hopping(" + durationCode(w.size) + ", " + durationCode(w.advance) + ", " + grace + ")"
	case designer.Sliding:
		return "streams.Sliding(" + durationCode(w.size) + ", " + grace + ")"
	case designer.Session:
		return "streams.Sessions(" + durationCode(w.gap) + ", " + grace + ")"
	}
	return "streams.Tumbling(" + durationCode(w.size) + ", " + grace + ")"
}

// Windows are made of several parameters (a size, a grace, ...); a
// Build error about them is the node's.
func (windowsArg) paramFor(blame) string     { return "" }
func (joinWindowsArg) paramFor(blame) string { return "" }

// joinWindowsArg is a stream join's windows: before and after default to
// its window (the time difference).
type joinWindowsArg streams.JoinWindows

func joinWindows(n designer.Node) joinWindowsArg {
	window := designer.ParamDuration(n, "window")
	w := joinWindowsArg{Before: window, After: window, Grace: designer.ParamDuration(n, "grace")}
	if designer.IsSet(n.Params["before"]) {
		w.Before = designer.ParamDuration(n, "before")
	}
	if designer.IsSet(n.Params["after"]) {
		w.After = designer.ParamDuration(n, "after")
	}
	return w
}

func (w joinWindowsArg) value([]*val) any { return streams.JoinWindows(w) }

// code is JoinTimeDifference when the windows are symmetric, else the
// JoinWindows literal.
func (w joinWindowsArg) code(*exporter, []*xval) string {
	if w.Before == w.After {
		return "streams.JoinTimeDifference(" + durationCode(w.Before) + ", " + durationCode(w.Grace) + ")"
	}
	return "streams.JoinWindows{Before: " + durationCode(w.Before) + ", After: " + durationCode(w.After) + ", Grace: " + durationCode(w.Grace) + "}"
}

// durationCode writes d in the largest unit that holds it whole.
func durationCode(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return "time." + u.name
			}
			return strconv.FormatInt(int64(d/u.d), 10) + " * time." + u.name
		}
	}
	return "time.Duration(" + strconv.FormatInt(int64(d), 10) + ")"
}
