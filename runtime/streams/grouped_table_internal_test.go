package streams

import (
	"errors"
	"reflect"
	"testing"
)

// TestChangeSerdeRoundTrip carries each form of a re-grouped row's change
// over a repartition topic's bytes, and refuses bytes that are not one.
func TestChangeSerdeRoundTrip(t *testing.T) {
	s := changeSerde{inner: String}
	for _, c := range []tableChange{{add: "new"}, {sub: "old"}, {sub: "old", add: "new"}, {sub: "", add: ""}} {
		b, err := s.Serialize("t", c)
		if err != nil {
			t.Fatalf("serializing %+v: %v", c, err)
		}
		got, err := s.Deserialize("t", b)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("%+v came back as %+v, %v", c, got, err)
		}
	}
	for _, b := range [][]byte{nil, {3}, {2}, {2, 9, 'x'}} {
		var se *SerdeError
		if _, err := s.Deserialize("t", b); !errors.As(err, &se) {
			t.Errorf("Deserialize(%v) = %v, want a SerdeError", b, err)
		}
	}
}
