package streams_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestStreamStreamJoin checks the three stream-stream joins record by
// record, with join windows of 10ms either side and 5ms grace: a left
// record at ts joins right records in [ts-10, ts+10]; each side buffers
// its records for 25ms after its latest one, and a record out of order
// joins what the other side still buffers (partners oldest first); one
// older than its own buffer's 25ms is not buffered and counted late, but
// still joins; an unmatched record of an outer side is emitted with nil
// when stream time passes ts+10+5, not earlier, or at once if that time
// has passed when it comes.
func TestStreamStreamJoin(t *testing.T) {
	inputs := []joinStep{
		{topic: "l", key: "A", value: "a1", ts: 100},
		{topic: "r", key: "A", value: "b1", ts: 105}, // meets a1
		{topic: "l", key: "A", value: "a2", ts: 112}, // meets b1
		// Out of order: meets a1 (a2 at 112 is more than 10 after it).
		{topic: "r", key: "A", value: "b2", ts: 98},
		// Out of order: meets b2 and b1, oldest first.
		{topic: "l", key: "A", value: "a3", ts: 95},
		// Buffered (the right side's latest is 105), meets nobody (the
		// left buffer holds 88 on), and its window has closed: an outer
		// join emits it at once.
		{topic: "r", key: "A", value: "b3", ts: 82},
		// Older than the left buffer holds (112-25): late, not buffered,
		// but meets b3.
		{topic: "l", key: "A", value: "a4", ts: 86},
		// Late, meets nobody.
		{topic: "r", key: "A", value: "b4", ts: 70},
		{topic: "l", key: "B", value: "c1", ts: 113}, // alone; closes after 128
		{topic: "r", key: "Z", value: "z1", ts: 128}, // stream time 128: c1 not due yet
		{topic: "r", key: "B", value: "d1", ts: 130}, // 130 > 128: c1 due; d1 alone (c1 is 17 before)
		{topic: "l", key: "X", value: "x1", ts: 150}, // 150 > 143 and 145: z1 and d1 due
	}
	joined := [][]string{
		nil, out("A=a1+b1@105"), out("A=a2+b1@112"), out("A=a1+b2@100"),
		out("A=a3+b2@98", "A=a3+b1@105"), nil, out("A=a4+b3@86"), nil,
	}
	for _, tc := range []struct {
		name string
		join func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream
		want [][]string
	}{
		{"inner", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.Join(r, concat, w) },
			append(slices.Clone(joined), nil, nil, nil, nil)},
		{"left", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.LeftJoin(r, concat, w) },
			append(slices.Clone(joined), nil, nil, out("B=c1+-@113"), nil)},
		{"outer", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.OuterJoin(r, concat, w) },
			append(slices.Clone(joined[:5]), out("A=-+b3@82"), joined[6], out("A=-+b4@70"),
				nil, nil, out("B=c1+-@113"), out("Z=-+z1@128", "B=-+d1@130"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(b *streams.Builder) {
				w := streams.JoinTimeDifference(10*time.Millisecond, 5*time.Millisecond)
				tc.join(b.Stream([]string{"l"}), b.Stream([]string{"r"}), w).To("out")
			}
			steps := slices.Clone(inputs)
			for i := range steps {
				steps[i].want = tc.want[i]
			}
			d := runJoinSteps(t, build, steps)
			var late int64
			for _, task := range d.Stats().Tasks {
				for _, st := range task.Stores {
					late += st.LateDrops
				}
			}
			if late != 2 {
				t.Errorf("%d late records counted, want 2 (a4, b4)", late)
			}
		})
	}
}

