package datagen

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTemplateValid(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	for _, tc := range []struct {
		name string
		gen  string
		// want is the exact JSON of the value, or check judges it.
		want  string
		check func(v any) bool
	}{
		{"key", "key", `"customer-7"`, nil},
		{"key spaced", "  key  ", `"customer-7"`, nil},
		{"sequence", "sequence", `41`, nil},
		{"sequence start", "sequence(1000)", `1041`, nil},
		{"sequence negative start", "sequence( -50 )", `-9`, nil},
		{"timestamp", "timestamp", `1700000000123`, nil},
		{"single quoted", "'fixed, text'", `"fixed, text"`, nil},
		{"single quoted empty", "''", `""`, nil},
		{"double quoted", `"a \"b\"\n"`, `"a \"b\"\n"`, nil},
		{"integer", "42", `42`, nil},
		{"negative float", "-1.5e3", `-1.5e3`, nil},
		{"random", "random(1, 500)", "", func(v any) bool { f, ok := v.(float64); return ok && f >= 1 && f <= 500 && f == float64(int(f)) }},
		{"random one value", "random(7,7)", `7`, nil},
		{"random negative", "random(-10, -5)", "", func(v any) bool { f, ok := v.(float64); return ok && f >= -10 && f <= -5 }},
		{"randfloat", "randfloat(0.5, 2.25)", "", func(v any) bool {
			f, ok := v.(float64)
			return ok && f >= 0.5 && f <= 2.25 && math.Abs(f*100-math.Round(f*100)) < 1e-9
		}},
		{"randfloat tenths", "randfloat(0.1, 0.1)", `0.10`, nil},
		{"randfloat negative", "randfloat(-1, -1)", `-1.00`, nil},
		{"bool", "bool", "", func(v any) bool { _, ok := v.(bool); return ok }},
		{"choice words", "choice(gold, silver, bronze)", "", func(v any) bool { return v == "gold" || v == "silver" || v == "bronze" }},
		{"choice one", "choice(only)", `"only"`, nil},
		{"choice quoted with comma", "choice('a, b')", `"a, b"`, nil},
		{"choice numbers", "choice(3)", `3`, nil},
		{"choice double quoted paren", `choice(")")`, `")"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(map[string]string{"f": tc.gen})
			if err != nil {
				t.Fatalf("ParseTemplate(%q): %v", tc.gen, err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 50 {
				out := tmpl.Render("customer-7", 41, ts, rng)
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(out, &obj); err != nil {
					t.Fatalf("Render gave invalid JSON %s: %v", out, err)
				}
				raw := string(obj["f"])
				if tc.check == nil {
					if raw != tc.want {
						t.Fatalf("%q rendered %s, want %s", tc.gen, raw, tc.want)
					}
					continue
				}
				var v any
				json.Unmarshal(obj["f"], &v)
				if !tc.check(v) {
					t.Fatalf("%q rendered %s, out of bounds", tc.gen, raw)
				}
			}
		})
	}
}

func TestParseTemplateInvalid(t *testing.T) {
	for _, tc := range []struct {
		gen  string
		want string // the whole error text after `Template field "f": `
	}{
		{"", "the generator is empty"},
		{"   ", "the generator is empty"},
		{"foo", "foo: unknown generator; want " + generatorKinds},
		{"Key", "Key: unknown generator; want " + generatorKinds},
		{"true", "true: unknown generator; want " + generatorKinds},
		{"foo(1)", "foo(1): unknown generator; want " + generatorKinds},
		{"key()", "key(): key takes no arguments"},
		{"timestamp(ms)", "timestamp(ms): timestamp takes no arguments"},
		{"bool(1)", "bool(1): bool takes no arguments"},
		{"sequence()", "sequence(): sequence takes 1 argument (start), got 0"},
		{"sequence(1, 2)", "sequence(1, 2): sequence takes 1 argument (start), got 2"},
		{"sequence(x)", `sequence(x): start "x" is not an integer`},
		{"random", "random: random takes 2 arguments (min, max), got 0"},
		{"random(1)", "random(1): random takes 2 arguments (min, max), got 1"},
		{"random(1, 2, 3)", "random(1, 2, 3): random takes 2 arguments (min, max), got 3"},
		{"random(5, 1)", "random(5, 1): min is above max"},
		{"random(1.5, 3)", `random(1.5, 3): min "1.5" is not an integer`},
		{"random(a, b)", `random(a, b): min "a" is not an integer; max "b" is not an integer`},
		{"random(1, 99999999999999999999)", `random(1, 99999999999999999999): max "99999999999999999999" is out of the int64 range`},
		{"random(1, 2", "random(1, 2: missing closing parenthesis"},
		{"random(1, 2) x", `random(1, 2) x: unexpected text "x" after the closing parenthesis`},
		{"randfloat(1)", "randfloat(1): randfloat takes 2 arguments (min, max), got 1"},
		{"randfloat(2.5, 1)", "randfloat(2.5, 1): min is above max"},
		{"randfloat(x, 1)", `randfloat(x, 1): min "x" is not a finite number`},
		{"randfloat(0, Inf)", `randfloat(0, Inf): max "Inf" is not a finite number`},
		{"randfloat(0, 1e16)", "randfloat(0, 1e16): min and max must lie within ±1e+15"},
		{"randfloat(1.001, 1.009)", "randfloat(1.001, 1.009): no number with 2 decimals lies between min and max"},
		{"choice()", "choice(): choice needs at least one option"},
		{"choice", "choice: choice needs at least one option"},
		{"choice(a,,b)", "choice(a,,b): option 2 is empty"},
		{"choice(a, 'b)", "choice(a, 'b): missing closing parenthesis"},
		{`choice("\x")`, `choice("\x"): option 1: invalid double-quoted string: invalid character 'x' in string escape code`},
		{"'abc", "'abc: unterminated string literal"},
		{"'it's'", "'it's': a single-quoted string cannot contain a single quote; use double quotes"},
		{`"abc`, `"abc: unterminated string literal`},
		{"01", "01: unknown generator; want " + generatorKinds},
	} {
		t.Run(tc.gen, func(t *testing.T) {
			_, err := ParseTemplate(map[string]string{"f": tc.gen})
			want := `Template field "f": ` + tc.want
			if err == nil || err.Error() != want {
				t.Errorf("ParseTemplate(%q) = %v,\nwant %s", tc.gen, err, want)
			}
		})
	}
}

func TestParseTemplateReportsEveryField(t *testing.T) {
	_, err := ParseTemplate(map[string]string{"b": "random(5, 1)", "ok": "key", "a": "nope", "": "key"})
	want := []string{
		`Template field "": the field name is empty`,
		`Template field "a": nope: unknown generator; want ` + generatorKinds,
		`Template field "b": random(5, 1): min is above max`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("ParseTemplate = %v,\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

func TestRender(t *testing.T) {
	spec := map[string]string{
		"customer": "key", "amount": "random(1, 500)", "id": "sequence", "tier": "choice(gold, silver, bronze)",
		"ts": "timestamp", "note": "'fixed text'", "price": "randfloat(1, 100)", "vip": "bool", "n": "3",
		"quote\"d": "'<tag> & \t'",
	}
	tmpl, err := ParseTemplate(spec)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1_700_000_000_000)
	render := func(seed uint64) [][]byte {
		rng := rand.New(rand.NewPCG(seed, 7))
		var out [][]byte
		for i := range 20 {
			out = append(out, tmpl.Render("c-"+string(rune('0'+i%10)), int64(i), ts, rng))
		}
		return out
	}
	a, b := render(1), render(1)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("record %d differs with the same seed:\n%s\n%s", i, a[i], b[i])
		}
	}
	if slices.EqualFunc(a, render(2), bytes.Equal) {
		t.Error("another seed rendered the same records")
	}
	for i, rec := range a {
		if !json.Valid(rec) {
			t.Fatalf("invalid JSON: %s", rec)
		}
		// The field names in the order they appear.
		dec := json.NewDecoder(bytes.NewReader(rec))
		dec.Token() // {
		var names []string
		for dec.More() {
			tok, _ := dec.Token()
			names = append(names, tok.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		if !slices.IsSorted(names) || len(names) != len(spec) {
			t.Fatalf("fields %q: want all %d, sorted", names, len(spec))
		}
		var v map[string]any
		json.Unmarshal(rec, &v)
		if v["id"] != float64(i) || v["ts"] != float64(ts.UnixMilli()) || v["note"] != "fixed text" || v["n"] != float64(3) || v["quote\"d"] != "<tag> & \t" {
			t.Errorf("record %d: %s", i, rec)
		}
	}
	if got := string(a[0]); !strings.HasPrefix(got, `{"amount":`) {
		t.Errorf("first record %s does not start with the first field in order", got)
	}
}

func TestRenderDefaultAndZeroTemplates(t *testing.T) {
	tmpl, err := ParseTemplate(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := tmpl.Render("key-3", 9, time.Now(), nil)
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(v) != 3 || v["key"] != "key-3" || v["seq"] != float64(9) {
		t.Errorf("default template rendered %s", out)
	}
	if n, ok := v["value"].(float64); !ok || n < 1 || n > 100 {
		t.Errorf("default template's value out of range: %s", out)
	}
	if got := string(Template{}.Render("k", 0, time.Now(), nil)); got != "{}" {
		t.Errorf("zero Template rendered %s, want {}", got)
	}
}

func TestKeyEscaping(t *testing.T) {
	tmpl, err := ParseTemplate(map[string]string{"k": "key"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`a"b\c`, "line\nbreak\x01", "ünïcode", "bad\xffutf8"} {
		out := tmpl.Render(key, 0, time.Now(), nil)
		var v map[string]string
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("key %q: %s: %v", key, out, err)
		}
		if want := strings.ToValidUTF8(key, "\uFFFD"); v["k"] != want {
			t.Errorf("key %q rendered %q", key, v["k"])
		}
	}
}
