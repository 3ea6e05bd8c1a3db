package streams

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// Serde turns keys or values into bytes and back. Deserialize must not keep
// b beyond the call unless it owns it: the runtime never reuses record
// buffers, so the built-in serdes may and do return b itself.
type Serde interface {
	// Name identifies the serde in errors and descriptions.
	Name() string
	Serialize(topic string, v any) ([]byte, error)
	Deserialize(topic string, b []byte) (any, error)
}

// The built-in serdes. A nil record key or value is nil in both directions.
var (
	// Bytes passes []byte through unchanged; it also accepts a string when
	// serializing.
	Bytes Serde = bytesSerde{}
	// String maps to and from string.
	String Serde = stringSerde{}
	// Int64 maps to and from int64 as 8 big-endian bytes, the format of
	// Kafka's LongSerializer.
	Int64 Serde = int64Serde{}
	// JSON decodes into the generic encoding/json forms (map[string]any,
	// []any, float64, string, bool) and encodes any value encoding/json can.
	JSON Serde = jsonSerde{}
)

// SerdeError says a value could not be converted by a serde.
type SerdeError struct {
	Serde string
	Topic string
	Err   error
}

func (e *SerdeError) Error() string {
	return fmt.Sprintf("%s serde on topic %q: %v", e.Serde, e.Topic, e.Err)
}

func (e *SerdeError) Unwrap() error { return e.Err }

type bytesSerde struct{}

func (bytesSerde) Name() string { return "bytes" }

func (bytesSerde) Serialize(topic string, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	}
	return nil, &SerdeError{Serde: "bytes", Topic: topic, Err: fmt.Errorf("cannot serialize %T, want []byte or string", v)}
}

func (bytesSerde) Deserialize(_ string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return b, nil
}

type stringSerde struct{}

func (stringSerde) Name() string { return "string" }

func (stringSerde) Serialize(topic string, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	case fmt.Stringer:
		return []byte(v.String()), nil
	}
	return nil, &SerdeError{Serde: "string", Topic: topic, Err: fmt.Errorf("cannot serialize %T, want string", v)}
}

func (stringSerde) Deserialize(_ string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return string(b), nil
}

type int64Serde struct{}

func (int64Serde) Name() string { return "int64" }

func (int64Serde) Serialize(topic string, v any) ([]byte, error) {
	var n int64
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int64:
		n = v
	case int:
		n = int64(v)
	case int32:
		n = int64(v)
	default:
		return nil, &SerdeError{Serde: "int64", Topic: topic, Err: fmt.Errorf("cannot serialize %T, want int64", v)}
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n)), nil
}

func (int64Serde) Deserialize(topic string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) != 8 {
		return nil, &SerdeError{Serde: "int64", Topic: topic, Err: fmt.Errorf("want 8 bytes, got %d", len(b))}
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

type jsonSerde struct{}

func (jsonSerde) Name() string { return "json" }

func (jsonSerde) Serialize(topic string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	// Bytes are taken as JSON already encoded (a stream read with the
	// bytes serde), not as a binary blob to base64.
	var raw []byte
	switch v := v.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	}
	if raw != nil {
		if !json.Valid(raw) {
			return nil, &SerdeError{Serde: "json", Topic: topic, Err: errors.New("bytes are not valid JSON")}
		}
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &SerdeError{Serde: "json", Topic: topic, Err: err}
	}
	return b, nil
}

func (jsonSerde) Deserialize(topic string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, &SerdeError{Serde: "json", Topic: topic, Err: err}
	}
	return v, nil
}
