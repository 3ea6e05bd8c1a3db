package datagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GeneratorHeader is the header every record a Generator writes carries
// (its value "datagen"): a topic's records without it come from another
// producer.
const GeneratorHeader = "braid-generator"

// Header is one record header, as text.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// SampledRecord is one record read back from a topic (see Sample).
type SampledRecord struct {
	Key       string   `json:"key"`
	Value     string   `json:"value"`
	Headers   []Header `json:"headers"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"` // unix ms
}

// FromGenerator reports whether a Generator wrote the record.
func (r SampledRecord) FromGenerator() bool {
	return slices.ContainsFunc(r.Headers, func(h Header) bool { return h.Key == GeneratorHeader })
}

// Proposal is a generator spec's data derived from a topic's records:
// the template fields, the keys and the rate that would write records
// shaped like them. Notes say what could not be derived.
type Proposal struct {
	Template  map[string]string `json:"template"`
	Keys      int               `json:"keys,omitempty"`
	KeyPrefix string            `json:"keyPrefix,omitempty"`
	Rate      float64           `json:"rate,omitempty"`
	Notes     []string          `json:"notes"`
}

// maxChoices bounds the options of a proposed choice(...).
const maxChoices = 10

// timestampSlack is how far from its record's timestamp an integer field
// may be and still be taken for the timestamp.
const timestampSlack = 24 * time.Hour

// Propose derives a template from records whose values are JSON objects:
// per top-level field, "timestamp" for integers near the record's
// timestamp (ms), "sequence(next)" for distinct integers packed in a
// range at most twice their count (it goes on after the largest),
// "random(min, max)" for other integers, "randfloat(min, max)" for other
// numbers, "bool", "key" for strings equal to the record's key, and
// "choice(...)" of the strings seen (the first maxChoices, sorted). Keys
// shaped "<prefix>-<n>" give KeyPrefix and Keys (the largest n + 1);
// other keys their distinct count. Rate is the records/s of the
// partitions' timestamps. Fields of other types (objects, arrays, null,
// mixed) are left out with a note, as are values that are not objects.
func Propose(records []SampledRecord) Proposal {
	p := Proposal{Template: map[string]string{}, Notes: []string{}}
	if len(records) == 0 {
		p.Notes = append(p.Notes, "the topic holds no record to propose a template from")
		return p
	}
	fields := map[string][]sampledValue{}
	notObjects := 0
	for _, r := range records {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.Value), &obj); err != nil || obj == nil {
			notObjects++
			continue
		}
		for name, raw := range obj {
			fields[name] = append(fields[name], sampledValue{raw: raw, rec: r})
		}
	}
	if notObjects > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d of the %d records are not JSON objects; the generator writes only JSON objects", notObjects, len(records)))
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		gen, note := proposeField(fields[name])
		if gen != "" {
			p.Template[name] = gen
		}
		if note != "" {
			p.Notes = append(p.Notes, fmt.Sprintf("field %q: %s", name, note))
		}
	}
	p.Keys, p.KeyPrefix = proposeKeys(records)
	p.Rate = proposeRate(records)
	return p
}

type sampledValue struct {
	raw json.RawMessage
	rec SampledRecord
}

// proposeField returns the generator of one field's values, or "" and
// why not.
func proposeField(vs []sampledValue) (gen, note string) {
	kinds := map[string]bool{}
	for _, v := range vs {
		kinds[jsonKind(v.raw)] = true
	}
	if len(kinds) > 1 {
		return "", "its values are of several types (" + strings.Join(slices.Sorted(maps.Keys(kinds)), ", ") + "); left out"
	}
	switch kind := slices.Collect(maps.Keys(kinds))[0]; kind {
	case "bool":
		return "bool", ""
	case "number":
		return proposeNumber(vs), ""
	case "string":
		return proposeString(vs)
	default:
		return "", "its values are " + kind + "s, which no field generator makes; left out"
	}
}

