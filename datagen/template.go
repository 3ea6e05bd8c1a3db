package datagen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// defaultTemplate is the template of a Spec without one.
var defaultTemplate = map[string]string{"key": "key", "seq": "sequence", "value": "random(1, 100)"}

// generatorKinds is what an unknown generator's error lists.
const generatorKinds = "key, sequence, sequence(start), random(min, max), randfloat(min, max), choice(a, b, ...), timestamp, bool, a quoted string or a JSON number"

// Template is a compiled record template: JSON field names and the
// generators of their values. The zero Template renders "{}".
type Template struct {
	fields []field // sorted by name
}

type field struct {
	name []byte // the JSON-encoded name and a colon
	gen  valueFunc
}

// valueFunc appends one generated JSON value to dst.
type valueFunc func(dst []byte, key string, seq int64, ts time.Time, rng *rand.Rand) []byte

// ParseTemplate compiles a template: it maps JSON field names to field
// generators (see Spec.Template). An empty template is the default one,
// {"key": "key", "seq": "sequence", "value": "random(1, 100)"}. Every
// problem is reported, one error per field (errors.Join), each naming the
// field and the generator, e.g.
//
//	Template field "amount": random(5, 1): min is above max
func ParseTemplate(t map[string]string) (Template, error) {
	tmpl, errs := parseTemplate(t)
	return tmpl, errors.Join(errs...)
}

func parseTemplate(t map[string]string) (Template, []error) {
	if len(t) == 0 {
		t = defaultTemplate
	}
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	slices.Sort(names)
	var (
		tmpl Template
		errs []error
	)
	for _, name := range names {
		if name == "" {
			errs = append(errs, errors.New(`Template field "": the field name is empty`))
			continue
		}
		gen, err := parseGenerator(t[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("Template field %q: %w", name, err))
			continue
		}
		enc := appendJSONString(nil, name)
		tmpl.fields = append(tmpl.fields, field{name: append(enc, ':'), gen: gen})
	}
	if len(errs) > 0 {
		return Template{}, errs
	}
	return tmpl, nil
}

// Render returns the JSON object of one record: the template's fields in
// sorted order, generated for the record's key, its sequence number and
// its timestamp, drawing random values from rng (nil: a fresh, randomly
// seeded source).
func (t Template) Render(key string, seq int64, ts time.Time, rng *rand.Rand) []byte {
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return t.appendTo(make([]byte, 0, 16+24*len(t.fields)), key, seq, ts, rng)
}

func (t Template) appendTo(dst []byte, key string, seq int64, ts time.Time, rng *rand.Rand) []byte {
	dst = append(dst, '{')
	for i, f := range t.fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, f.name...)
		dst = f.gen(dst, key, seq, ts, rng)
	}
	return append(dst, '}')
}

