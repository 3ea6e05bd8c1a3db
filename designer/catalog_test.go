package designer

import "testing"

// TestImportOnlyKinds: the catalog keeps the kind the importer makes of
// an unrecognised processor out of the palette, and only that one.
func TestImportOnlyKinds(t *testing.T) {
	var only []string
	for _, k := range Catalog() {
		if k.ImportOnly {
			only = append(only, k.Name)
		}
	}
	if len(only) != 1 || only[0] != "opaque" {
		t.Errorf("import-only kinds %v, want [opaque]", only)
	}
}
