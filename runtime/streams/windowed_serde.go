package streams

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// TimeWindowedSerde returns the serde of Windowed keys of time and sliding
// windows in Kafka Streams' TimeWindowedSerde layout: the key as inner
// serializes it, then the window start as 8 big-endian bytes. The end is
// not stored; Deserialize computes it as start + size, so give the
// window's size (a sliding window's time difference).
func TimeWindowedSerde(inner Serde, size int64) Serde {
	return windowedSerde{inner: inner, size: size}
}

// SessionWindowedSerde returns the serde of session keys in Kafka Streams'
// SessionWindowedSerde layout: the key, then the session end and start as
// 8 big-endian bytes each.
func SessionWindowedSerde(inner Serde) Serde {
	return windowedSerde{inner: inner, session: true}
}

type windowedSerde struct {
	inner   Serde
	size    int64
	session bool
}

func (s windowedSerde) Name() string {
	if s.session {
		return "session-windowed<" + s.inner.Name() + ">"
	}
	return "time-windowed<" + s.inner.Name() + ">"
}

func (s windowedSerde) Serialize(topic string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	w, ok := v.(Windowed)
	if !ok {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("cannot serialize %T, want streams.Windowed", v)}
	}
	kb, err := s.inner.Serialize(topic, w.Key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(kb)+16)
	out = append(out, kb...)
	if s.session {
		out = binary.BigEndian.AppendUint64(out, uint64(w.End))
	}
	return binary.BigEndian.AppendUint64(out, uint64(w.Start)), nil
}

func (s windowedSerde) Deserialize(topic string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	n := 8
	if s.session {
		n = 16
	}
	if len(b) < n {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("%d bytes is too short for a windowed key (at least %d)", len(b), n)}
	}
	k, err := s.inner.Deserialize(topic, b[:len(b)-n])
	if err != nil {
		return nil, err
	}
	w := Windowed{Key: k, Start: int64(binary.BigEndian.Uint64(b[len(b)-8:]))}
	if s.session {
		w.End = int64(binary.BigEndian.Uint64(b[len(b)-16:]))
	} else {
		w.End = w.Start + s.size
	}
	return w, nil
}

// WindowedJSON returns the serde of Windowed keys as JSON objects,
// {"key":...,"start":...,"end":...}, for topics people and programs other
// than Kafka Streams read. The key is written as inner writes it: a JSON
// serde's output as it is, an Int64 as a number, anything else as a
// string, which must then be valid UTF-8.
func WindowedJSON(inner Serde) Serde { return windowedJSONSerde{inner: inner} }

type windowedJSONSerde struct{ inner Serde }

func (s windowedJSONSerde) Name() string { return "windowed-json<" + s.inner.Name() + ">" }

func (s windowedJSONSerde) Serialize(topic string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	w, ok := v.(Windowed)
	if !ok {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("cannot serialize %T, want streams.Windowed", v)}
	}
	kb, err := s.inner.Serialize(topic, w.Key)
	if err != nil {
		return nil, err
	}
	var key []byte
	switch {
	case kb == nil:
		key = []byte("null")
	case s.inner == JSON:
		key = kb
	case s.inner == Int64:
		key = strconv.AppendInt(nil, int64(binary.BigEndian.Uint64(kb)), 10)
	case utf8.Valid(kb):
		key, _ = json.Marshal(string(kb))
	default:
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New("the key's bytes are not UTF-8; use the JSON serde for it")}
	}
	out := make([]byte, 0, len(key)+48)
	out = append(out, `{"key":`...)
	out = append(out, key...)
	out = append(out, `,"start":`...)
	out = strconv.AppendInt(out, w.Start, 10)
	out = append(out, `,"end":`...)
	out = strconv.AppendInt(out, w.End, 10)
	return append(out, '}'), nil
}

func (s windowedJSONSerde) Deserialize(topic string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	var raw struct {
		Key   json.RawMessage `json:"key"`
		Start *int64          `json:"start"`
		End   *int64          `json:"end"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New("data after the windowed key's object")}
	}
	if raw.Start == nil || raw.End == nil {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: errors.New(`a windowed key needs "start" and "end"`)}
	}
	w := Windowed{Start: *raw.Start, End: *raw.End}
	var kb []byte
	switch {
	case raw.Key == nil || string(raw.Key) == "null":
	case s.inner == JSON:
		kb = raw.Key
	case s.inner == Int64:
		n, err := strconv.ParseInt(string(raw.Key), 10, 64)
		if err != nil {
			return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("key: %w", err)}
		}
		kb = binary.BigEndian.AppendUint64(nil, uint64(n))
	default:
		var str string
		if err := json.Unmarshal(raw.Key, &str); err != nil {
			return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("key: want a JSON string: %w", err)}
		}
		kb = []byte(str)
	}
	if kb != nil {
		k, err := s.inner.Deserialize(topic, kb)
		if err != nil {
			return nil, err
		}
		w.Key = k
	}
	return w, nil
}

// stamped is a windowed store's value: the aggregate and the largest
// timestamp of the records in it, which is the timestamp of the results
// sent downstream (Kafka Streams' ValueAndTimestamp).
type stamped struct {
	value any
	ts    int64
}

// stampedSerde stores a stamped value as Kafka Streams' timestamped stores
// do: the timestamp as 8 big-endian bytes, then the value.
type stampedSerde struct{ inner Serde }

func (s stampedSerde) Name() string { return "timestamped<" + s.inner.Name() + ">" }

func (s stampedSerde) Serialize(topic string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	sv := v.(stamped)
	if n, ok := sv.value.(int64); ok && s.inner == Int64 {
		out := make([]byte, 16) // one allocation for the common count
		binary.BigEndian.PutUint64(out, uint64(sv.ts))
		binary.BigEndian.PutUint64(out[8:], uint64(n))
		return out, nil
	}
	vb, err := s.inner.Serialize(topic, sv.value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 8, 8+len(vb))
	binary.BigEndian.PutUint64(out, uint64(sv.ts))
	return append(out, vb...), nil
}

func (s stampedSerde) Deserialize(topic string, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) < 8 {
		return nil, &SerdeError{Serde: s.Name(), Topic: topic, Err: fmt.Errorf("%d bytes is too short for a timestamped value", len(b))}
	}
	v, err := s.inner.Deserialize(topic, b[8:])
	if err != nil {
		return nil, err
	}
	return stamped{value: v, ts: int64(binary.BigEndian.Uint64(b))}, nil
}

// unstamp returns a stored value without its timestamp; nil stays nil.
func unstamp(v any) any {
	if v == nil {
		return nil
	}
	return v.(stamped).value
}
