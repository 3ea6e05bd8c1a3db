package designer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Store keeps designs and every revision of each in a pebble database.
// Its methods are safe for concurrent use; each change is one atomic
// pebble batch, synced to disk before it returns.
//
// Keys (ids hold no '/', see ValidID):
//
//	m/<id>                the design's summary (name, latest revision, times)
//	r/<id>/<rev, 10 digits>   a revision's number, time and message
//	b/<id>/<rev, 10 digits>   the design as it was saved, in its JSON form
//
// so listing designs, or the revisions of one, is a prefix scan.
type Store struct {
	mu  sync.RWMutex
	db  *pebble.DB
	now func() time.Time
}

// Summary describes a stored design for a list.
type Summary struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Latest is the number of the newest revision.
	Latest int `json:"latest"`
	// Revisions is how many revisions there are (1..Latest).
	Revisions int       `json:"revisions"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
}

// Revision is one saved state of a design.
type Revision struct {
	// Number counts a design's revisions from 1.
	Number  int       `json:"number"`
	Saved   time.Time `json:"saved"`
	Message string    `json:"message,omitempty"`
}

// NotFoundError says a design, or one revision of it, is not stored.
type NotFoundError struct {
	ID string
	// Revision is the revision asked for; 0 when the design itself is
	// missing (or its latest revision was asked for).
	Revision int
}

func (e *NotFoundError) Error() string {
	if e.Revision > 0 {
		return fmt.Sprintf("design %q has no revision %d", e.ID, e.Revision)
	}
	return fmt.Sprintf("design %q not found", e.ID)
}

// ErrClosed is returned by the methods of a closed Store.
var ErrClosed = errors.New("designer: store is closed")

// meta is the value of m/<id>.
type meta struct {
	Name    string    `json:"name"`
	Latest  int       `json:"latest"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// maxIDLength is the longest design id.
const maxIDLength = 128

// ValidID reports whether id can name a stored design: 1 to 128 letters,
// digits, '.', '_' and '-', and not "." or ".." (ids appear in URLs and
// keys). Save assigns such an id to a design without one.
func ValidID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > maxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// OpenStore opens the design store in dir, creating it if missing. Only
// one Store may have a directory open at a time.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("designer: OpenStore: empty directory")
	}
	db, err := pebble.Open(dir, &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{},
	})
	if err != nil {
		return nil, fmt.Errorf("designer: open store %s: %w", dir, err)
	}
	return &Store{db: db, now: time.Now}, nil
}

// Close closes the store; later calls of its methods return ErrClosed.
// Closing twice is harmless.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("designer: close store: %w", err)
	}
	return nil
}

func metaKey(id string) []byte { return []byte("m/" + id) }

// deletedKey marks id as the id of a deleted design, which freshID does
// not give again.
func deletedKey(id string) []byte { return []byte("d/" + id) }

func revKey(family, id string, rev int) []byte {
	return fmt.Appendf(nil, "%s/%s/%010d", family, id, rev)
}

// prefixBounds returns the bounds of the keys starting with prefix, which
// ends in '/': from prefix up to the same with '/' replaced by '0'.
func prefixBounds(prefix string) (lower, upper []byte) {
	lower = []byte(prefix)
	upper = append([]byte(prefix[:len(prefix)-1]), '/'+1)
	return lower, upper
}

// get returns a copy of the value of key, or nil when there is none.
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("designer: read %s: %w", key, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// meta returns the meta of design id, or nil if it is not stored.
func (s *Store) meta(id string) (*meta, error) {
	if !ValidID(id) {
		return nil, nil
	}
	v, err := s.get(metaKey(id))
	if err != nil || v == nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("designer: design %q: corrupt summary: %w", id, err)
	}
	return &m, nil
}

// List returns a summary of every stored design, ordered by id.
func (s *Store) List() ([]Summary, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, ErrClosed
	}
	lower, upper := prefixBounds("m/")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("designer: list designs: %w", err)
	}
	list := []Summary{}
	for it.First(); it.Valid(); it.Next() {
		id := string(it.Key()[len(lower):])
		var m meta
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			it.Close()
			return nil, fmt.Errorf("designer: design %q: corrupt summary: %w", id, err)
		}
		list = append(list, Summary{ID: id, Name: m.Name, Latest: m.Latest, Revisions: m.Latest, Created: m.Created, Updated: m.Updated})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("designer: list designs: %w", err)
	}
	return list, nil
}