// jsonKind names a JSON value's type: string, number, bool, null, object
// or array.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "null"
	}
	switch b[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

func proposeNumber(vs []sampledValue) string {
	ints := make([]int64, 0, len(vs))
	floats := make([]float64, 0, len(vs))
	for _, v := range vs {
		s := string(bytes.TrimSpace(v.raw))
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			f = 0
		}
		floats = append(floats, f)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			ints = append(ints, i)
		}
	}
	if len(ints) < len(vs) {
		return fmt.Sprintf("randfloat(%s, %s)", formatFloat(slices.Min(floats)), formatFloat(slices.Max(floats)))
	}
	nearTimestamp := true
	for i, v := range vs {
		if d := time.Duration(ints[i]-v.rec.Timestamp) * time.Millisecond; d > timestampSlack || d < -timestampSlack {
			nearTimestamp = false
			break
		}
	}
	if nearTimestamp {
		return "timestamp"
	}
	lo, hi := slices.Min(ints), slices.Max(ints)
	distinct := len(slices.Compact(slices.Sorted(slices.Values(ints))))
	if len(ints) >= 3 && distinct == len(ints) && hi-lo+1 <= 2*int64(len(ints)) {
		return fmt.Sprintf("sequence(%d)", hi+1)
	}
	return fmt.Sprintf("random(%d, %d)", lo, hi)
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func proposeString(vs []sampledValue) (gen, note string) {
	isKey := true
	seen := map[string]bool{}
	for _, v := range vs {
		var s string
		if err := json.Unmarshal(v.raw, &s); err != nil {
			return "", "a string value does not decode; left out"
		}
		seen[s] = true
		if s != v.rec.Key {
			isKey = false
		}
	}
	if isKey {
		return "key", ""
	}
	values := slices.Sorted(maps.Keys(seen))
	if len(values) > maxChoices {
		note = fmt.Sprintf("%d distinct values; the choice lists the first %d", len(values), maxChoices)
		values = values[:maxChoices]
	}
	opts := make([]string, len(values))
	for i, s := range values {
		opts[i] = choiceOption(s)
	}
	return "choice(" + strings.Join(opts, ", ") + ")", note
}

// bareOption matches the strings choice(...) takes without quotes.
var bareOption = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.@:/-]*$`)

// choiceOption writes s as an option of choice: bare when it can be,
// else double-quoted.
func choiceOption(s string) string {
	if bareOption.MatchString(s) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// keyShape matches the keys a Generator writes: "<prefix>-<n>".
var keyShape = regexp.MustCompile(`^(.+)-(\d+)$`)

func proposeKeys(records []SampledRecord) (keys int, prefix string) {
	distinct := map[string]bool{}
	prefixes := map[string]bool{}
	maxN := -1
	for _, r := range records {
		distinct[r.Key] = true
		m := keyShape.FindStringSubmatch(r.Key)
		if m == nil {
			prefixes[""] = true
			continue
		}
		prefixes[m[1]] = true
		if n, err := strconv.Atoi(m[2]); err == nil {
			maxN = max(maxN, n)
		}
	}
	if len(prefixes) == 1 && !prefixes[""] && maxN >= 0 {
		for p := range prefixes {
			prefix = p
		}
		return max(maxN+1, len(distinct)), prefix
	}
	return len(distinct), ""
}

// proposeRate sums the partitions' rates: each one's records over the
// time between its first and last timestamp.
func proposeRate(records []SampledRecord) float64 {
	type span struct {
		n        int
		from, to int64
	}
	byPartition := map[int32]*span{}
	for _, r := range records {
		s := byPartition[r.Partition]
		if s == nil {
			byPartition[r.Partition] = &span{n: 1, from: r.Timestamp, to: r.Timestamp}
			continue
		}
		s.n++
		s.from, s.to = min(s.from, r.Timestamp), max(s.to, r.Timestamp)
	}
	var rate float64
	for _, s := range byPartition {
		if s.n > 1 && s.to > s.from {
			rate += float64(s.n-1) / (float64(s.to-s.from) / 1000)
		}
	}
	return float64(int64(rate*100+0.5)) / 100
}
