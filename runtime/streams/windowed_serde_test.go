package streams

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// This file tests the serdes of windowed keys and of timestamped store
// values. It is an internal test because stampedSerde is unexported.

const wsTopic = "windowed-topic"

// be64 is n as 8 big-endian bytes, the layout Kafka's LongSerializer and
// its window key schemas use.
func be64(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// cat concatenates byte slices; cat() is an empty, non-nil slice.
func cat(parts ...[]byte) []byte {
	out := []byte{}
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// wantSerdeError checks that err is a *SerdeError of serde on wsTopic
// whose message contains msg.
func wantSerdeError(t *testing.T, err error, serde, msg string) {
	t.Helper()
	var se *SerdeError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a *SerdeError", err, err)
	}
	if se.Serde != serde || se.Topic != wsTopic {
		t.Errorf("SerdeError{Serde: %q, Topic: %q}, want {%q, %q} (error: %v)", se.Serde, se.Topic, serde, wsTopic, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not contain %q", err, msg)
	}
}

// isNilResult reports whether a serde returned nothing: nil, or a nil
// []byte.
func isNilResult(v any) bool {
	b, ok := v.([]byte)
	return v == nil || ok && b == nil
}

func TestWindowedSerdeNames(t *testing.T) {
	for _, tt := range []struct {
		serde Serde
		want  string
	}{
		{TimeWindowedSerde(String, 10), "time-windowed<string>"},
		{TimeWindowedSerde(Int64, 10), "time-windowed<int64>"},
		{SessionWindowedSerde(JSON), "session-windowed<json>"},
		{SessionWindowedSerde(Bytes), "session-windowed<bytes>"},
		{WindowedJSON(String), "windowed-json<string>"},
		{WindowedJSON(Int64), "windowed-json<int64>"},
		{stampedSerde{inner: Int64}, "timestamped<int64>"},
	} {
		if got := tt.serde.Name(); got != tt.want {
			t.Errorf("Name() = %q, want %q", got, tt.want)
		}
	}
}

// TestKafkaWindowedSerdeLayouts checks the exact bytes of Kafka Streams'
// window key layouts (WindowKeySchema.toBinary: key, start; and
// SessionKeySchema.toBinary: key, end, start, all big-endian) and that
// they decode back.
func TestKafkaWindowedSerdeLayouts(t *testing.T) {
	const ts = 1700000000000 // 00 00 01 8b cf e5 68 00
	for _, tt := range []struct {
		name  string
		serde Serde
		in    Windowed
		wire  []byte
		// out is what Deserialize returns; the zero Windowed means in.
		out Windowed
	}{
		{
			name:  "time string",
			serde: TimeWindowedSerde(String, 10),
			in:    Windowed{Key: "a", Start: 0, End: 10},
			wire:  []byte{'a', 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			name:  "time string epoch millis",
			serde: TimeWindowedSerde(String, 10_000),
			in:    Windowed{Key: "user-1", Start: ts, End: ts + 10_000},
			wire:  cat([]byte("user-1"), []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0}),
		},
		{
			name:  "time string empty key",
			serde: TimeWindowedSerde(String, 10),
			in:    Windowed{Key: "", Start: 20, End: 30},
			wire:  be64(20),
		},
		{
			name:  "time string multi-byte UTF-8",
			serde: TimeWindowedSerde(String, 5),
			in:    Windowed{Key: "héllo", Start: 5, End: 10},
			wire:  cat([]byte("héllo"), be64(5)),
		},
		{
			name:  "time end is start plus size, whatever was serialized",
			serde: TimeWindowedSerde(String, 10),
			in:    Windowed{Key: "a", Start: 100, End: 999},
			wire:  cat([]byte("a"), be64(100)),
			out:   Windowed{Key: "a", Start: 100, End: 110},
		},
		{
			name:  "time negative start",
			serde: TimeWindowedSerde(String, 10),
			in:    Windowed{Key: "a", Start: -10, End: 0},
			wire:  cat([]byte("a"), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf6}),
		},
		{
			name:  "time int64",
			serde: TimeWindowedSerde(Int64, 10),
			in:    Windowed{Key: int64(7), Start: 0x0102030405060708, End: 0x0102030405060708 + 10},
			wire:  []byte{0, 0, 0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8},
		},
		{
			name:  "time int64 from int",
			serde: TimeWindowedSerde(Int64, 10),
			in:    Windowed{Key: -1, Start: 10, End: 20},
			wire:  cat(be64(-1), be64(10)),
			out:   Windowed{Key: int64(-1), Start: 10, End: 20},
		},
		{
			name:  "time json",
			serde: TimeWindowedSerde(JSON, 10),
			in:    Windowed{Key: map[string]any{"id": 1.0}, Start: 10, End: 20},
			wire:  cat([]byte(`{"id":1}`), be64(10)),
		},
		{
			name:  "time bytes",
			serde: TimeWindowedSerde(Bytes, 10),
			in:    Windowed{Key: []byte{0, 0xff}, Start: 0, End: 10},
			wire:  []byte{0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			name:  "sliding: size is the time difference",
			serde: TimeWindowedSerde(String, 10_000),
			in:    Windowed{Key: "k", Start: ts, End: ts + 10_000},
			wire:  cat([]byte("k"), be64(ts)),
		},
		{
			name:  "session string",
			serde: SessionWindowedSerde(String),
			in:    Windowed{Key: "a", Start: 5, End: 20},
			wire:  []byte{'a', 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 5},
		},
		{
			name:  "session string epoch millis",
			serde: SessionWindowedSerde(String),
			in:    Windowed{Key: "user-1", Start: ts, End: ts + 4000},
			wire:  cat([]byte("user-1"), []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x77, 0xa0}, []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0}),
		},
		{
			name:  "session single-record session: start equals end",
			serde: SessionWindowedSerde(String),
			in:    Windowed{Key: "a", Start: 7, End: 7},
			wire:  cat([]byte("a"), be64(7), be64(7)),
		},
		{
			name:  "session empty key",
			serde: SessionWindowedSerde(String),
			in:    Windowed{Key: "", Start: 1, End: 2},
			wire:  cat(be64(2), be64(1)),
		},
		{
			name:  "session int64",
			serde: SessionWindowedSerde(Int64),
			in:    Windowed{Key: int64(math.MinInt64), Start: 1, End: 2},
			wire:  cat([]byte{0x80, 0, 0, 0, 0, 0, 0, 0}, be64(2), be64(1)),
		},
		{
			name:  "session json",
			serde: SessionWindowedSerde(JSON),
			in:    Windowed{Key: []any{"a", 1.0}, Start: 0, End: 3},
			wire:  cat([]byte(`["a",1]`), be64(3), be64(0)),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wire, err := tt.serde.Serialize(wsTopic, tt.in)
			if err != nil {
				t.Fatalf("Serialize: %v", err)
			}
			if !bytes.Equal(wire, tt.wire) {
				t.Errorf("Serialize = % x, want % x", wire, tt.wire)
			}
			got, err := tt.serde.Deserialize(wsTopic, tt.wire)
			if err != nil {
				t.Fatalf("Deserialize: %v", err)
			}
			want := tt.out
			if reflect.DeepEqual(want, Windowed{}) {
				want = tt.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Deserialize = %#v, want %#v", got, want)
			}
		})
	}
}

