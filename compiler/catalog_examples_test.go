package compiler

import (
	"testing"

	"github.com/braidstream/braid/designer"
)

// TestCatalogExamplesCompile: every expression example the catalog shows
// in the editor compiles for its role.
func TestCatalogExamplesCompile(t *testing.T) {
	for _, k := range designer.Catalog() {
		for _, p := range k.Params {
			if p.Type != designer.ExpressionParam || p.Example == "" {
				continue
			}
			if _, err := CompileExpr(p.Expr, p.Example); err != nil {
				t.Errorf("%s.%s example %q: %v", k.Name, p.Name, p.Example, err)
			}
		}
	}
}
