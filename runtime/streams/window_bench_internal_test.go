package streams

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkWindowedCountInTask runs the shape of `braid bench windowed`
// (a tumbling 10 s count emitting on close against a plain count, over
// the same records) in one task of a TestDriver: records are pushed to
// the task's queue a thousand at a time and processed as a running App
// processes a fetch, with no broker and no fetching, so that a change to
// the windowed path shows apart from the host's noise. The records hold
// 2,500 keys, ten records per key per window, as each of the bench's four
// tasks sees them; a commit every 100,000 records flushes the caches as
// the bench's commits do. Compare windowed's ns/op with count's.
func BenchmarkWindowedCountInTask(b *testing.B) {
	const keys, perSecond, batch, commitEvery = 2_500, 2_500, 1_000, 100_000
	for _, windowed := range []bool{false, true} {
		name := "count"
		if windowed {
			name = "windowed"
		}
		b.Run(name, func(b *testing.B) {
			sb := NewBuilder()
			g := sb.Stream([]string{"in"}, WithSerdes(Bytes, Bytes)).GroupByKey()
			store := Materialized(StoreOptions{Name: "counts"})
			if windowed {
				g.WindowedBy(Tumbling(10*time.Second, 5*time.Second)).Emit(EmitOnWindowClose).Count(store).ToStream().To("out")
			} else {
				g.Count(store).ToStream().To("out")
			}
			topo, err := sb.Build()
			if err != nil {
				b.Fatal(err)
			}
			d, err := NewTestDriver(topo, DriverConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			tp := TopicPartition{"in", 0}
			q, task := d.app.byTP[tp], d.app.taskOf[tp]
			kbs := make([][]byte, keys)
			for i := range kbs {
				kbs[i] = fmt.Appendf(nil, "key-%05d", (i*7919)%keys)
			}
			recs := make([]kgo.Record, batch)
			ptrs := make([]*kgo.Record, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n += batch {
				for j := range recs {
					i := n + j
					recs[j] = kgo.Record{Topic: "in", Key: kbs[i%keys], Value: []byte("v"), Offset: int64(i),
						Timestamp: time.UnixMilli(int64(i) * 1000 / perSecond)}
					ptrs[j] = &recs[j]
				}
				q.push(ptrs)
				if err := task.processAvailable(); err != nil {
					b.Fatal(err)
				}
				if (n+batch)%commitEvery == 0 {
					if err := d.Commit(); err != nil {
						b.Fatal(err)
					}
					clear(d.written)
				}
			}
		})
	}
}
