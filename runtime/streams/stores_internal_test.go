package streams

import "testing"

// TestTypedValuesDecodesAs checks which values a store's serde decodes
// back to themselves, value and type: those the cache may keep decoded.
func TestTypedValuesDecodesAs(t *testing.T) {
	i64, str := stampedSerde{inner: Int64}, stampedSerde{inner: String}
	for _, c := range []struct {
		serde Serde
		v     any
		want  bool
	}{
		{Int64, int64(7), true},
		{Int64, 7, false},
		{Int64, "s", false},
		{Int64, nil, false},
		{String, "s", true},
		{String, "", true},
		{String, []byte("b"), false},
		{String, int64(7), false},
		{Bytes, []byte("b"), false},
		{JSON, map[string]any{}, false},
		{JSON, "s", false},
		{i64, stamped{value: int64(7), ts: 1}, true},
		{i64, int64(7), false},
		{i64, stamped{value: 7}, false},
		{i64, stamped{}, false},
		{str, stamped{value: "x"}, true},
		{str, stamped{value: int64(1)}, false},
		{stampedSerde{inner: JSON}, stamped{value: "s"}, false},
	} {
		if got := typedValuesOf(c.serde).decodesAs(c.v); got != c.want {
			t.Errorf("%s: decodesAs(%#v) = %v, want %v", c.serde.Name(), c.v, got, c.want)
		}
	}
}
