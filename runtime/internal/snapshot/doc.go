// Package snapshot owns the copies of task stores kept in a blob store: it
// uploads a store's pebble checkpoint (state.Store.Snapshot) with a manifest,
// lists the snapshots of a store, downloads one and verifies it, and deletes
// those beyond a retention. It knows nothing of tasks or changelogs beyond
// what a manifest records; which snapshot a restore may use is the caller's
// rule (runtime/streams).
//
// The changelog stays the durable copy of every store: a snapshot only lets
// a restore copy files instead of replaying records. So everything here is
// built to fail towards the changelog, never towards wrong state:
//
//   - A snapshot is its files under one prefix and a manifest written last.
//     An upload that dies part way leaves files without a manifest, which no
//     listing returns; a deletion removes the manifest first, so a snapshot
//     half deleted is already invisible.
//   - The manifest records every file's size and SHA-256, the store's
//     identity, key layout and format version, and the changelog offset and
//     stream time its data holds. A download checks every file against it,
//     and a file that differs (truncated, corrupted, missing) makes the
//     whole snapshot unusable, with an error saying which file and how.
//   - Uploads are paced (Options.BytesPerSecond) so that a snapshot never
//     competes with the task's own traffic for the network.
//
// Blob stores are reached through gocloud.dev/blob: file:///dir for a local
// or mounted directory, s3://bucket?endpoint=...&use_path_style=true for any
// S3-compatible store. The bucket's layout is
//
//	<prefix>/<application>/<task>/<store>/<id>/<file>
//	<prefix>/<application>/<task>/<store>/<id>/MANIFEST.json
//
// where id orders the snapshots of one store by changelog offset, then by
// the time they were taken.
package snapshot