// Get returns the latest revision of design id.
func (s *Store) Get(id string) (*Design, Revision, error) {
	return s.GetRevision(id, 0)
}

// GetRevision returns revision rev of design id; rev 0 (or less) means
// the latest. A missing design or revision is a *NotFoundError.
func (s *Store) GetRevision(id string, rev int) (*Design, Revision, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	data, r, err := s.revision(id, rev)
	if err != nil {
		return nil, Revision{}, err
	}
	d, err := Decode(data)
	if err != nil {
		return nil, Revision{}, fmt.Errorf("designer: design %q revision %d: corrupt: %w", id, r.Number, err)
	}
	return d, r, nil
}

// revision returns the stored JSON and the Revision of revision rev of
// id (rev <= 0: the latest). s.mu must be held.
func (s *Store) revision(id string, rev int) ([]byte, Revision, error) {
	if s.db == nil {
		return nil, Revision{}, ErrClosed
	}
	m, err := s.meta(id)
	if err != nil {
		return nil, Revision{}, err
	}
	if m == nil {
		return nil, Revision{}, &NotFoundError{ID: id}
	}
	if rev <= 0 {
		rev = m.Latest
	}
	if rev > m.Latest {
		return nil, Revision{}, &NotFoundError{ID: id, Revision: rev}
	}
	rv, err := s.get(revKey("r", id, rev))
	if err != nil {
		return nil, Revision{}, err
	}
	data, err := s.get(revKey("b", id, rev))
	if err != nil {
		return nil, Revision{}, err
	}
	if rv == nil || data == nil {
		return nil, Revision{}, &NotFoundError{ID: id, Revision: rev}
	}
	var r Revision
	if err := json.Unmarshal(rv, &r); err != nil {
		return nil, Revision{}, fmt.Errorf("designer: design %q revision %d: corrupt: %w", id, rev, err)
	}
	return data, r, nil
}

// Revisions returns the revisions of design id, oldest first.
func (s *Store) Revisions(id string) ([]Revision, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, ErrClosed
	}
	if !ValidID(id) {
		return nil, &NotFoundError{ID: id}
	}
	lower, upper := prefixBounds("r/" + id + "/")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("designer: revisions of %q: %w", id, err)
	}
	var revs []Revision
	for it.First(); it.Valid(); it.Next() {
		var r Revision
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			it.Close()
			return nil, fmt.Errorf("designer: design %q: corrupt revision %s: %w", id, it.Key(), err)
		}
		revs = append(revs, r)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("designer: revisions of %q: %w", id, err)
	}
	if len(revs) == 0 {
		return nil, &NotFoundError{ID: id}
	}
	return revs, nil
}

// Save stores d as a new revision of its design (revision 1 of a design
// not stored yet) with an optional message. A design without an id gets
// one from its name (its slug, unique with a suffix; see freshID), which
// becomes its application id braid-<id>, written into d.ID; d.Version is set to
// FormatVersion. Save checks only that d has the JSON form Decode reads,
// not Validate's rules, so drafts with problems can be saved.
func (s *Store) Save(d *Design, message string) (Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.save(d, message)
}

