// Package datagen generates test data for source topics: JSON records
// built from a small template of field generators, produced to Kafka at a
// steady rate over a set of keys, optionally out of order (jitter) and with
// a fraction of records far in the past, so that stream time, grace
// periods and late-record drops become visible in a running topology.
//
// It owns the generator's specification (Spec) and its validation, the
// template language (ParseTemplate, Template) and the producing loop
// (Generator), whose records carry the GeneratorHeader; and, for a topic
// fed from elsewhere, reading back its latest records (Sample), which that
// header tells apart, and proposing a template shaped like them
// (Propose). It takes a franz-go client from its caller and never creates
// topics.
package datagen

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of the zero fields of a Spec.
const (
	defaultRate      = 10
	defaultKeys      = 10
	defaultKeyPrefix = "key"
	defaultLateBy    = time.Minute
	maxRate          = 1e6
)

// Spec describes one generator. The zero value of a field means its default.
type Spec struct {
	Topic     string  // required
	Rate      float64 // records per second; default 10; must be > 0 and <= 1e6
	Keys      int     // key cardinality: keys "<KeyPrefix>-0".."-(Keys-1)"; default 10
	KeyPrefix string  // default "key"
	// Template maps JSON field names to field generators, e.g.
	//   {"customer": "key", "amount": "random(1, 500)", "id": "sequence", "tier": "choice(gold, silver, bronze)", "ts": "timestamp", "note": "'fixed text'"}
	// Field generators: "key" (the record's key), "sequence" (0,1,2,... per generator), "sequence(start)",
	// "random(min, max)" (uniform integer), "randfloat(min, max)" (uniform float, 2 decimals), "choice(a, b, ...)",
	// "timestamp" (the record's timestamp in ms), "bool", a quoted string literal, or a JSON number literal.
	// Default template: {"key": "key", "seq": "sequence", "value": "random(1, 100)"}.
	//
	// String literals are in single quotes (taken as they are) or double
	// quotes (JSON escapes). The options of choice are bare words (strings),
	// quoted strings (which may hold commas) or JSON numbers (numbers).
	Template map[string]string
	// Jitter makes records out of order: each record's timestamp is now minus a uniform random duration in [0, Jitter]. Default 0.
	Jitter time.Duration
	// LateFraction of records (0..1) get a timestamp LateBy in the past (beyond any sensible grace), so they are dropped as late. Default 0.
	LateFraction float64
	LateBy       time.Duration // default 1 minute; must exceed Jitter when LateFraction > 0
	Seed         int64         // random seed; 0: time-based
}

// Validate reports every problem of the spec at once (errors.Join), each
// naming the field, e.g.
//
//	datagen spec "orders": Template field "amount": random(5, 1): min is above max
func (s Spec) Validate() error {
	_, errs := s.compile()
	return errors.Join(errs...)
}

// compile returns the spec with its defaults filled in and its template
// compiled, or the spec's problems.
func (s Spec) compile() (spec, []error) {
	prefix := "datagen spec"
	if s.Topic != "" {
		prefix = fmt.Sprintf("datagen spec %q", s.Topic)
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", prefix, fmt.Sprintf(format, args...)))
	}
	if err := checkTopic(s.Topic); err != nil {
		add("Topic: %v", err)
	}
	if math.IsNaN(s.Rate) || s.Rate < 0 || s.Rate > maxRate {
		add("Rate %v: must be > 0 and <= 1e6 records per second", s.Rate)
	}
	if s.Keys < 0 {
		add("Keys %d: must be positive (0: the default %d)", s.Keys, defaultKeys)
	}
	if s.Jitter < 0 {
		add("Jitter %v: must not be negative", s.Jitter)
	}
	if math.IsNaN(s.LateFraction) || s.LateFraction < 0 || s.LateFraction > 1 {
		add("LateFraction %v: must be between 0 and 1", s.LateFraction)
	}
	lateBy := s.LateBy
	if lateBy == 0 {
		lateBy = defaultLateBy
	}
	switch {
	case s.LateBy < 0:
		add("LateBy %v: must not be negative", s.LateBy)
	case s.LateFraction > 0 && lateBy <= s.Jitter:
		add("LateBy %v: must exceed Jitter %v, or late records are no later than jittered ones", lateBy, s.Jitter)
	}
	tmpl, tmplErrs := parseTemplate(s.Template)
	for _, err := range tmplErrs {
		add("%v", err)
	}
	if len(errs) > 0 {
		return spec{}, errs
	}
	c := spec{Spec: s, tmpl: tmpl}
	if c.Rate == 0 {
		c.Rate = defaultRate
	}
	if c.Keys == 0 {
		c.Keys = defaultKeys
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = defaultKeyPrefix
	}
	c.LateBy = lateBy
	return c, nil
}

// spec is a valid Spec with its defaults and its compiled template.
type spec struct {
	Spec
	tmpl Template
}

// checkTopic checks a Kafka topic name.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("required")
	case t == "." || t == "..":
		return fmt.Errorf("%q is not a valid topic name", t)
	case len(t) > 249:
		return fmt.Errorf("%d characters, above Kafka's 249", len(t))
	}
	for _, c := range t {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q has the character %q; Kafka allows only letters, digits, '.', '_' and '-'", t, c)
		}
	}
	return nil
}