func TestKafkaWindowedSerdeNil(t *testing.T) {
	for _, s := range []Serde{TimeWindowedSerde(String, 10), SessionWindowedSerde(Int64)} {
		if b, err := s.Serialize(wsTopic, nil); b != nil || err != nil {
			t.Errorf("%s: Serialize(nil) = %v, %v; want nil, nil", s.Name(), b, err)
		}
		if v, err := s.Deserialize(wsTopic, nil); v != nil || err != nil {
			t.Errorf("%s: Deserialize(nil) = %v, %v; want nil, nil", s.Name(), v, err)
		}
	}
}

func TestKafkaWindowedSerdeErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		serde Serde
		// Exactly one of in (to serialize) and wire (to deserialize).
		in   any
		wire []byte
		// serdeName is the SerdeError's serde: the windowed serde's own
		// errors, or the inner serde's, passed through.
		serdeName, msg string
	}{
		{name: "time: string is not Windowed", serde: TimeWindowedSerde(String, 10), in: "a",
			serdeName: "time-windowed<string>", msg: "cannot serialize string, want streams.Windowed"},
		{name: "time: pointer is not Windowed", serde: TimeWindowedSerde(String, 10), in: &Windowed{Key: "a"},
			serdeName: "time-windowed<string>", msg: "cannot serialize *streams.Windowed"},
		{name: "session: int64 is not Windowed", serde: SessionWindowedSerde(String), in: int64(1),
			serdeName: "session-windowed<string>", msg: "cannot serialize int64, want streams.Windowed"},
		{name: "time: key of the wrong type", serde: TimeWindowedSerde(Int64, 10), in: Windowed{Key: "x"},
			serdeName: "int64", msg: "cannot serialize string, want int64"},
		{name: "session: key of the wrong type", serde: SessionWindowedSerde(String), in: Windowed{Key: 1.5},
			serdeName: "string", msg: "cannot serialize float64"},
		{name: "time: empty", serde: TimeWindowedSerde(String, 10), wire: []byte{},
			serdeName: "time-windowed<string>", msg: "0 bytes is too short for a windowed key (at least 8)"},
		{name: "time: 7 bytes", serde: TimeWindowedSerde(String, 10), wire: make([]byte, 7),
			serdeName: "time-windowed<string>", msg: "7 bytes is too short for a windowed key (at least 8)"},
		{name: "session: 8 bytes", serde: SessionWindowedSerde(String), wire: make([]byte, 8),
			serdeName: "session-windowed<string>", msg: "8 bytes is too short for a windowed key (at least 16)"},
		{name: "session: 15 bytes", serde: SessionWindowedSerde(String), wire: make([]byte, 15),
			serdeName: "session-windowed<string>", msg: "15 bytes is too short for a windowed key (at least 16)"},
		{name: "time: key bytes the inner serde rejects", serde: TimeWindowedSerde(Int64, 10), wire: cat([]byte{1, 2, 3}, be64(0)),
			serdeName: "int64", msg: "want 8 bytes, got 3"},
		{name: "session: key bytes the inner serde rejects", serde: SessionWindowedSerde(JSON), wire: cat([]byte("{"), be64(1), be64(0)),
			serdeName: "json", msg: "unexpected end of JSON input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				got any
				err error
			)
			if tt.wire != nil {
				got, err = tt.serde.Deserialize(wsTopic, tt.wire)
			} else {
				got, err = tt.serde.Serialize(wsTopic, tt.in)
			}
			if err == nil {
				t.Fatalf("no error; got %#v", got)
			}
			if !isNilResult(got) {
				t.Errorf("returned %#v with the error, want nil", got)
			}
			wantSerdeError(t, err, tt.serdeName, tt.msg)
		})
	}
}

