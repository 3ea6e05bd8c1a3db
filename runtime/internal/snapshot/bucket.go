package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:///dir
	_ "gocloud.dev/blob/s3blob"   // s3://bucket?endpoint=...
	"gocloud.dev/gcerrors"
)

// Bucket is a blob store holding snapshots. Its methods are safe for
// concurrent use.
type Bucket struct {
	b   *blob.Bucket
	url string
	// crashAt, set by tests, cuts Put and Prune short at the named
	// point (after "file <n>" is uploaded, "manifest" written, "pruned
	// manifest" deleted) when it returns an error.
	crashAt func(point string) error
}

// reach returns the error crashAt gives point, if any.
func (b *Bucket) reach(point string) error {
	if b.crashAt == nil {
		return nil
	}
	return b.crashAt(point)
}

// Open opens the blob store at url (file:///dir, s3://bucket?...; a
// "prefix" parameter puts every key under it).
func Open(ctx context.Context, url string) (*Bucket, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening snapshot store %s: %w", url, err)
	}
	return &Bucket{b: b, url: url}, nil
}

// Close releases the bucket.
func (b *Bucket) Close() error { return b.b.Close() }

// URL is the url the bucket was opened with.
func (b *Bucket) URL() string { return b.url }

// PutOptions shape an upload.
type PutOptions struct {
	// BytesPerSecond bounds the upload's bandwidth; 0 means unbounded.
	BytesPerSecond int64
	// Now is the time the snapshot is taken at; zero means time.Now().
	Now time.Time
}

// Put uploads the snapshot directory dir (state.Store.Snapshot) as a new
// snapshot described by m, whose Scope, store metadata and changelog
// position the caller fills in; Put sets Version, ID, TakenAt and Files and
// returns the manifest it wrote. The manifest is written last, so a Put cut
// short leaves no snapshot anyone would use.
func (b *Bucket) Put(ctx context.Context, dir string, m Manifest, opts PutOptions) (Manifest, error) {
	if err := m.Scope.Validate(); err != nil {
		return Manifest{}, err
	}
	names, err := snapshotFiles(dir)
	if err != nil {
		return Manifest{}, err
	}
	m.Version, m.TakenAt = manifestVersion, opts.Now
	if m.TakenAt.IsZero() {
		m.TakenAt = time.Now()
	}
	m.TakenAt = m.TakenAt.UTC().Truncate(time.Millisecond)
	m.ID, m.Files = newID(m.ChangelogOffset, m.TakenAt), nil
	pace := newPacer(opts.BytesPerSecond)
	for _, name := range names {
		f, err := b.putFile(ctx, filepath.Join(dir, name), m.key(name), pace)
		if err != nil {
			return Manifest{}, fmt.Errorf("uploading snapshot %s of %s: %w", m.ID, m.Scope, err)
		}
		f.Name = name
		m.Files = append(m.Files, f)
		if err := b.reach(fmt.Sprintf("file %d", len(m.Files))); err != nil {
			return Manifest{}, err
		}
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("encoding manifest of snapshot %s: %w", m.ID, err)
	}
	if err := b.b.WriteAll(ctx, m.key(manifestName), body, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return Manifest{}, fmt.Errorf("writing manifest of snapshot %s of %s: %w", m.ID, m.Scope, err)
	}
	return m, nil
}

// snapshotFiles lists the files of a snapshot directory, which pebble
// writes flat.
func snapshotFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading snapshot directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("snapshot directory %s holds %q, not a regular file", dir, e.Name())
		}
		if e.Name() == manifestName {
			return nil, fmt.Errorf("snapshot directory %s holds a file named %s", dir, manifestName)
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("snapshot directory %s is empty", dir)
	}
	return names, nil
}

// putFile uploads the file at path to key, paced, and returns its size and
// checksum as uploaded.
func (b *Bucket) putFile(ctx context.Context, path, key string, pace *pacer) (File, error) {
	src, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("reading %s: %w", path, err)
	}
	defer src.Close()
	w, err := b.b.NewWriter(ctx, key, nil)
	if err != nil {
		return File{}, fmt.Errorf("writing %s: %w", key, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), pace.reader(ctx, src))
	if err != nil {
		_ = w.Close()
		return File{}, fmt.Errorf("writing %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return File{}, fmt.Errorf("writing %s: %w", key, err)
	}
	return File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// List returns the complete snapshots of scope, newest first, and why any
// other with a manifest cannot be used. A snapshot without a manifest (an
// upload in progress or cut short) is neither.
func (b *Bucket) List(ctx context.Context, scope Scope) ([]Manifest, []*UnusableError, error) {
	ids, err := b.ids(ctx, scope)
	if err != nil {
		return nil, nil, err
	}
	var good []Manifest
	var bad []*UnusableError
	for _, id := range slices.Backward(ids) {
		m, err := b.manifest(ctx, scope, id)
		switch {
		case gcerrors.Code(err) == gcerrors.NotFound:
			continue
		case err != nil && ctx.Err() != nil:
			return nil, nil, err
		case err != nil:
			bad = append(bad, &UnusableError{ID: id, Scope: scope, Reason: "manifest unreadable", Err: err})
		default:
			good = append(good, m)
		}
	}
	return good, bad, nil
}

// ids lists the ids under scope, in order, manifest or not.
func (b *Bucket) ids(ctx context.Context, scope Scope) ([]string, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	it := b.b.List(&blob.ListOptions{Prefix: scope.prefix(), Delimiter: "/"})
	var ids []string
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing snapshots of %s: %w", scope, err)
		}
		if o.IsDir {
			ids = append(ids, strings.TrimSuffix(strings.TrimPrefix(o.Key, scope.prefix()), "/"))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// manifest reads and checks the manifest of snapshot id of scope.
func (b *Bucket) manifest(ctx context.Context, scope Scope, id string) (Manifest, error) {
	body, err := b.b.ReadAll(ctx, scope.prefix()+id+"/"+manifestName)
	if err != nil {
		return Manifest{}, err
	}
	return decodeManifest(body, scope, id)
}

// UnusableError says a snapshot cannot be used, and why: a restore skips
// it and falls back to an older one or the changelog.
type UnusableError struct {
	ID     string
	Scope  Scope
	Reason string // "manifest unreadable", "file missing", "file size differs", "checksum differs"
	File   string // the file at fault, if one is
	Err    error
}

func (e *UnusableError) Error() string {
	msg := fmt.Sprintf("snapshot %s of %s: %s", e.ID, e.Scope, e.Reason)
	if e.File != "" {
		msg += ": " + e.File
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *UnusableError) Unwrap() error { return e.Err }