// parseGenerator compiles one field generator. Its errors start with the
// generator's text.
func parseGenerator(text string) (valueFunc, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, errors.New("the generator is empty")
	}
	fail := func(format string, args ...any) (valueFunc, error) {
		return nil, fmt.Errorf("%s: %s", s, fmt.Sprintf(format, args...))
	}
	if s[0] == '\'' || s[0] == '"' {
		v, err := parseQuoted(s)
		if err != nil {
			return fail("%v", err)
		}
		lit := appendJSONString(nil, v)
		return literal(lit), nil
	}
	if num, ok := jsonNumber(s); ok {
		return literal([]byte(num)), nil
	}
	name, rest := s, ""
	hasArgs := false
	if i := strings.IndexByte(s, '('); i >= 0 {
		name, rest, hasArgs = strings.TrimSpace(s[:i]), s[i+1:], true
		end := closingParen(rest)
		if end < 0 {
			return fail("missing closing parenthesis")
		}
		if strings.TrimSpace(rest[end+1:]) != "" {
			return fail("unexpected text %q after the closing parenthesis", strings.TrimSpace(rest[end+1:]))
		}
		rest = rest[:end]
	}
	var args []string
	if hasArgs {
		var err error
		if args, err = splitArgs(rest); err != nil {
			return fail("%v", err)
		}
	}
	noArgs := func(gen valueFunc) (valueFunc, error) {
		if hasArgs {
			return fail("%s takes no arguments", name)
		}
		return gen, nil
	}
	switch name {
	case "key":
		return noArgs(func(dst []byte, key string, _ int64, _ time.Time, _ *rand.Rand) []byte {
			return appendJSONString(dst, key)
		})
	case "timestamp":
		return noArgs(func(dst []byte, _ string, _ int64, ts time.Time, _ *rand.Rand) []byte {
			return strconv.AppendInt(dst, ts.UnixMilli(), 10)
		})
	case "bool":
		return noArgs(func(dst []byte, _ string, _ int64, _ time.Time, rng *rand.Rand) []byte {
			return strconv.AppendBool(dst, rng.IntN(2) == 1)
		})
	case "sequence":
		var start int64
		if hasArgs {
			if len(args) != 1 {
				return fail("sequence takes 1 argument (start), got %d", len(args))
			}
			var err error
			if start, err = parseInt("start", args[0]); err != nil {
				return fail("%v", err)
			}
		}
		return func(dst []byte, _ string, seq int64, _ time.Time, _ *rand.Rand) []byte {
			return strconv.AppendInt(dst, start+seq, 10)
		}, nil
	case "random":
		if !hasArgs || len(args) != 2 {
			return fail("random takes 2 arguments (min, max), got %d", len(args))
		}
		lo, errLo := parseInt("min", args[0])
		hi, errHi := parseInt("max", args[1])
		if err := errors.Join(errLo, errHi); err != nil {
			return fail("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		if lo > hi {
			return fail("min is above max")
		}
		span := uint64(hi) - uint64(lo) // the count of values minus 1
		return func(dst []byte, _ string, _ int64, _ time.Time, rng *rand.Rand) []byte {
			var off uint64
			if span == math.MaxUint64 {
				off = rng.Uint64()
			} else {
				off = rng.Uint64N(span + 1)
			}
			return strconv.AppendInt(dst, int64(uint64(lo)+off), 10)
		}, nil
	case "randfloat":
		if !hasArgs || len(args) != 2 {
			return fail("randfloat takes 2 arguments (min, max), got %d", len(args))
		}
		lo, errLo := parseFloat("min", args[0])
		hi, errHi := parseFloat("max", args[1])
		if err := errors.Join(errLo, errHi); err != nil {
			return fail("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		if lo > hi {
			return fail("min is above max")
		}
		if max(math.Abs(lo), math.Abs(hi)) > maxFloat {
			return fail("min and max must lie within ±%g", maxFloat)
		}
		// Uniform over the numbers with 2 decimals in [min, max], in
		// hundredths; the tolerance absorbs 0.1*100 = 10.000000000000002.
		loC, hiC := int64(math.Ceil(lo*100-1e-6)), int64(math.Floor(hi*100+1e-6))
		if loC > hiC {
			return fail("no number with 2 decimals lies between min and max")
		}
		return func(dst []byte, _ string, _ int64, _ time.Time, rng *rand.Rand) []byte {
			return appendHundredths(dst, loC+rng.Int64N(hiC-loC+1))
		}, nil
	case "choice":
		if !hasArgs || len(args) == 0 {
			return fail("choice needs at least one option")
		}
		options := make([][]byte, len(args))
		for i, a := range args {
			switch {
			case a == "":
				return fail("option %d is empty", i+1)
			case a[0] == '\'' || a[0] == '"':
				v, err := parseQuoted(a)
				if err != nil {
					return fail("option %d: %v", i+1, err)
				}
				options[i] = appendJSONString(nil, v)
			default:
				if num, ok := jsonNumber(a); ok {
					options[i] = []byte(num)
				} else {
					options[i] = appendJSONString(nil, a)
				}
			}
		}
		return func(dst []byte, _ string, _ int64, _ time.Time, rng *rand.Rand) []byte {
			return append(dst, options[rng.IntN(len(options))]...)
		}, nil
	}
	return fail("unknown generator; want %s", generatorKinds)
}

// maxFloat bounds randfloat's min and max, so that every value in
// hundredths fits an int64 exactly.
const maxFloat = 1e15

// appendHundredths appends c/100 with exactly 2 decimals.
func appendHundredths(dst []byte, c int64) []byte {
	if c < 0 {
		dst = append(dst, '-')
		c = -c
	}
	dst = strconv.AppendInt(dst, c/100, 10)
	return append(dst, '.', byte('0'+c%100/10), byte('0'+c%10))
}

func literal(v []byte) valueFunc {
	return func(dst []byte, _ string, _ int64, _ time.Time, _ *rand.Rand) []byte { return append(dst, v...) }
}

func parseInt(what, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s %q is out of the int64 range", what, s)
		}
		return 0, fmt.Errorf("%s %q is not an integer", what, s)
	}
	return v, nil
}

func parseFloat(what, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%s %q is not a finite number", what, s)
	}
	return v, nil
}

// jsonNumber reports whether s is a JSON number literal, and returns it
// in its compact form.
func jsonNumber(s string) (string, bool) {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return "", false
	}
	var n json.Number
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return "", false
	}
	return string(n), true
}

// parseQuoted returns the text of a string literal: in single quotes,
// taken as it is, or in double quotes, with JSON escapes.
func parseQuoted(s string) (string, error) {
	q := s[0]
	if len(s) < 2 || s[len(s)-1] != q {
		return "", errors.New("unterminated string literal")
	}
	if q == '\'' {
		inner := s[1 : len(s)-1]
		if strings.IndexByte(inner, '\'') >= 0 {
			return "", errors.New("a single-quoted string cannot contain a single quote; use double quotes")
		}
		return inner, nil
	}
	var v string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "", fmt.Errorf("invalid double-quoted string: %v", err)
	}
	return v, nil
}

// closingParen returns the index in s (the text after an opening
// parenthesis) of the parenthesis that closes it, outside quotes, or -1.
func closingParen(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ')':
			return i
		}
	}
	return -1
}

// splitArgs splits the text between parentheses at commas outside quotes
// and trims each argument. Empty text is no arguments.
func splitArgs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var (
		args  []string
		quote byte
		start int
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ',':
			args = append(args, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated string literal")
	}
	return append(args, strings.TrimSpace(s[start:])), nil
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
