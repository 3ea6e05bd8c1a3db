package bench

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestRunSnapshotShort runs the snapshot benchmark small: both restores
// are checked against the changelog inside it, the snapshot restore must
// have used the snapshot and replayed only the tail, and the RESULT line
// must carry every figure.
func TestRunSnapshotShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := RunSnapshot(ctx, SnapshotOptions{Keys: 20_000, Tail: 500, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Changelog <= 0 || rep.Snapshot <= 0 || rep.SnapshotBytes <= 0 {
		t.Fatalf("report %+v lacks a figure", rep)
	}
	m := regexp.MustCompile(`(?m)^RESULT snapshot ratio=([0-9.]+) changelog_ms=\d+ snapshot_ms=\d+ snapshot_mb=[0-9.]+$`).FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatalf("no RESULT line in:\n%s", out.String())
	}
	if r, err := strconv.ParseFloat(string(m[1]), 64); err != nil || r <= 0 {
		t.Fatalf("ratio %q", m[1])
	}
	t.Log(out.String())
}
