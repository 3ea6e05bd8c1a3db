package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestBraidCount runs the count benchmark with Braid's real side: RunCount
// checks every key's last count in Braid's output against the input.
func TestBraidCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := RunCount(ctx, CountOptions{Records: 20_000, Keys: 1_000, Rounds: 1, NoWarmUp: true, Out: &out}, BraidCount)
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Braid.Records != 20_000 || rep.Braid.OutRecords < 1_000 || rep.Braid.OutRecords > 20_000 {
		t.Errorf("braid: %d records, %d output records", rep.Braid.Records, rep.Braid.OutRecords)
	}
	checkPhases(t, rep.Braid)
	if !strings.Contains(out.String(), "RESULT count ratio=") || !strings.Contains(out.String(), " braid_startup_ms=") {
		t.Error("no RESULT line with the phases")
	}
}

// TestBraidRestore runs the restore benchmark with Braid's real side.
func TestBraidRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := RunRestore(ctx, RestoreOptions{Records: 20_000, Keys: 2_000, Rounds: 2, NoWarmUp: true, Out: &out}, BraidRestore)
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Braid.Records != 20_000 || rep.Ratio <= 0 {
		t.Errorf("braid: %+v, ratio %v", rep.Braid, rep.Ratio)
	}
	checkPhases(t, rep.Braid)
	checkPhases(t, rep.Raw)
	if !strings.Contains(out.String(), " braid_startup_ms=") {
		t.Error("no RESULT line with the phases")
	}
}