// TestStreamStreamJoinBufferTimesSurviveRestart checks that each join
// buffer holds its records behind its own side's latest timestamp, also
// after a restart rebuilt the buffers from pebble: the right side's latest
// record (at 200) is still found by a left record out of order (at 195)
// although the task's stream time (300) is past it by more than the
// retention (25ms), and that left record, older than its own buffer holds,
// is counted late.
func TestStreamStreamJoinBufferTimesSurviveRestart(t *testing.T) {
	b := streams.NewBuilder()
	w := streams.JoinTimeDifference(10*time.Millisecond, 5*time.Millisecond)
	b.Stream([]string{"l"}).Join(b.Stream([]string{"r"}), concat, w).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := streams.DriverConfig{StateDir: t.TempDir(), DefaultKeySerde: streams.String, DefaultValueSerde: streams.String}
	open := func() *streams.TestDriver {
		t.Helper()
		d, err := streams.NewTestDriver(topo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pipe := func(d *streams.TestDriver, topic, key, value string, ts int64) {
		t.Helper()
		if err := d.Pipe(topic, []byte(key), []byte(value), ts); err != nil {
			t.Fatal(err)
		}
	}
	d := open()
	pipe(d, "l", "A", "a1", 100)
	pipe(d, "r", "A", "b1", 200)
	pipe(d, "l", "Z", "z1", 300)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = open()
	defer d.Close()
	pipe(d, "l", "A", "a2", 195)
	var got []string
	for _, r := range d.ReadOutput("out") {
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	if want := []string{"A=a2+b1@200"}; !slices.Equal(got, want) {
		t.Errorf("after the restart: emitted %q, want %q", got, want)
	}
	var late int64
	for _, task := range d.Stats().Tasks {
		for _, st := range task.Stores {
			late += st.LateDrops
		}
	}
	if late != 1 {
		t.Errorf("%d late records counted, want 1 (a2)", late)
	}
}

// TestStreamStreamJoinHoldsOutOfOrderWithinGrace checks where Braid
// differs from Kafka Streams: a left record out of order whose window
// (ts+After) has passed but not its grace waits for a partner like any
// other, so that a partner within grace joins it and no "+nil" result
// comes first. Kafka Streams emits it with nil at once, and then the join
// too.
func TestStreamStreamJoinHoldsOutOfOrderWithinGrace(t *testing.T) {
	build := func(b *streams.Builder) {
		w := streams.JoinTimeDifference(10*time.Millisecond, 20*time.Millisecond)
		b.Stream([]string{"l"}).LeftJoin(b.Stream([]string{"r"}), concat, w).To("out")
	}
	runJoinSteps(t, build, []joinStep{
		{topic: "l", key: "X", value: "x1", ts: 150},
		// 125+10 is past, 125+10+20 is not: held.
		{topic: "l", key: "A", value: "a1", ts: 125},
		{topic: "r", key: "A", value: "b1", ts: 130, want: out("A=a1+b1@130")},
		// 200 is past 150+10+20: x1 is due; a1 met b1.
		{topic: "l", key: "Y", value: "y1", ts: 200, want: out("X=x1+-@150")},
	})
}

// TestStreamStreamJoinBufferExpiresByItsSideTime checks that a join
// buffer expires by its own side's latest record, as Kafka Streams'
// buffers do: when the left side runs minutes ahead of a silent right
// side, the right buffer keeps its records (their segment would have
// expired by the task's stream time), so that a left record out of order
// by as much still joins them, before and after a restart.
func TestStreamStreamJoinBufferExpiresByItsSideTime(t *testing.T) {
	b := streams.NewBuilder()
	w := streams.JoinTimeDifference(10*time.Millisecond, 0)
	b.Stream([]string{"l"}).Join(b.Stream([]string{"r"}), concat, w).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cfg := streams.DriverConfig{StateDir: t.TempDir(), DefaultKeySerde: streams.String, DefaultValueSerde: streams.String}
	check := func(d *streams.TestDriver, value string, want string) {
		t.Helper()
		if err := d.Pipe("l", []byte("A"), []byte(value), 995); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range d.ReadOutput("out") {
			got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("emitted %q, want %q", got, want)
		}
	}
	d, err := streams.NewTestDriver(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("r", []byte("A"), []byte("b1"), 1000); err != nil {
		t.Fatal(err)
	}
	// Four minutes on: segments are a minute long.
	for i := range int64(5) {
		if err := d.Pipe("l", []byte("Z"), []byte("z"), 1000+i*60_000); err != nil {
			t.Fatal(err)
		}
	}
	check(d, "a1", "A=a1+b1@1000")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = streams.NewTestDriver(topo, cfg); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check(d, "a2", "A=a2+b1@1000")
}

// TestStreamStreamJoinNullKeys checks records without a key: they meet
// nobody, so that an outer side emits them with nil at once (as Kafka
// Streams does since 3.7) and an inner side drops them.
func TestStreamStreamJoinNullKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		join func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream
		want []string
	}{
		{"inner", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.Join(r, concat, w) }, nil},
		{"left", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.LeftJoin(r, concat, w) },
			[]string{"<nil>=l1+-@100"}},
		{"outer", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.OuterJoin(r, concat, w) },
			[]string{"<nil>=l1+-@100", "<nil>=-+r1@100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := streams.NewBuilder()
			w := streams.JoinTimeDifference(10*time.Millisecond, 0)
			tc.join(b.Stream([]string{"l"}), b.Stream([]string{"r"}), w).To("out")
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			d, err := streams.NewTestDriver(topo, streams.DriverConfig{DefaultKeySerde: streams.String, DefaultValueSerde: streams.String})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for _, topic := range []string{"l", "r"} {
				if err := d.Pipe(topic, nil, []byte(topic+"1"), 100); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, r := range d.ReadOutput("out") {
				key := "<nil>"
				if r.Key != nil {
					key = string(r.Key)
				}
				got = append(got, fmt.Sprintf("%s=%s@%d", key, r.Value, r.Timestamp))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("emitted %q, want %q", got, tc.want)
			}
		})
	}
}