func TestWindowedJSONSerdeRoundTrip(t *testing.T) {
	const ts = 1700000000000
	for _, tt := range []struct {
		name  string
		inner Serde
		in    Windowed
		wire  string
		// out is what Deserialize returns; the zero Windowed means in.
		out Windowed
	}{
		{name: "string", inner: String, in: Windowed{Key: "a", Start: 0, End: 10},
			wire: `{"key":"a","start":0,"end":10}`},
		{name: "string empty", inner: String, in: Windowed{Key: "", Start: 0, End: 10},
			wire: `{"key":"","start":0,"end":10}`},
		{name: "string escaped as encoding/json does", inner: String, in: Windowed{Key: `say "hi" <b> & é`, Start: 0, End: 10},
			wire: `{"key":"say \"hi\" \u003cb\u003e \u0026 é","start":0,"end":10}`},
		{name: "string from Stringer", inner: String, in: Windowed{Key: Windowed{Key: "x", Start: 1, End: 2}, Start: 0, End: 10},
			wire: `{"key":"x@[1,2]","start":0,"end":10}`, out: Windowed{Key: "x@[1,2]", Start: 0, End: 10}},
		{name: "string epoch millis", inner: String, in: Windowed{Key: "u", Start: ts, End: ts + 10_000},
			wire: `{"key":"u","start":1700000000000,"end":1700000010000}`},
		{name: "negative window", inner: String, in: Windowed{Key: "u", Start: -10, End: 0},
			wire: `{"key":"u","start":-10,"end":0}`},
		{name: "int64", inner: Int64, in: Windowed{Key: int64(7), Start: 0, End: 10},
			wire: `{"key":7,"start":0,"end":10}`},
		{name: "int64 negative", inner: Int64, in: Windowed{Key: int64(-3), Start: 0, End: 10},
			wire: `{"key":-3,"start":0,"end":10}`},
		{name: "int64 max keeps every digit", inner: Int64, in: Windowed{Key: int64(math.MaxInt64), Start: 0, End: 10},
			wire: `{"key":9223372036854775807,"start":0,"end":10}`},
		{name: "int64 min", inner: Int64, in: Windowed{Key: int64(math.MinInt64), Start: 0, End: 10},
			wire: `{"key":-9223372036854775808,"start":0,"end":10}`},
		{name: "int64 from int", inner: Int64, in: Windowed{Key: 300, Start: 0, End: 10},
			wire: `{"key":300,"start":0,"end":10}`, out: Windowed{Key: int64(300), Start: 0, End: 10}},
		{name: "json object", inner: JSON, in: Windowed{Key: map[string]any{"id": 1.0}, Start: 0, End: 10},
			wire: `{"key":{"id":1},"start":0,"end":10}`},
		{name: "json string", inner: JSON, in: Windowed{Key: "x", Start: 0, End: 10},
			wire: `{"key":"x","start":0,"end":10}`},
		{name: "json number", inner: JSON, in: Windowed{Key: 1.5, Start: 0, End: 10},
			wire: `{"key":1.5,"start":0,"end":10}`},
		{name: "json array", inner: JSON, in: Windowed{Key: []any{"a", 1.0, true}, Start: 0, End: 10},
			wire: `{"key":["a",1,true],"start":0,"end":10}`},
		{name: "json raw bytes pass through", inner: JSON, in: Windowed{Key: []byte(`{"id":1}`), Start: 0, End: 10},
			wire: `{"key":{"id":1},"start":0,"end":10}`, out: Windowed{Key: map[string]any{"id": 1.0}, Start: 0, End: 10}},
		{name: "bytes as a string", inner: Bytes, in: Windowed{Key: []byte("abc"), Start: 0, End: 10},
			wire: `{"key":"abc","start":0,"end":10}`},
		{name: "nil key string", inner: String, in: Windowed{Key: nil, Start: 0, End: 10},
			wire: `{"key":null,"start":0,"end":10}`},
		{name: "nil key int64", inner: Int64, in: Windowed{Key: nil, Start: 0, End: 10},
			wire: `{"key":null,"start":0,"end":10}`},
		{name: "nil key json", inner: JSON, in: Windowed{Key: nil, Start: 0, End: 10},
			wire: `{"key":null,"start":0,"end":10}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := WindowedJSON(tt.inner)
			wire, err := s.Serialize(wsTopic, tt.in)
			if err != nil {
				t.Fatalf("Serialize: %v", err)
			}
			if string(wire) != tt.wire {
				t.Errorf("Serialize = %s, want %s", wire, tt.wire)
			}
			got, err := s.Deserialize(wsTopic, []byte(tt.wire))
			if err != nil {
				t.Fatalf("Deserialize: %v", err)
			}
			want := tt.out
			if reflect.DeepEqual(want, Windowed{}) {
				want = tt.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Deserialize = %#v, want %#v", got, want)
			}
		})
	}
}

// TestWindowedJSONMatchesDocumentedForm checks that WindowedJSON over the
// JSON serde writes what the doc of Windowed promises: its encoding/json
// form.
func TestWindowedJSONSerdeMatchesDocumentedForm(t *testing.T) {
	for _, w := range []Windowed{
		{Key: "a", Start: 0, End: 10},
		{Key: map[string]any{"id": 1.0, "region": "eu"}, Start: -5, End: 1700000000000},
		{Key: nil, Start: 1, End: 1},
	} {
		got, err := WindowedJSON(JSON).Serialize(wsTopic, w)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("WindowedJSON(JSON) = %s, json.Marshal = %s", got, want)
		}
	}
}

// TestWindowedJSONDecodes covers input that WindowedJSON does not write
// but reads.
func TestWindowedJSONSerdeDecodes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		inner Serde
		wire  string
		want  Windowed
	}{
		{name: "fields in any order, with spaces", inner: String, wire: " { \"end\" : 10 , \"start\" : 0 , \"key\" : \"a\" } ",
			want: Windowed{Key: "a", Start: 0, End: 10}},
		{name: "escapes", inner: String, wire: `{"key":"\u00e9\n\"","start":0,"end":10}`,
			want: Windowed{Key: "é\n\"", Start: 0, End: 10}},
		{name: "no key is a nil key", inner: String, wire: `{"start":0,"end":10}`,
			want: Windowed{Key: nil, Start: 0, End: 10}},
		{name: "json key with spaces", inner: JSON, wire: `{"key": { "id" : 1 },"start":0,"end":10}`,
			want: Windowed{Key: map[string]any{"id": 1.0}, Start: 0, End: 10}},
		{name: "bytes key", inner: Bytes, wire: `{"key":"\u00ff","start":0,"end":10}`,
			want: Windowed{Key: []byte("ÿ"), Start: 0, End: 10}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WindowedJSON(tt.inner).Deserialize(wsTopic, []byte(tt.wire))
			if err != nil {
				t.Fatalf("Deserialize: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Deserialize = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestWindowedJSONSerdeNil(t *testing.T) {
	for _, inner := range []Serde{String, Int64, JSON, Bytes} {
		s := WindowedJSON(inner)
		if b, err := s.Serialize(wsTopic, nil); b != nil || err != nil {
			t.Errorf("%s: Serialize(nil) = %v, %v; want nil, nil", s.Name(), b, err)
		}
		if v, err := s.Deserialize(wsTopic, nil); v != nil || err != nil {
			t.Errorf("%s: Deserialize(nil) = %v, %v; want nil, nil", s.Name(), v, err)
		}
	}
}

func TestWindowedJSONSerdeErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		inner Serde
		// Exactly one of in (to serialize) and wire (to deserialize).
		in             any
		wire           string
		serdeName, msg string
	}{
		// Serialize.
		{name: "not Windowed", inner: String, in: "a",
			serdeName: "windowed-json<string>", msg: "cannot serialize string, want streams.Windowed"},
		{name: "pointer to Windowed", inner: String, in: &Windowed{Key: "a"},
			serdeName: "windowed-json<string>", msg: "cannot serialize *streams.Windowed"},
		{name: "non-UTF-8 bytes key", inner: Bytes, in: Windowed{Key: []byte{0xff, 0xfe}},
			serdeName: "windowed-json<bytes>", msg: "not UTF-8"},
		{name: "non-UTF-8 string key", inner: String, in: Windowed{Key: "a\xffb"},
			serdeName: "windowed-json<string>", msg: "not UTF-8"},
		{name: "string key of the wrong type", inner: String, in: Windowed{Key: 42},
			serdeName: "string", msg: "cannot serialize int, want string"},
		{name: "int64 key of the wrong type", inner: Int64, in: Windowed{Key: "7"},
			serdeName: "int64", msg: "cannot serialize string, want int64"},
		{name: "json key encoding/json cannot encode", inner: JSON, in: Windowed{Key: make(chan int)},
			serdeName: "json", msg: "unsupported type"},
		{name: "json key bytes that are not JSON", inner: JSON, in: Windowed{Key: []byte("{")},
			serdeName: "json", msg: "not valid JSON"},

		// Deserialize.
		{name: "empty", inner: String, wire: "",
			serdeName: "windowed-json<string>", msg: "EOF"},
		{name: "not JSON", inner: String, wire: "{",
			serdeName: "windowed-json<string>", msg: "EOF"},
		{name: "an array", inner: String, wire: `[1,2]`,
			serdeName: "windowed-json<string>", msg: "cannot unmarshal array"},
		{name: "JSON null", inner: String, wire: `null`,
			serdeName: "windowed-json<string>", msg: `needs "start" and "end"`},
		{name: "missing start", inner: String, wire: `{"key":"a","end":10}`,
			serdeName: "windowed-json<string>", msg: `needs "start" and "end"`},
		{name: "missing end", inner: String, wire: `{"key":"a","start":0}`,
			serdeName: "windowed-json<string>", msg: `needs "start" and "end"`},
		{name: "null end", inner: String, wire: `{"key":"a","start":0,"end":null}`,
			serdeName: "windowed-json<string>", msg: `needs "start" and "end"`},
		{name: "unknown field", inner: String, wire: `{"key":"a","start":0,"end":10,"size":10}`,
			serdeName: "windowed-json<string>", msg: `unknown field "size"`},
		{name: "start a string", inner: String, wire: `{"key":"a","start":"0","end":10}`,
			serdeName: "windowed-json<string>", msg: "cannot unmarshal string"},
		{name: "start not an integer", inner: String, wire: `{"key":"a","start":1.5,"end":10}`,
			serdeName: "windowed-json<string>", msg: "cannot unmarshal number 1.5"},
		{name: "string inner, number key", inner: String, wire: `{"key":7,"start":0,"end":10}`,
			serdeName: "windowed-json<string>", msg: "key: want a JSON string"},
		{name: "string inner, object key", inner: String, wire: `{"key":{"id":1},"start":0,"end":10}`,
			serdeName: "windowed-json<string>", msg: "key: want a JSON string"},
		{name: "bytes inner, number key", inner: Bytes, wire: `{"key":7,"start":0,"end":10}`,
			serdeName: "windowed-json<bytes>", msg: "key: want a JSON string"},
		{name: "int64 inner, string key", inner: Int64, wire: `{"key":"7","start":0,"end":10}`,
			serdeName: "windowed-json<int64>", msg: "key: "},
		{name: "int64 inner, fractional key", inner: Int64, wire: `{"key":7.5,"start":0,"end":10}`,
			serdeName: "windowed-json<int64>", msg: "key: "},
		{name: "int64 inner, key out of range", inner: Int64, wire: `{"key":9223372036854775808,"start":0,"end":10}`,
			serdeName: "windowed-json<int64>", msg: "out of range"},
		{name: "trailing value", inner: String, wire: `{"key":"a","start":0,"end":10}{"key":"b"}`,
			serdeName: "windowed-json<string>", msg: "data after the windowed key's object"},
		{name: "trailing garbage", inner: String, wire: `{"key":"a","start":0,"end":10}garbage`,
			serdeName: "windowed-json<string>", msg: "data after the windowed key's object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := WindowedJSON(tt.inner)
			var (
				got any
				err error
			)
			if tt.in != nil {
				got, err = s.Serialize(wsTopic, tt.in)
			} else {
				got, err = s.Deserialize(wsTopic, []byte(tt.wire))
			}
			if err == nil {
				t.Fatalf("no error; got %#v", got)
			}
			if !isNilResult(got) {
				t.Errorf("returned %#v with the error, want nil", got)
			}
			wantSerdeError(t, err, tt.serdeName, tt.msg)
		})
	}
}

func TestStampedSerde(t *testing.T) {
	const ts = 1700000000000
	for _, tt := range []struct {
		name  string
		inner Serde
		in    stamped
		wire  []byte
	}{
		{name: "string", inner: String, in: stamped{value: "v", ts: ts},
			wire: []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 'v'}},
		{name: "string empty", inner: String, in: stamped{value: "", ts: 0}, wire: be64(0)},
		{name: "int64", inner: Int64, in: stamped{value: int64(3), ts: 5}, wire: cat(be64(5), be64(3))},
		{name: "negative timestamp", inner: Int64, in: stamped{value: int64(1), ts: -1},
			wire: cat([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, be64(1))},
		{name: "json", inner: JSON, in: stamped{value: map[string]any{"n": 1.0}, ts: 10}, wire: cat(be64(10), []byte(`{"n":1}`))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := stampedSerde{inner: tt.inner}
			wire, err := s.Serialize(wsTopic, tt.in)
			if err != nil {
				t.Fatalf("Serialize: %v", err)
			}
			if !bytes.Equal(wire, tt.wire) {
				t.Errorf("Serialize = % x, want % x", wire, tt.wire)
			}
			got, err := s.Deserialize(wsTopic, tt.wire)
			if err != nil {
				t.Fatalf("Deserialize: %v", err)
			}
			if !reflect.DeepEqual(got, tt.in) {
				t.Errorf("Deserialize = %#v, want %#v", got, tt.in)
			}
			if v := unstamp(got); !reflect.DeepEqual(v, tt.in.value) {
				t.Errorf("unstamp = %#v, want %#v", v, tt.in.value)
			}
		})
	}
}

func TestStampedSerdeNilAndErrors(t *testing.T) {
	s := stampedSerde{inner: Int64}
	if b, err := s.Serialize(wsTopic, nil); b != nil || err != nil {
		t.Errorf("Serialize(nil) = %v, %v; want nil, nil", b, err)
	}
	if v, err := s.Deserialize(wsTopic, nil); v != nil || err != nil {
		t.Errorf("Deserialize(nil) = %v, %v; want nil, nil", v, err)
	}
	if v := unstamp(nil); v != nil {
		t.Errorf("unstamp(nil) = %v, want nil", v)
	}
	_, err := s.Deserialize(wsTopic, make([]byte, 7))
	wantSerdeError(t, err, "timestamped<int64>", "7 bytes is too short for a timestamped value")
	_, err = s.Deserialize(wsTopic, cat(be64(1), []byte{1, 2, 3}))
	wantSerdeError(t, err, "int64", "want 8 bytes, got 3")
	_, err = s.Serialize(wsTopic, stamped{value: "x", ts: 1})
	wantSerdeError(t, err, "int64", "cannot serialize string")
}
