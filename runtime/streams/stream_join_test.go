package streams_test

import (
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
)

// TestStreamStreamJoin checks the three stream-stream joins record by
// record, with join windows of 10ms either side and 5ms grace: a left
// record at ts joins right records in [ts-10, ts+10]; a record is late
// once stream time passes ts+10+5; an unmatched record of an outer side
// is emitted with nil when stream time passes ts+10+5, not earlier.
func TestStreamStreamJoin(t *testing.T) {
	inputs := []joinStep{
		{topic: "l", key: "A", value: "a1", ts: 100},
		{topic: "r", key: "A", value: "b1", ts: 105}, // meets a1
		{topic: "l", key: "A", value: "a2", ts: 112}, // meets b1
		// Out of order within grace: stream time 112 has not passed
		// 98+15; meets a1 (a2 at 112 is more than 10 after it).
		{topic: "r", key: "A", value: "b2", ts: 98},
		// Late: stream time 112 is past 90+15; dropped.
		{topic: "r", key: "A", value: "b3", ts: 90},
		{topic: "l", key: "B", value: "c1", ts: 113}, // alone; closes after 128
		{topic: "r", key: "Z", value: "z1", ts: 128}, // stream time 128: c1 not due yet
		{topic: "r", key: "B", value: "d1", ts: 130}, // 130 > 128: c1 due; d1 alone (c1 is 17 before)
		{topic: "l", key: "X", value: "x1", ts: 150}, // 150 > 143 and 145: z1 and d1 due
	}
	for _, tc := range []struct {
		name string
		join func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream
		want [][]string
	}{
		{"inner", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.Join(r, concat, w) }, [][]string{
			nil, out("A=a1+b1@105"), out("A=a2+b1@112"), out("A=a1+b2@100"), nil,
			nil, nil, nil, nil,
		}},
		{"left", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.LeftJoin(r, concat, w) }, [][]string{
			nil, out("A=a1+b1@105"), out("A=a2+b1@112"), out("A=a1+b2@100"), nil,
			nil, nil, out("B=c1+-@113"), nil,
		}},
		{"outer", func(l, r *streams.Stream, w streams.JoinWindows) *streams.Stream { return l.OuterJoin(r, concat, w) }, [][]string{
			nil, out("A=a1+b1@105"), out("A=a2+b1@112"), out("A=a1+b2@100"), nil,
			nil, nil, out("B=c1+-@113"), out("Z=-+z1@128", "B=-+d1@130"),
		}},
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
			if late != 1 {
				t.Errorf("%d late records counted, want 1 (b3)", late)
			}
		})
	}
}
