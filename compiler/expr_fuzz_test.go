package compiler

import (
	"strings"
	"testing"

	"github.com/braidstream/braid/designer"
)

// FuzzCompileExpr feeds CompileExpr mutated sources for every role: it
// must never panic or overflow the stack (which would end the server
// whose /api/expression it answers), and a refusal must be an
// *ExprError.
func FuzzCompileExpr(f *testing.F) {
	for _, src := range []string{
		"value.amount >= 50",
		"let x = value.amount; x > 1 ? 'big' : 'small'",
		`{"key": key, "value": value}`,
		"[1, 2, 3] | map(# * 2)",
		"aggregate + value.amount",
		strings.Repeat("(", MaxExprDepth) + "true" + strings.Repeat(")", MaxExprDepth),
		strings.Repeat("!", 2000) + "true",
		strings.Repeat("2 ** ", 1000) + "1 > 0",
		"'((((' + \"[[\" + `{{` != ''",
	} {
		f.Add(src)
	}
	roles := []designer.ExprRole{designer.Predicate, designer.KeyMapper, designer.ValueMapper, designer.FlatMapper,
		designer.Initializer, designer.Aggregator, designer.Reducer, designer.SessionMerger, designer.Joiner, designer.TimestampExtractor}
	f.Fuzz(func(t *testing.T, src string) {
		for _, role := range roles {
			_, err := CompileExpr(role, src)
			if err == nil {
				continue
			}
			if _, ok := err.(*ExprError); !ok {
				t.Fatalf("%s %q: %T %v, want an *ExprError", role, src, err, err)
			}
		}
	})
}

func TestExprBounds(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // "" when the source is within the bounds
	}{
		{"long", strings.Repeat(" ", MaxExprBytes) + "true", "bytes long; at most 16384"},
		{"as long as allowed", strings.Repeat(" ", MaxExprBytes-4) + "true", ""},
		{"deep", strings.Repeat("(", MaxExprDepth+1) + "true" + strings.Repeat(")", MaxExprDepth+1), "nested more than 100 deep (1:101)"},
		{"as deep as allowed", strings.Repeat("(", MaxExprDepth) + "true" + strings.Repeat(")", MaxExprDepth), ""},
		{"mixed brackets", strings.Repeat("[{(", 34) + "1", "nested more than 100 deep (1:101)"},
		{"on a later line", "1 +\n  " + strings.Repeat("(", MaxExprDepth+1), "(2:103)"},
		{"quoted brackets", `'` + strings.Repeat("(", 200) + `' + "` + strings.Repeat("[", 200) + "\" + `" + strings.Repeat("{", 200) + "`", ""},
		{"escaped quote", `'\'` + strings.Repeat("(", 200) + `'`, ""},
		{"sequential groups", strings.Repeat("(1) + ", 500) + "1", ""},
	} {
		err := checkExprBounds(tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !err.OverLimit || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an over-limit error with %q", tc.name, err, tc.want)
		}
	}
	// CompileExpr refuses before parsing: the parser would recurse 600,000 deep.
	_, err := CompileExpr(designer.Predicate, strings.Repeat("(", 600000)+"true"+strings.Repeat(")", 600000))
	if ee, ok := err.(*ExprError); !ok || !ee.OverLimit {
		t.Errorf("a 1.2 MB nested predicate: %v, want an over-limit *ExprError", err)
	}
}
