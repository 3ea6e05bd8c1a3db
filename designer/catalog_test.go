package designer

import "testing"

// TestImportOnlyKinds: the catalog keeps the kind the importer makes of
// an unrecognised processor out of the palette, and only that one.
func TestImportOnlyKinds(t *testing.T) {
	var only []Kind
	for _, k := range Catalog() {
		if k.ImportOnly {
			only = append(only, k.Name)
		}
	}
	if len(only) != 1 || only[0] != KindOpaque {
		t.Errorf("import-only kinds %v, want [opaque]", only)
	}
}

// TestKindConstants: every kind constant is declared by the catalog, in
// palette order, and the catalog declares no kind without a constant.
func TestKindConstants(t *testing.T) {
	kinds := []Kind{KindSourceStream, KindSourceTable, KindFilter, KindFilterNot, KindMap,
		KindMapValues, KindFlatMap, KindFlatMapValues, KindSelectKey, KindPeek, KindBranch,
		KindMerge, KindRepartition, KindGroupByKey, KindGroupBy, KindCount, KindReduce,
		KindAggregate, KindWindowedBy, KindToStream, KindStreamJoin, KindStreamTableJoin,
		KindTableJoin, KindSink, KindOpaque}
	cat := Catalog()
	if len(cat) != len(kinds) {
		t.Fatalf("catalog has %d kinds, constants %d", len(cat), len(kinds))
	}
	for i, k := range cat {
		if k.Name != kinds[i] {
			t.Errorf("catalog kind %d is %q, constant %q", i, k.Name, kinds[i])
		}
		if _, ok := KindByName(kinds[i]); !ok {
			t.Errorf("KindByName(%q) found nothing", kinds[i])
		}
	}
}
