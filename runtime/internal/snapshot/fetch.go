package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Fetch downloads snapshot m into dir, which must not exist, and checks
// every file against the manifest. A file that is missing or differs in
// size or checksum is an *UnusableError naming it; dir is then removed, as
// it is on any other error, so that nothing half downloaded is ever opened.
func (b *Bucket) Fetch(ctx context.Context, m Manifest, dir string) (err error) {
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("fetching snapshot %s into %s: the directory exists", m.ID, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fetching snapshot %s: %w", m.ID, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	for _, f := range m.Files {
		if err := b.fetchFile(ctx, m, f, filepath.Join(dir, f.Name)); err != nil {
			return err
		}
	}
	return nil
}

// fetchFile downloads one file of m to path and checks it.
func (b *Bucket) fetchFile(ctx context.Context, m Manifest, f File, path string) error {
	unusable := func(reason string, err error) error {
		return &UnusableError{ID: m.ID, Scope: m.Scope, Reason: reason, File: f.Name, Err: err}
	}
	r, err := b.b.NewReader(ctx, m.key(f.Name), nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return unusable("file missing", nil)
	}
	if err != nil {
		return fmt.Errorf("fetching snapshot %s of %s: reading %s: %w", m.ID, m.Scope, f.Name, err)
	}
	defer r.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("fetching snapshot %s: %w", m.ID, err)
	}
	h := sha256.New()
	// One byte past the manifest's size tells a longer file from one
	// of the right size.
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(r, f.Size+1))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetching snapshot %s of %s: copying %s: %w", m.ID, m.Scope, f.Name, err)
	}
	if n != f.Size {
		return unusable("file size differs", fmt.Errorf("%d bytes or more, manifest says %d", n, f.Size))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return unusable("checksum differs", fmt.Errorf("sha256 %s, manifest says %s", sum, f.SHA256))
	}
	return nil
}

// Prune deletes the snapshots of scope beyond the newest keep, and files
// left by uploads cut short that are older than every snapshot kept. A
// snapshot's manifest goes first, so that one half deleted is never
// listed. It returns the ids it deleted.
func (b *Bucket) Prune(ctx context.Context, scope Scope, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("pruning snapshots of %s: keep %d is negative", scope, keep)
	}
	ids, err := b.ids(ctx, scope)
	if err != nil {
		return nil, err
	}
	complete, _, err := b.List(ctx, scope)
	if err != nil {
		return nil, err
	}
	if len(complete) == 0 {
		return nil, nil // nothing to tell an upload in progress from one cut short
	}
	// Everything older than the oldest kept snapshot goes: the complete
	// ones beyond keep, and what uploads and prunes cut short left, which
	// nothing resumes (an upload in progress is newer than every kept
	// snapshot).
	var oldestKept string
	switch {
	case keep == 0:
		oldestKept = complete[0].ID + "~" // above every id listed
	case keep >= len(complete):
		oldestKept = complete[len(complete)-1].ID
	default:
		oldestKept = complete[keep-1].ID
	}
	var deleted []string
	for _, id := range ids {
		if id >= oldestKept {
			break
		}
		if err := b.deleteSnapshot(ctx, scope, id); err != nil {
			return deleted, err
		}
		deleted = append(deleted, id)
	}
	return deleted, nil
}

// deleteSnapshot deletes snapshot id of scope: its manifest, then its
// files.
func (b *Bucket) deleteSnapshot(ctx context.Context, scope Scope, id string) error {
	prefix := scope.prefix() + id + "/"
	if err := b.b.Delete(ctx, prefix+manifestName); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("deleting snapshot %s of %s: %w", id, scope, err)
	}
	if err := b.reach("pruned manifest"); err != nil {
		return err
	}
	it := b.b.List(&blob.ListOptions{Prefix: prefix})
	var keys []string
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("deleting snapshot %s of %s: listing: %w", id, scope, err)
		}
		keys = append(keys, o.Key)
	}
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if err := b.b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("deleting snapshot %s of %s: %s: %w", id, scope, strings.TrimPrefix(k, prefix), err)
		}
	}
	return nil
}
