package streams_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

func TestSerdeNames(t *testing.T) {
	for _, tt := range []struct {
		serde streams.Serde
		want  string
	}{
		{streams.Bytes, "bytes"},
		{streams.String, "string"},
		{streams.Int64, "int64"},
		{streams.JSON, "json"},
	} {
		if got := tt.serde.Name(); got != tt.want {
			t.Errorf("Name() = %q, want %q", got, tt.want)
		}
	}
}

func TestSerdeRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name  string
		serde streams.Serde
		in    any
		// wire is the serialized form; nil means "do not check".
		wire []byte
		// out is what Deserialize returns; nil means in.
		out any
	}{
		{name: "bytes", serde: streams.Bytes, in: []byte("raw\x00\xff"), wire: []byte("raw\x00\xff")},
		{name: "bytes empty", serde: streams.Bytes, in: []byte{}, wire: []byte{}},
		{name: "bytes from string", serde: streams.Bytes, in: "text", wire: []byte("text"), out: []byte("text")},
		{name: "string", serde: streams.String, in: "héllo, 世界", wire: []byte("héllo, 世界")},
		{name: "string empty", serde: streams.String, in: "", wire: []byte{}},
		{name: "string from bytes", serde: streams.String, in: []byte("b"), wire: []byte("b"), out: "b"},
		{name: "string from Stringer", serde: streams.String, in: 90 * time.Second, wire: []byte("1m30s"), out: "1m30s"},
		{name: "int64 zero", serde: streams.Int64, in: int64(0), wire: []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "int64 one", serde: streams.Int64, in: int64(1), wire: []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{name: "int64 big-endian", serde: streams.Int64, in: int64(0x0102030405060708), wire: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{name: "int64 minus one", serde: streams.Int64, in: int64(-1), wire: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{name: "int64 max", serde: streams.Int64, in: int64(math.MaxInt64), wire: []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{name: "int64 min", serde: streams.Int64, in: int64(math.MinInt64), wire: []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{name: "int64 from int", serde: streams.Int64, in: 300, wire: []byte{0, 0, 0, 0, 0, 0, 1, 44}, out: int64(300)},
		{name: "int64 from int32", serde: streams.Int64, in: int32(-2), wire: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, out: int64(-2)},
		{
			name:  "json object",
			serde: streams.JSON,
			in:    map[string]any{"id": 7.0, "tags": []any{"a", "b"}, "ok": true, "none": nil},
			wire:  []byte(`{"id":7,"none":null,"ok":true,"tags":["a","b"]}`),
		},
		{name: "json string", serde: streams.JSON, in: "x", wire: []byte(`"x"`)},
		{name: "json number decodes as float64", serde: streams.JSON, in: 42, wire: []byte(`42`), out: 42.0},
		{
			name:  "json struct decodes generically",
			serde: streams.JSON,
			in:    struct{ A int }{A: 1},
			wire:  []byte(`{"A":1}`),
			out:   map[string]any{"A": 1.0},
		},
		{
			name:  "json raw message passes through",
			serde: streams.JSON,
			in:    json.RawMessage(`{"already":"encoded"}`),
			wire:  []byte(`{"already":"encoded"}`),
			out:   map[string]any{"already": "encoded"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const topic = "round-trip"
			wire, err := tt.serde.Serialize(topic, tt.in)
			if err != nil {
				t.Fatalf("Serialize(%#v): %v", tt.in, err)
			}
			if wire == nil {
				t.Fatalf("Serialize(%#v) = nil, want a non-nil value (nil is a tombstone)", tt.in)
			}
			if tt.wire != nil && string(wire) != string(tt.wire) {
				t.Errorf("Serialize(%#v) = %q, want %q", tt.in, wire, tt.wire)
			}
			got, err := tt.serde.Deserialize(topic, wire)
			if err != nil {
				t.Fatalf("Deserialize(%q): %v", wire, err)
			}
			want := tt.out
			if want == nil {
				want = tt.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Deserialize(Serialize(%#v)) = %#v, want %#v", tt.in, got, want)
			}
		})
	}
}

// TestSerdeNil checks that a nil key or value, a Kafka null, stays nil in
// both directions with every serde, and is not confused with empty bytes.
func TestSerdeNil(t *testing.T) {
	for _, serde := range []streams.Serde{streams.Bytes, streams.String, streams.Int64, streams.JSON} {
		t.Run(serde.Name(), func(t *testing.T) {
			b, err := serde.Serialize("t", nil)
			if err != nil || b != nil {
				t.Errorf("Serialize(nil) = %q, %v; want nil, nil", b, err)
			}
			v, err := serde.Deserialize("t", nil)
			if err != nil || v != nil {
				t.Errorf("Deserialize(nil) = %#v, %v; want nil, nil", v, err)
			}
		})
	}
}

func TestSerdeErrors(t *testing.T) {
	const topic = "events"
	for _, tt := range []struct {
		name  string
		serde streams.Serde
		// Exactly one of in and wire is set: in to serialize, wire to
		// deserialize.
		in   any
		wire []byte
		want string // a substring of the error
	}{
		{name: "bytes from int", serde: streams.Bytes, in: 5, want: "cannot serialize int, want []byte or string"},
		{name: "string from int", serde: streams.String, in: 5, want: "cannot serialize int, want string"},
		{name: "int64 from string", serde: streams.Int64, in: "5", want: "cannot serialize string, want int64"},
		{name: "int64 from float64", serde: streams.Int64, in: 5.0, want: "cannot serialize float64, want int64"},
		{name: "int64 from 7 bytes", serde: streams.Int64, wire: make([]byte, 7), want: "want 8 bytes, got 7"},
		{name: "int64 from 9 bytes", serde: streams.Int64, wire: make([]byte, 9), want: "want 8 bytes, got 9"},
		{name: "int64 from empty", serde: streams.Int64, wire: []byte{}, want: "want 8 bytes, got 0"},
		{name: "json invalid", serde: streams.JSON, wire: []byte(`{"a":`), want: "unexpected end of JSON input"},
		{name: "json garbage", serde: streams.JSON, wire: []byte(`not json`), want: "invalid character"},
		{name: "json trailing data", serde: streams.JSON, wire: []byte(`{} {}`), want: "invalid character"},
		{name: "json empty", serde: streams.JSON, wire: []byte{}, want: "unexpected end of JSON input"},
		{name: "json channel", serde: streams.JSON, in: make(chan int), want: "unsupported type"},
		{name: "json NaN", serde: streams.JSON, in: math.NaN(), want: "unsupported value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.wire != nil {
				var v any
				v, err = tt.serde.Deserialize(topic, tt.wire)
				if err == nil {
					t.Fatalf("Deserialize(%q) = %#v, want an error", tt.wire, v)
				}
			} else {
				var b []byte
				b, err = tt.serde.Serialize(topic, tt.in)
				if err == nil {
					t.Fatalf("Serialize(%#v) = %q, want an error", tt.in, b)
				}
			}
			var se *streams.SerdeError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *streams.SerdeError", err, err)
			}
			if se.Serde != tt.serde.Name() || se.Topic != topic {
				t.Errorf("SerdeError names serde %q and topic %q, want %q and %q", se.Serde, se.Topic, tt.serde.Name(), topic)
			}
			msg := err.Error()
			for _, want := range []string{tt.serde.Name() + " serde", `topic "` + topic + `"`, tt.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("error %q does not wrap its cause", msg)
			}
		})
	}
}

func TestJSONTimestamp(t *testing.T) {
	const ms = 1_700_000_000_123 // 2023-11-14T22:13:20.123Z
	for _, tt := range []struct {
		name    string
		field   string
		value   any
		want    int64
		wantErr string // a substring; empty means no error
	}{
		{name: "number", field: "ts", value: map[string]any{"ts": float64(ms)}, want: ms},
		{name: "fractional number truncates", field: "ts", value: map[string]any{"ts": 1234.9}, want: 1234},
		{name: "json.Number", field: "ts", value: map[string]any{"ts": json.Number("1700000000123")}, want: ms},
		{name: "RFC 3339 UTC", field: "at", value: map[string]any{"at": "2023-11-14T22:13:20.123Z"}, want: ms},
		{name: "RFC 3339 with offset", field: "at", value: map[string]any{"at": "2023-11-15T00:13:20.123+02:00"}, want: ms},
		{name: "RFC 3339 without fraction", field: "at", value: map[string]any{"at": "2023-11-14T22:13:20Z"}, want: ms - 123},
		{name: "RFC 3339 with nanoseconds", field: "at", value: map[string]any{"at": "2023-11-14T22:13:20.123456789Z"}, want: ms},
		{name: "other fields ignored", field: "ts", value: map[string]any{"id": "x", "ts": 5.0, "at": "nope"}, want: 5},
		{name: "raw JSON bytes", field: "ts", value: []byte(`{"id":1,"ts":1700000000123}`), want: ms},
		{name: "raw JSON bytes with a time", field: "ts", value: []byte(`{"ts":"2023-11-14T22:13:20.123Z"}`), want: ms},
		{name: "raw JSON string", field: "ts", value: `{"ts":1700000000123}`, want: ms},
		{name: "missing field", field: "ts", value: map[string]any{"time": 5.0}, wantErr: `timestamp field "ts" is missing`},
		{name: "missing in raw JSON", field: "ts", value: []byte(`{}`), wantErr: `timestamp field "ts" is missing`},
		{name: "wrong type bool", field: "ts", value: map[string]any{"ts": true}, wantErr: `timestamp field "ts" holds bool`},
		{name: "wrong type object", field: "ts", value: map[string]any{"ts": map[string]any{}}, wantErr: `holds map[string]interface {}`},
		{name: "null field", field: "ts", value: map[string]any{"ts": nil}, wantErr: `timestamp field "ts" holds <nil>`},
		{name: "string not a time", field: "ts", value: map[string]any{"ts": "yesterday"}, wantErr: `timestamp field "ts": parsing time "yesterday"`},
		{name: "string of digits", field: "ts", value: map[string]any{"ts": "1700000000123"}, wantErr: `timestamp field "ts"`},
		{name: "invalid raw JSON", field: "ts", value: []byte(`{"ts":`), wantErr: "decoding JSON value for its timestamp"},
		{name: "raw JSON array", field: "ts", value: []byte(`[1,2]`), wantErr: "decoding JSON value for its timestamp"},
		{name: "null value", field: "ts", value: nil, wantErr: "value is null"},
		{name: "not an object", field: "ts", value: []any{1.0}, wantErr: "value is []interface {}, not a JSON object"},
		{name: "number value", field: "ts", value: 5.0, wantErr: "value is float64, not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const recordTS = 42
			got, err := streams.JSONTimestamp(tt.field)(nil, tt.value, recordTS)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("extractor returned %d, want an error mentioning %q", got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("extractor: %v", err)
			}
			if got != tt.want {
				t.Errorf("extractor returned %d, want %d", got, tt.want)
			}
		})
	}
}

// TestJSONTimestampWithJSONSerde runs the extractor on what the JSON serde
// decodes, the combination sources use.
func TestJSONTimestampWithJSONSerde(t *testing.T) {
	v, err := streams.JSON.Deserialize("t", []byte(`{"ts": 1700000000123, "at": "2023-11-14T22:13:20.123Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"ts", "at"} {
		got, err := streams.JSONTimestamp(field)(nil, v, 0)
		if err != nil || got != 1_700_000_000_123 {
			t.Errorf("JSONTimestamp(%q) = %d, %v; want 1700000000123", field, got, err)
		}
	}
}
