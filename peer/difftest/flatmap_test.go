package difftest

import "testing"

// baskets are records with lists: empty, of numbers whole and not, of
// objects, and a tombstone.
var baskets = []Input{
	rec("in", "b1", `{"items":[1,2.5,3.0],"owner":"alice"}`, 1000),
	rec("in", "b2", `{"items":[],"owner":"bob"}`, 2000),
	rec("in", "b3", `{"items":[{"sku":"x","n":2},{"sku":"y","n":1}],"owner":"alice"}`, 3000),
	rec("in", "b1", `{"items":[4],"owner":"carol"}`, 2500),
}

// TestDifferentialFlatMaps runs hand-written flat-maps and
// flat-map-values: lists from the value and list literals, empty lists,
// nil keys and values, and a count of what they make (a flat-map's keys
// repartitioned).
func TestDifferentialFlatMaps(t *testing.T) {
	runBoth(t, []Case{
		{Name: "flat-map-values of a field", Input: baskets, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("f", "flat-map-values", "values", "value.items"),
			n("sink", "sink", "topic", "out"))},
		{Name: "flat-map-values of a list literal", Input: baskets, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("f", "flat-map-values", "values", `[value.owner, {who: value.owner, n: 2 * 3}, nil, 1.0]`),
			n("sink", "sink", "topic", "out"))},
		{Name: "flat-map", Input: baskets, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("f", "flat-map", "records", `[{key: value.owner, value: key}, {key: key + "!", value: value.items}, {key: nil, value: nil}]`),
			n("sink", "sink", "topic", "out"))},
		{Name: "flat-map counted", Input: baskets, Design: chain(
			n("src", "source-stream", "topic", "in"),
			n("f", "flat-map", "records", `[{key: value.owner, value: key}, {key: "all", value: key}]`),
			n("g", "group-by-key"),
			n("c", "count"),
			n("ts", "to-stream"),
			n("sink", "sink", "topic", "out"))},
	})
}
