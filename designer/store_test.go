package designer

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// clock gives a Store times one second apart from a fixed start.
func clock(s *Store) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	s.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

func mustSave(t *testing.T, s *Store, d *Design, msg string) Revision {
	t.Helper()
	r, err := s.Save(d, msg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantNotFound(t *testing.T, err error, id string, rev int) {
	t.Helper()
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.ID != id || nf.Revision != rev {
		t.Errorf("got %v, want NotFoundError{%q, %d}", err, id, rev)
	}
}

func TestStoreRevisions(t *testing.T) {
	s := openStore(t, t.TempDir())
	clock(s)
	d := readDesign(t, "orders-windowed.json")
	r1 := mustSave(t, s, d, "first")
	if r1.Number != 1 || r1.Message != "first" || !r1.Saved.Equal(time.Date(2030, 1, 2, 3, 4, 6, 6, time.UTC)) {
		t.Errorf("revision 1: %+v", r1)
	}
	d2 := readDesign(t, "orders-windowed.json")
	d2.Nodes[1].Params["predicate"] = "value.amount >= 100"
	r2 := mustSave(t, s, d2, "")
	if r2.Number != 2 {
		t.Errorf("revision 2: %+v", r2)
	}

	got, r, err := s.Get("orders-windowed")
	if err != nil || r != r2 || !reflect.DeepEqual(got, d2) {
		t.Errorf("Get: %v, %+v, %v", got, r, err)
	}
	got, r, err = s.GetRevision("orders-windowed", 1)
	if err != nil || r != r1 || !reflect.DeepEqual(got, d) {
		t.Errorf("GetRevision 1: %v, %+v, %v", got, r, err)
	}
	revs, err := s.Revisions("orders-windowed")
	if err != nil || !reflect.DeepEqual(revs, []Revision{r1, r2}) {
		t.Errorf("Revisions: %+v, %v", revs, err)
	}

	exported, err := s.Export("orders-windowed", 0)
	want, _ := Encode(d2)
	if err != nil || !bytes.Equal(exported, want) {
		t.Errorf("Export latest: %v\n%s", err, exported)
	}
	exported, err = s.Export("orders-windowed", 1)
	want, _ = Encode(d)
	if err != nil || !bytes.Equal(exported, want) {
		t.Errorf("Export 1: %v\n%s", err, exported)
	}

	_, _, err = s.GetRevision("orders-windowed", 3)
	wantNotFound(t, err, "orders-windowed", 3)
	_, err = s.Export("orders-windowed", 3)
	wantNotFound(t, err, "orders-windowed", 3)
	_, _, err = s.Get("nope")
	wantNotFound(t, err, "nope", 0)
	_, _, err = s.Get("a/b")
	wantNotFound(t, err, "a/b", 0)
	_, err = s.Revisions("nope")
	wantNotFound(t, err, "nope", 0)
	if msg := (&NotFoundError{ID: "x", Revision: 2}).Error(); msg != `design "x" has no revision 2` {
		t.Errorf("NotFoundError text %q", msg)
	}
	if msg := (&NotFoundError{ID: "x"}).Error(); msg != `design "x" not found` {
		t.Errorf("NotFoundError text %q", msg)
	}
}

// TestStoreNewIDs: a new design's id is its name's slug, with a suffix
// when taken, and never a deleted design's (its application, braid-<id>,
// may have left topics and a group behind).
func TestStoreNewIDs(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustSave(t, s, &Design{Name: "draft"}, "")
	for _, tc := range []struct{ name, id string }{
		{"Big orders per 10s!", "big-orders-per-10s"},
		{"Big orders per 10s", "big-orders-per-10s-2"},
		{"", "design"},
		{"***", "design-2"},
	} {
		other := &Design{Name: tc.name}
		mustSave(t, s, other, "")
		if other.ID != tc.id {
			t.Errorf("a new design named %q got id %q, want %q", tc.name, other.ID, tc.id)
		}
	}
	if err := s.Delete("draft"); err != nil {
		t.Fatal(err)
	}
	again := &Design{Name: "draft"}
	mustSave(t, s, again, "")
	if again.ID != "draft-2" {
		t.Errorf("a new design named draft after draft was deleted got id %q, want draft-2", again.ID)
	}
}

func TestStoreSave(t *testing.T) {
	s := openStore(t, t.TempDir())
	d := &Design{Name: "draft", Nodes: []Node{{ID: "s", Kind: "sink"}}} // problems, but a valid shape
	r := mustSave(t, s, d, "")
	if d.ID != "draft" || d.Version != FormatVersion || r.Number != 1 {
		t.Errorf("saved draft: id %q, version %d, %+v", d.ID, d.Version, r)
	}
	other := &Design{Name: "draft"}
	mustSave(t, s, other, "")
	if other.ID != "draft-2" {
		t.Errorf("a second design named draft got id %q, want draft-2", other.ID)
	}
	for _, tc := range []struct {
		name string
		d    *Design
	}{
		{"nil", nil},
		{"invalid id", &Design{ID: "a b"}},
		{"id with a slash", &Design{ID: "a/b"}},
		{"id ..", &Design{ID: ".."}},
		{"unencodable parameter", &Design{ID: "f", Nodes: []Node{{Params: map[string]any{"f": func() {}}}}}},
	} {
		if _, err := s.Save(tc.d, ""); err == nil {
			t.Errorf("%s: saved", tc.name)
		}
	}
	list, err := s.List()
	if err != nil || len(list) != 2 {
		t.Errorf("List after refused saves: %v, %v", list, err)
	}
}

func TestStoreListRenameDelete(t *testing.T) {
	s := openStore(t, t.TempDir())
	clock(s)
	for _, id := range []string{"b", "a", "a-b", "a.b", "ab"} {
		mustSave(t, s, &Design{ID: id, Name: "n-" + id}, "")
	}
	mustSave(t, s, &Design{ID: "a", Name: "n-a"}, "")
	r, err := s.Rename("a", "renamed")
	if err != nil || r.Number != 3 || r.Message != `renamed from "n-a" to "renamed"` {
		t.Errorf("Rename: %+v, %v", r, err)
	}
	if d, _, _ := s.Get("a"); d.Name != "renamed" {
		t.Errorf("after Rename: %+v", d)
	}
	if _, err := s.Rename("nope", "x"); err == nil {
		t.Error("Rename of a missing design")
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sum := range list {
		ids = append(ids, sum.ID)
	}
	if !reflect.DeepEqual(ids, []string{"a", "a-b", "a.b", "ab", "b"}) {
		t.Errorf("List ids %v", ids)
	}
	a := list[0]
	if a.Name != "renamed" || a.Latest != 3 || a.Revisions != 3 || !a.Updated.After(a.Created) || !a.Created.Equal(list[1].Created.Add(-time.Second)) {
		t.Errorf("summary of a: %+v", a)
	}

	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get("a")
	wantNotFound(t, err, "a", 0)
	_, err = s.Revisions("a")
	wantNotFound(t, err, "a", 0)
	wantNotFound(t, s.Delete("a"), "a", 0)
	list, _ = s.List()
	if len(list) != 4 || list[0].ID != "a-b" {
		t.Errorf("List after Delete: %+v", list)
	}
	for _, id := range []string{"a-b", "a.b", "ab"} {
		if revs, err := s.Revisions(id); err != nil || len(revs) != 1 {
			t.Errorf("%s after deleting a: %v, %v", id, revs, err)
		}
	}
	// A deleted id starts again at revision 1.
	if r := mustSave(t, s, &Design{ID: "a"}, ""); r.Number != 1 {
		t.Errorf("saved again: %+v", r)
	}
}

func TestStoreImport(t *testing.T) {
	s := openStore(t, t.TempDir())
	data, err := Encode(readDesign(t, "orders-windowed.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, r, err := s.Import(data)
	if err != nil || d.ID != "orders-windowed" || r.Number != 1 || r.Message != "imported" {
		t.Fatalf("Import: %+v, %+v, %v", d, r, err)
	}
	d2, r2, err := s.Import(data)
	if err != nil || d2.ID == "orders-windowed" || !ValidID(d2.ID) || r2.Number != 1 {
		t.Fatalf("Import again: %+v, %+v, %v", d2, r2, err)
	}
	if revs, _ := s.Revisions("orders-windowed"); len(revs) != 1 {
		t.Errorf("Import added a revision to the existing design: %v", revs)
	}
	got, _, _ := s.Get(d2.ID)
	d2.ID, got.ID = "", ""
	if !reflect.DeepEqual(got, d2) {
		t.Errorf("imported copy differs")
	}
	d3, _, err := s.Import(bytes.Replace(data, []byte(`"id": "orders-windowed"`), []byte(`"id": "orders windowed"`), 1))
	if err != nil || !ValidID(d3.ID) {
		t.Errorf("Import with an invalid id: %+v, %v", d3, err)
	}
	_, _, err = s.Import([]byte(`{"version": 2}`))
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != "version" {
		t.Errorf("Import of version 2: %v", err)
	}
	if list, _ := s.List(); len(list) != 3 {
		t.Errorf("List: %+v", list)
	}
}

func TestStoreReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir); err == nil {
		t.Error("opened one directory twice")
	}
	d := readDesign(t, "payments-branches.json")
	r := mustSave(t, s, d, "kept")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Save":      func() error { _, err := s.Save(&Design{}, ""); return err }(),
		"Get":       func() error { _, _, err := s.Get("x"); return err }(),
		"List":      func() error { _, err := s.List(); return err }(),
		"Revisions": func() error { _, err := s.Revisions("x"); return err }(),
		"Rename":    func() error { _, err := s.Rename("x", "y"); return err }(),
		"Delete":    s.Delete("x"),
		"Import":    func() error { _, _, err := s.Import([]byte(`{"version": 1}`)); return err }(),
		"Export":    func() error { _, err := s.Export("x", 0); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}

	s = openStore(t, dir)
	got, gr, err := s.Get(d.ID)
	if err != nil || gr != r || !reflect.DeepEqual(got, d) {
		t.Errorf("after reopening: %+v, %+v, %v", got, gr, err)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := openStore(t, t.TempDir())
	const writers, saves = 8, 10
	var wg sync.WaitGroup
	numbers := make(chan int, writers*saves)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < saves; i++ {
				r, err := s.Save(&Design{ID: "shared", Name: fmt.Sprintf("w%d-%d", w, i)}, "")
				if err != nil {
					t.Error(err)
					return
				}
				numbers <- r.Number
				if _, err := s.Save(&Design{Name: "own"}, ""); err != nil {
					t.Error(err)
				}
				if _, _, err := s.Get("shared"); err != nil {
					t.Error(err)
				}
				if _, err := s.List(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	close(numbers)
	var got []int
	for n := range numbers {
		got = append(got, n)
	}
	sort.Ints(got)
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("revision numbers %v, want 1..%d", got, writers*saves)
		}
	}
	revs, err := s.Revisions("shared")
	if err != nil || len(revs) != writers*saves || revs[len(revs)-1].Number != writers*saves {
		t.Errorf("Revisions: %d, %v", len(revs), err)
	}
	if list, _ := s.List(); len(list) != 1+writers*saves {
		t.Errorf("List has %d designs", len(list))
	}
}

func TestValidID(t *testing.T) {
	for id, ok := range map[string]bool{
		"orders-windowed": true, "a_B.9": true, "big-orders-per-10s-2": true, "": false, ".": false, "..": false,
		"a/b": false, "a b": false, "é": false, string(make([]byte, 129)): false,
	} {
		if ValidID(id) != ok {
			t.Errorf("ValidID(%q) = %v", id, !ok)
		}
	}
}
