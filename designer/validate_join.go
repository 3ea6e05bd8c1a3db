package designer

import (
	"time"
)

// joinKinds are the kinds that join two inputs on their keys.
var joinKinds = map[Kind]bool{KindStreamJoin: true, KindStreamTableJoin: true, KindTableJoin: true}

// joins checks what the join kinds need beyond their parameters one by
// one: a stream-stream join's window, and inputs that the design shows to
// be partitioned differently. That both inputs are connected, and to the
// right types, the ports already say.
func (v *validator) joins() {
	for i := range v.d.Nodes {
		k := v.kinds[i]
		if k == nil || !joinKinds[k.Name] {
			continue
		}
		if k.Name == KindStreamJoin {
			v.joinWindow(i)
		}
		v.copartitioned(i, k)
	}
}

// joinWindow checks a stream-stream join's window: a time difference
// (window), or how far each side may lie before and after the other
// (before, after; each defaults to the window). Grace is checked by its
// type: a duration, not negative.
func (v *validator) joinWindow(i int) {
	n := v.d.Nodes[i]
	set := func(name string) bool { return IsSet(n.Params[name]) }
	valid := func(name string) (time.Duration, bool) {
		d, err := durationOf(n.Params[name])
		return d, err == nil // a bad value is reported by checkValue
	}
	switch {
	case set("before") && set("after"):
		if set("window") {
			v.add(i, "window", "is not used when before and after are both set: leave it empty, or unset one of them")
		}
		before, okB := valid("before")
		after, okA := valid("after")
		if okB && okA && before+after == 0 {
			v.add(i, "after", "before and after are both 0: the window must be more than 0")
		}
	case set("window"):
		if w, ok := valid("window"); ok && w == 0 {
			v.add(i, "window", "must be more than 0")
		}
	default:
		v.add(i, "window", "required: the time difference within which records of the two sides join (or set before and after)")
	}
}

// copartitioned reports a join whose inputs come from repartition nodes
// that declare different partition counts: records of one key would sit
// in partitions of different numbers, and never meet. Source topics'
// partition counts are not part of a design; a key changed upstream is
// repartitioned by the runtime, to a count the design does not say.
func (v *validator) copartitioned(i int, k *KindSpec) {
	if len(k.Inputs) != 2 {
		return
	}
	var counts [2]int
	var from [2]string
	for j, p := range k.Inputs {
		edges := v.in[i][p.Name]
		if len(edges) != 1 || !v.edges[edges[0]].fromOK {
			return
		}
		counts[j], from[j] = v.partitions(v.edges[edges[0]].from, map[int]bool{})
		if counts[j] == 0 {
			return
		}
	}
	if counts[0] != counts[1] {
		v.add(i, "", "input %q has %d partitions (repartition %q) but input %q has %d (repartition %q): a join needs both inputs in the same number of partitions",
			k.Inputs[0].Name, counts[0], from[0], k.Inputs[1].Name, counts[1], from[1])
	}
}

// partitionPreserving are the kinds whose output is partitioned as their
// input: they neither change keys nor move records between partitions.
var partitionPreserving = map[Kind]bool{
	KindFilter: true, KindFilterNot: true, KindMapValues: true, KindFlatMapValues: true,
	KindPeek: true, KindBranch: true, KindToStream: true,
}

// partitions returns the partition count that node i's output is known
// to have, and the id of the repartition node declaring it: 0 when the
// design does not say (sources, key changers, groupings, merges of
// differently partitioned streams, cycles).
func (v *validator) partitions(i int, seen map[int]bool) (int, string) {
	k := v.kinds[i]
	if k == nil || seen[i] {
		return 0, ""
	}
	seen[i] = true
	n := v.d.Nodes[i]
	switch {
	case k.Name == KindRepartition:
		return ParamInt(n, "partitions"), n.ID
	case partitionPreserving[k.Name] || k.Name == KindMerge:
		count, from := 0, ""
		for _, e := range v.in[i]["in"] {
			r := v.edges[e]
			if !r.fromOK {
				return 0, ""
			}
			c, f := v.partitions(r.from, seen)
			if c == 0 || count != 0 && c != count {
				return 0, ""
			}
			count, from = c, f
		}
		return count, from
	}
	return 0, ""
}
