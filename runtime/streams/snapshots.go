package streams

import (
	"fmt"
	"net/url"
	"time"
)

// Snapshots of stores in a blob store are opt-in, and the changelog stays
// the durable copy of every store: a snapshot only lets a store with no
// usable local state (a new instance, a wiped disk) copy files instead of
// replaying its whole changelog, and then replay the changelog past the
// snapshot. Each task is fault tolerant on its own, so a snapshot needs no
// distributed algorithm: a pebble checkpoint of one store carries the
// changelog offset and stream time of the data it holds, consistent by
// construction (state.Store.Snapshot). A snapshot that cannot be trusted
// (corrupt, missing a file, of another store or layout, older than the
// changelog's log start, ahead of its end) is skipped and said why: it can
// make a restore faster, never wrong. Kafka Streams has no such thing.
//
// snapshot_take.go takes them after commits, in a goroutine of the App's;
// snapshot_restore.go uses them when a task's restore begins.

// SnapshotConfig turns on snapshots of the App's logged stores in a blob
// store. The zero value (no URL) leaves them off.
type SnapshotConfig struct {
	// URL is the blob store: file:///dir for a directory (local or
	// mounted), s3://bucket?endpoint=http://host:port&use_path_style=true
	// for any S3-compatible store (credentials from the usual AWS
	// variables, or anonymous=true), with an optional prefix=dir/.
	URL string
	// Interval: a store is snapshotted at its first commit at least
	// Interval after its last snapshot (or, for its first, after the
	// store opened). Default 10 minutes.
	Interval time.Duration
	// Records: or at its first commit once its changelog grew by Records
	// since its last snapshot; a store never snapshotted by this App
	// counts from offset 0. Default 1,000,000; -1 leaves only Interval.
	Records int64
	// Keep is how many snapshots of each store the blob store keeps; an
	// upload deletes older ones. Default 3.
	Keep int
	// BytesPerSecond bounds each upload's bandwidth, so that snapshots
	// never crowd out the App's Kafka traffic. Default 64 MiB/s; -1 is
	// unbounded.
	BytesPerSecond int64
}

// enabled reports whether snapshots are on.
func (s SnapshotConfig) enabled() bool { return s.URL != "" }

// withDefaults fills in the unset fields of an enabled configuration.
func (s SnapshotConfig) withDefaults() SnapshotConfig {
	if !s.enabled() {
		return s
	}
	if s.Interval == 0 {
		s.Interval = 10 * time.Minute
	}
	if s.Records == 0 {
		s.Records = 1_000_000
	}
	if s.Keep == 0 {
		s.Keep = 3
	}
	if s.BytesPerSecond == 0 {
		s.BytesPerSecond = 64 << 20
	}
	return s
}

// problems lists every problem of an enabled configuration, each naming
// its field.
func (s SnapshotConfig) problems() []error {
	if !s.enabled() {
		return nil
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config Snapshots.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if err := CheckSnapshotURL(s.URL); err != nil {
		bad("URL", "%v", err)
	}
	if s.Interval < 0 {
		bad("Interval", "%v is negative", s.Interval)
	}
	if s.Records < -1 {
		bad("Records", "%d is negative; -1 snapshots by Interval only", s.Records)
	}
	if s.Keep < 0 {
		bad("Keep", "%d is negative", s.Keep)
	}
	if s.BytesPerSecond < -1 {
		bad("BytesPerSecond", "%d is negative; -1 is unbounded", s.BytesPerSecond)
	}
	return errs
}

// flagProblems is problems for --snapshots, --snapshot-interval and
// --snapshot-records, each named by its flag. The last two stand without
// the first: a `braid run --deployment` process may get its blob store
// from the deployment.
func (s SnapshotConfig) flagProblems() []error {
	var errs []error
	if s.enabled() {
		if err := CheckSnapshotURL(s.URL); err != nil {
			errs = append(errs, fmt.Errorf("--snapshots %v", err))
		}
	}
	if s.Interval < 0 {
		errs = append(errs, fmt.Errorf("--snapshot-interval %v is negative", s.Interval))
	}
	if s.Records < -1 {
		errs = append(errs, fmt.Errorf("--snapshot-records %d is negative; -1 snapshots by --snapshot-interval only", s.Records))
	}
	return errs
}

// CheckSnapshotURL reports a blob store URL (SnapshotConfig.URL) the App
// cannot open, as NewSupervisor would: a form can say so before it
// deploys.
func CheckSnapshotURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %v", raw, err)
	case u.Scheme != "file" && u.Scheme != "s3":
		return fmt.Errorf("%q: scheme %q is not file or s3", raw, u.Scheme)
	case u.Scheme == "file" && u.Path == "":
		return fmt.Errorf("%q: a file URL needs an absolute path, as file:///dir", raw)
	case u.Scheme == "s3" && u.Host == "":
		return fmt.Errorf("%q: an s3 URL names its bucket, as s3://bucket", raw)
	}
	return nil
}

// SnapshotHook is called, from the App's snapshot goroutine, for every
// snapshot of a store the App took, uploaded or failed to.
type SnapshotHook interface {
	OnSnapshotTaken(SnapshotEvent)
}

// SnapshotEvent describes one snapshot of a store.
type SnapshotEvent struct {
	ApplicationID string
	InstanceID    string
	Task          TaskID
	Store         string
	// ID names the snapshot in the blob store; ChangelogOffset and
	// StreamTime are those of the data it holds.
	ID              string
	ChangelogOffset int64
	StreamTime      int64
	// Bytes and Files are what was uploaded; Took is from the start of
	// the checkpoint to the end of the upload; Pruned lists the older
	// snapshots the upload deleted.
	Bytes  int64
	Files  int
	Took   time.Duration
	Pruned []string
	// Err is why the snapshot failed; the App carries on without it.
	Err error
}

// SnapshotRestore says a restore began from a snapshot, in RestoreEvent.
type SnapshotRestore struct {
	ID string
	// TakenAt is when the snapshot was taken; Offset the changelog offset
	// its data reaches, from which the changelog is replayed.
	TakenAt time.Time
	Offset  int64
	// Bytes and Files were downloaded, verified and loaded in Took.
	Bytes int64
	Files int
	Took  time.Duration
}

// SnapshotSkip says why a restore did not use a snapshot, in
// RestoreEvent.
type SnapshotSkip struct {
	ID     string
	Reason string
}
