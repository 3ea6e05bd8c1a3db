package streams

import "testing"

// TestTypedValuesAsDecodesAs checks that a store's typedValues, worked out
// once from its serde, says of every value what decodesAs says.
func TestTypedValuesAsDecodesAs(t *testing.T) {
	serdes := []Serde{Int64, String, Bytes, JSON, stampedSerde{inner: Int64}, stampedSerde{inner: String}, stampedSerde{inner: JSON}}
	values := []any{nil, int64(7), 7, "s", []byte("b"), map[string]any{}, stamped{value: int64(7), ts: 1},
		stamped{value: "s"}, stamped{value: 7}, stamped{}}
	for _, serde := range serdes {
		tv := typedValuesOf(serde)
		for _, v := range values {
			if got, want := tv.decodesAs(v), decodesAs(serde, v); got != want {
				t.Errorf("%s: typedValues.decodesAs(%#v) = %v, decodesAs = %v", serde.Name(), v, got, want)
			}
		}
	}
	for _, c := range []struct {
		serde Serde
		v     any
	}{{Int64, int64(1)}, {String, ""}, {stampedSerde{inner: Int64}, stamped{value: int64(1)}}, {stampedSerde{inner: String}, stamped{value: "x"}}} {
		if !typedValuesOf(c.serde).decodesAs(c.v) {
			t.Errorf("%s: %#v does not decode as itself", c.serde.Name(), c.v)
		}
	}
}