// save is Save with s.mu held.
func (s *Store) save(d *Design, message string) (Revision, error) {
	if s.db == nil {
		return Revision{}, ErrClosed
	}
	if d == nil {
		return Revision{}, errors.New("designer: Save of a nil design")
	}
	if d.ID == "" {
		id, err := s.freshID(d.Name)
		if err != nil {
			return Revision{}, err
		}
		d.ID = id
	} else if !ValidID(d.ID) {
		return Revision{}, fmt.Errorf("designer: invalid design id %q: use 1 to %d letters, digits, '.', '_' and '-'", d.ID, maxIDLength)
	}
	d.Version = FormatVersion
	data, err := Encode(d)
	if err != nil {
		return Revision{}, err
	}
	if _, err := Decode(data); err != nil {
		return Revision{}, fmt.Errorf("designer: design %q cannot be stored: %w", d.ID, err)
	}
	m, err := s.meta(d.ID)
	if err != nil {
		return Revision{}, err
	}
	now := s.now().UTC()
	if m == nil {
		m = &meta{Created: now}
	}
	m.Name = d.Name
	m.Latest++
	m.Updated = now
	r := Revision{Number: m.Latest, Saved: now, Message: message}
	mv, err := json.Marshal(m)
	if err != nil {
		return Revision{}, err
	}
	rv, err := json.Marshal(r)
	if err != nil {
		return Revision{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := errors.Join(
		b.Set(metaKey(d.ID), mv, nil),
		b.Set(revKey("r", d.ID, r.Number), rv, nil),
		b.Set(revKey("b", d.ID, r.Number), data, nil),
	); err != nil {
		return Revision{}, fmt.Errorf("designer: save %q: %w", d.ID, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return Revision{}, fmt.Errorf("designer: save %q: %w", d.ID, err)
	}
	return r, nil
}

// freshID returns an id for a new design named name that no stored or
// deleted design has had: the name's slug (NameSlug), with "-2", "-3",
// ... when that is taken. A deleted design's id is not given again,
// since its application (braid-<id>) may have left a consumer group and
// internal topics on the cluster. s.mu must be held.
func (s *Store) freshID(name string) (string, error) {
	slug := NameSlug(name)
	for n := 1; ; n++ {
		id := slug
		if n > 1 {
			id = fmt.Sprintf("%s-%d", slug, n)
		}
		m, err := s.meta(id)
		if err != nil {
			return "", err
		}
		deleted, err := s.get(deletedKey(id))
		if err != nil {
			return "", err
		}
		if m == nil && deleted == nil {
			return id, nil
		}
	}
}

// Rename saves a new revision of design id that differs from the latest
// only in its name.
func (s *Store) Rename(id, name string) (Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, _, err := s.revision(id, 0)
	if err != nil {
		return Revision{}, err
	}
	d, err := Decode(data)
	if err != nil {
		return Revision{}, fmt.Errorf("designer: design %q: corrupt: %w", id, err)
	}
	old := d.Name
	d.Name = name
	return s.save(d, fmt.Sprintf("renamed from %q to %q", old, name))
}

// Delete removes design id and all its revisions.
func (s *Store) Delete(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return ErrClosed
	}
	m, err := s.meta(id)
	if err != nil {
		return err
	}
	if m == nil {
		return &NotFoundError{ID: id}
	}
	b := s.db.NewBatch()
	defer b.Close()
	errs := []error{b.Delete(metaKey(id), nil), b.Set(deletedKey(id), nil, nil)}
	for _, family := range []string{"r", "b"} {
		lower, upper := prefixBounds(family + "/" + id + "/")
		errs = append(errs, b.DeleteRange(lower, upper, nil))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("designer: delete %q: %w", id, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("designer: delete %q: %w", id, err)
	}
	return nil
}

// Import decodes data (see Decode) and saves it as a new design with
// message "imported". It keeps the design's id unless that is empty,
// invalid or already stored, in which case the design gets a fresh one;
// it never adds a revision to an existing design.
func (s *Store) Import(data []byte) (*Design, Revision, error) {
	d, err := Decode(data)
	if err != nil {
		return nil, Revision{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, Revision{}, ErrClosed
	}
	if !ValidID(d.ID) {
		d.ID = ""
	} else if m, err := s.meta(d.ID); err != nil {
		return nil, Revision{}, err
	} else if m != nil {
		d.ID = ""
	}
	r, err := s.save(d, "imported")
	if err != nil {
		return nil, Revision{}, err
	}
	return d, r, nil
}

// Export returns the JSON form of revision rev of design id (rev 0 or
// less: the latest), as Encode writes it and Decode and Import read it.
func (s *Store) Export(id string, rev int) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	data, _, err := s.revision(id, rev)
	return data, err
}

// pebbleLogger keeps pebble's chatter out of the way: information is
// dropped, errors go to slog, and a fatal error panics rather than ending
// the process.
type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...any) {}

func (pebbleLogger) Errorf(format string, args ...any) {
	slog.Error("designer: pebble: " + fmt.Sprintf(format, args...))
}

func (pebbleLogger) Fatalf(format string, args ...any) {
	panic("designer: pebble: " + fmt.Sprintf(format, args...))
}
