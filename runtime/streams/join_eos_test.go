package streams_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/broker/brokertest"
	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The exactly-once join: an outer join of "jl" and "jr" (2 partitions
// each) within 1 s either side and an hour of grace, so that no record is
// late and no unmatched record is due before the closing record: which
// results exist does not depend on how the task interleaves the inputs.
const (
	joinEOSApp  = "eosjoin"
	joinEOSStep = 100 // ms of event time between records
)

var joinEOSWindows = streams.JoinWindows{Before: time.Second, After: time.Second, Grace: time.Hour}

func joinEOSTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	b.Stream([]string{"jl"}).OuterJoin(b.Stream([]string{"jr"}), concat, joinEOSWindows).To("joined")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// joinEOSInput is what the test produced: left record i has key k<i%10>,
// value l<i> and time t0+i*100; right records exist for even i only, at
// t0+i*100+50, so that odd left records never meet a partner.
type joinEOSInput struct {
	next        int
	left, right []joinEOSRecord
}

type joinEOSRecord struct {
	key, value string
	ts         int64
}

func (in *joinEOSInput) produce(t *testing.T, b *brokertest.Cluster, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := in.next; i < in.next+n; i++ {
		l := joinEOSRecord{fmt.Sprintf("k%d", i%10), fmt.Sprintf("l%d", i), t0 + int64(i)*joinEOSStep}
		in.left = append(in.left, l)
		recs = append(recs, &kgo.Record{Topic: "jl", Key: []byte(l.key), Value: []byte(l.value), Timestamp: time.UnixMilli(l.ts)})
		if i%2 == 0 {
			r := joinEOSRecord{l.key, fmt.Sprintf("r%d", i), l.ts + 50}
			in.right = append(in.right, r)
			recs = append(recs, &kgo.Record{Topic: "jr", Key: []byte(r.key), Value: []byte(r.value), Timestamp: time.UnixMilli(r.ts)})
		}
	}
	in.next += n
	produce(t, b, recs...)
}

// want is the outer join of everything produced, worked out pair by pair:
// every pair within the windows, and every record without one joined with
// "-" (all of them are due once the closing record has been processed).
func (in *joinEOSInput) want() []string {
	var out []string
	rightMet := make([]bool, len(in.right))
	for _, l := range in.left {
		met := false
		for j, r := range in.right {
			if r.key == l.key && r.ts >= l.ts-joinEOSWindows.Before.Milliseconds() && r.ts <= l.ts+joinEOSWindows.After.Milliseconds() {
				out = append(out, fmt.Sprintf("%s=%s+%s", l.key, l.value, r.value))
				met, rightMet[j] = true, true
			}
		}
		if !met {
			out = append(out, fmt.Sprintf("%s=%s+-", l.key, l.value))
		}
	}
	for j, r := range in.right {
		if !rightMet[j] {
			out = append(out, fmt.Sprintf("%s=-+%s", r.key, r.value))
		}
	}
	slices.Sort(out)
	return out
}

func joinEOSConfig(b *brokertest.Cluster, dir string) streams.Config {
	cfg := eosConfig(b, dir)
	cfg.ApplicationID = joinEOSApp
	cfg.DefaultKeySerde, cfg.DefaultValueSerde = streams.String, streams.String
	return cfg
}

func joinProcessedAll(t *testing.T, b *brokertest.Cluster) {
	t.Helper()
	waitFor(t, 60*time.Second, "every join input committed", func() bool {
		for _, topic := range []string{"jl", "jr"} {
			got := committedOffsets(t, b, joinEOSApp, topic)
			for p, end := range endOffsets(t, b, topic) {
				if got[p] < end {
					return false
				}
			}
		}
		return true
	})
}

// TestExactlyOnceJoinAcrossCrashes crashes an instance running a
// stream-stream outer join at each crash point of a commit, in the middle
// of open join windows (records buffered, partners still to come,
// unmatched records waiting for their windows to close), and restarts it
// on the same state dir: read committed, the output holds every join
// result and every outer result exactly once.
func TestExactlyOnceJoinAcrossCrashes(t *testing.T) {
	skipShort(t, "crashes an instance at every commit point")
	for _, point := range []string{streams.CrashBeforeCommit, streams.CrashAfterCommit, streams.CrashDuringApply} {
		t.Run(point, func(t *testing.T) {
			b := startBroker(t)
			for _, topic := range []string{"jl", "jr", "joined"} {
				createTopic(t, b, topic, 2)
			}
			dir := t.TempDir()
			in := &joinEOSInput{}
			in.produce(t, b, 300)

			first, err := streams.New(joinEOSTopology(t), joinEOSConfig(b, dir))
			if err != nil {
				t.Fatal(err)
			}
			arm, done := runArmedToCrash(first, point)
			joinProcessedAll(t, b)
			arm()
			in.produce(t, b, 300)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("no crash within 60 s")
			}

			second, err := streams.New(joinEOSTopology(t), joinEOSConfig(b, dir))
			if err != nil {
				t.Fatal(err)
			}
			stop := runApp(t, second)
			in.produce(t, b, 300)
			want := in.want()
			// Records three hours later, one per key so that every
			// partition has one, close every window before them; their
			// own stay open and emit nothing.
			var closing []*kgo.Record
			for k := range 10 {
				closing = append(closing, &kgo.Record{Topic: "jl", Key: []byte(fmt.Sprintf("k%d", k)), Value: []byte("x"), Timestamp: time.UnixMilli(t0 + 3*3600_000)})
			}
			produce(t, b, closing...)
			joinProcessedAll(t, b)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range readCommitted(t, b, "joined") {
				got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				missing, extra := diffSorted(want, got)
				t.Errorf("%d results, want %d: missing %q, not expected or repeated %q", len(got), len(want), missing, extra)
			}
		})
	}
}

// diffSorted returns what is in want but not got and what is in got but
// not want, counting repeats; both are sorted.
func diffSorted(want, got []string) (missing, extra []string) {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	return missing, extra
}
