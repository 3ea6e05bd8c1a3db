package streams

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// joinBufferRows renders a join buffer's index as "key@ts#seq=value",
// sorted; committedOnly leaves out the records numbered after its last
// commit.
func joinBufferRows(st *taskStore, committedOnly bool) []string {
	w := st.win
	var out []string
	for _, k := range w.index {
		for _, r := range w.records(k).recs {
			if committedOnly && w.mem != nil && uncommitted(r.kb, w.mem.committed.seq, w.seq) {
				continue
			}
			out = append(out, bufferRow(r.kb, fmt.Sprint(r.value)))
		}
	}
	slices.Sort(out)
	return out
}

func bufferRow(kb []byte, value string) string {
	n := len(kb) - 12
	return fmt.Sprintf("%s@%d#%d=%s", kb[:n], binary.BigEndian.Uint64(kb[n:]), binary.BigEndian.Uint32(kb[n+8:]), value)
}

// replayedRows is what a restart from pebble would rebuild of a join
// buffer: pebble's rows, then its changelog from pebble's checkpoint on,
// less the records before the segments the index expired.
func replayedRows(t *testing.T, d *TestDriver, st *taskStore) []string {
	t.Helper()
	w := st.win
	rows := make(map[string]bool)
	keep := func(kb []byte, value string) {
		if w.segmentTime(kb) >= w.expiredBelow*w.interval {
			rows[bufferRow(kb, value)] = true
		}
	}
	if err := st.db.Range(nil, nil, func(sk, vb []byte) bool {
		keep(w.changelogKey(nil, sk), string(vb))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Output(st.changelog) {
		if r.Offset >= st.db.Checkpoint().ChangelogOffset && len(r.Key) > 0 {
			keep(r.Key, string(r.Value))
		}
	}
	return slices.Sorted(maps.Keys(rows))
}

// TestJoinBufferInMemory checks a join buffer in memory against what
// pebble and the changelog would give a restart: records of 20 keys over
// 10 minutes of event time, with 30 s windows, so that segments (of a
// minute) expire and commits move pebble's checkpoint forward, emptying
// it. Whatever the commit, pebble's rows and the changelog from its
// checkpoint rebuild the index; an abort returns the index to the last
// commit; and a close writes a snapshot that the next start loads.
func TestJoinBufferInMemory(t *testing.T) {
	b := NewBuilder()
	left := b.Stream([]string{"l"}, WithSerdes(String, String))
	right := b.Stream([]string{"r"}, WithSerdes(String, String))
	left.Join(right, func(_, l, r any) (any, error) { return l, nil }, JoinTimeDifference(30*time.Second, 0),
		Materialized(StoreOptions{Name: "j"})).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	stores := []string{"j-this-join-store", "j-other-join-store"}
	dir := t.TempDir()
	d, err := NewTestDriver(topo, DriverConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			topic := "l"
			if i%3 == 0 {
				topic = "r"
			}
			if err := d.Pipe(topic, []byte(fmt.Sprintf("k%d", i%20)), []byte(fmt.Sprint(i)), int64(i)*1000); err != nil {
				t.Fatal(err)
			}
		}
	}
	moved := 0
	for i := 0; i < 600; i += 50 {
		pipe(i, i+50)
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		for _, name := range stores {
			st := d.tasks()[0].stores[name]
			if st.win.mem == nil {
				t.Fatalf("store %s is not in memory", name)
			}
			if st.db.Checkpoint().ChangelogOffset > 0 {
				moved++
			}
			if got, want := joinBufferRows(st, false), replayedRows(t, d, st); !slices.Equal(got, want) {
				t.Fatalf("after record %d, store %s: index %v\nrestart would rebuild %v", i+50, name, got, want)
			}
		}
	}
	if moved == 0 {
		t.Error("no commit moved pebble's checkpoint forward: a crash would replay the whole changelog")
	}
	// The state held, as stats and the assignor see it, is the last
	// commit's: the changelog's end, not pebble's checkpoint.
	for _, ts := range d.Stats().Tasks {
		for _, ss := range ts.Stores {
			if end := int64(len(d.Output(ss.Changelog))); ss.CheckpointOffset != end {
				t.Errorf("store %s: stats say its state covers offset %d, want the changelog's end %d", ss.Name, ss.CheckpointOffset, end)
			}
		}
	}

	// An abort (as exactly-once's) returns the index to the last commit.
	committed := make(map[string][]string)
	for _, name := range stores {
		committed[name] = joinBufferRows(d.tasks()[0].stores[name], false)
	}
	pipe(600, 640)
	for _, name := range stores {
		st := d.tasks()[0].stores[name]
		if slices.Equal(joinBufferRows(st, false), committed[name]) {
			t.Fatalf("store %s: 40 more records changed nothing", name)
		}
		if got := joinBufferRows(st, true); !slices.Equal(got, committed[name]) {
			t.Fatalf("store %s: the committed records changed: %v, want %v", name, got, committed[name])
		}
		st.rollBack()
		if got := joinBufferRows(st, false); !slices.Equal(got, committed[name]) {
			t.Errorf("store %s after an abort: %v, want %v", name, got, committed[name])
		}
	}

	// A close writes the committed buffer; the next start loads it.
	pipe(600, 620)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	pipe(620, 630) // not committed: not in the snapshot
	for _, name := range stores {
		committed[name] = joinBufferRows(d.tasks()[0].stores[name], true)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = NewTestDriver(topo, DriverConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range stores {
		st := d.tasks()[0].stores[name]
		if got := joinBufferRows(st, false); !slices.Equal(got, committed[name]) {
			t.Errorf("store %s after a restart: %v\nwant %v", name, got, committed[name])
		}
	}
}
