package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// TimestampExtractor returns the event time of a record, in milliseconds
// since the Unix epoch, from its decoded key and value and the timestamp the
// record carries. A negative result or an error makes the record
// undecodable: it goes to the deserialization error handler.
type TimestampExtractor func(key, value any, recordTimestamp int64) (int64, error)

// JSONTimestamp returns an extractor that reads the named top-level field of
// a JSON object value. The field may hold milliseconds since the epoch (a
// number) or an RFC 3339 time (a string). It works on values decoded by the
// JSON serde and on raw JSON bytes.
func JSONTimestamp(field string) TimestampExtractor {
	return func(_ any, value any, _ int64) (int64, error) {
		obj, err := jsonObject(value)
		if err != nil {
			return 0, err
		}
		v, ok := obj[field]
		if !ok {
			return 0, fmt.Errorf("timestamp field %q is missing", field)
		}
		switch v := v.(type) {
		case float64:
			// Beyond ±2^63 the conversion is undefined; fractions of a
			// millisecond are cut off.
			if math.IsNaN(v) || v < -(1<<63) || v >= 1<<63 {
				return 0, fmt.Errorf("timestamp field %q: %v is out of range for milliseconds since the epoch", field, v)
			}
			return int64(v), nil
		case json.Number:
			return v.Int64()
		case string:
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return 0, fmt.Errorf("timestamp field %q: %w", field, err)
			}
			return t.UnixMilli(), nil
		}
		return 0, fmt.Errorf("timestamp field %q holds %T, want milliseconds or an RFC 3339 string", field, v)
	}
}

func jsonObject(value any) (map[string]any, error) {
	switch v := value.(type) {
	case map[string]any:
		return v, nil
	case []byte:
		var obj map[string]any
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, fmt.Errorf("decoding JSON value for its timestamp: %w", err)
		}
		return obj, nil
	case string:
		return jsonObject([]byte(v))
	case nil:
		return nil, errors.New("value is null, it has no timestamp field")
	}
	return nil, fmt.Errorf("value is %T, not a JSON object", value)
}
