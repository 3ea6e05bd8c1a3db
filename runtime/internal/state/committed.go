package state

import (
	"bytes"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// The committed reads serve interactive queries, which come from other
// goroutines than the task's: they read the database, never the pending
// batch (an indexed batch is not safe for concurrent use), so they see what
// the last Commit or Restore applied.

// GetCommitted returns the committed value of key. It is safe to call
// from any goroutine while the Store is open.
func (s *Store) GetCommitted(key []byte) (value []byte, ok bool, err error) {
	if err := s.lockDB(); err != nil {
		return nil, false, err
	}
	defer s.dbMu.RUnlock()
	v, closer, err := s.db.Get(append([]byte{userPrefix}, key...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.readError("get", err)
	}
	defer closer.Close()
	return append([]byte{}, v...), true, nil
}

// RangeCommitted calls fn for each committed key in [start, end), like
// Range but without pending writes. It is safe to call from any goroutine
// while the Store is open. fn must not call GetCommitted, RangeCommitted or
// ApproxSize: the scan holds a read lock that Close waits for, and a second
// read lock taken while Close waits would deadlock.
func (s *Store) RangeCommitted(start, end []byte, fn func(key, value []byte) bool) (err error) {
	if err := s.lockDB(); err != nil {
		return err
	}
	defer s.dbMu.RUnlock()
	upper := []byte{userEnd}
	if end != nil {
		if start != nil && bytes.Compare(start, end) >= 0 {
			return nil
		}
		upper = append([]byte{userPrefix}, end...)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: append([]byte{userPrefix}, start...), UpperBound: upper})
	if err != nil {
		return s.readError("scan", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = s.readError("scan", cerr)
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return s.readError("scan", verr)
		}
		if !fn(it.Key()[1:], v) {
			return nil
		}
	}
	return it.Error()
}
