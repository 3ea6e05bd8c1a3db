package datagen

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sampleWait bounds how long Sample reads: a partition whose last
// offsets are transaction markers delivers no record at its end.
const sampleWait = 2 * time.Second

// Sample reads the latest records of topic, up to perPartition of each
// partition, with a client of its own made with cl's options (its
// cluster, TLS and SASL); they come oldest first by timestamp, then
// partition and offset. An empty topic gives none.
func Sample(ctx context.Context, cl *kgo.Client, topic string, perPartition int) ([]SampledRecord, error) {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("sampling topic %q: reading its end offsets: %w", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("sampling topic %q: reading its start offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	want := map[int32]int64{} // the last offset to read
	ends.Each(func(o kadm.ListedOffset) {
		start := int64(0)
		if s, ok := starts.Lookup(topic, o.Partition); ok {
			start = s.Offset
		}
		if o.Offset <= start {
			return
		}
		from[o.Partition] = kgo.NewOffset().At(max(start, o.Offset-int64(perPartition)))
		want[o.Partition] = o.Offset - 1
	})
	if len(from) == 0 {
		return []SampledRecord{}, nil
	}
	reader, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))...)
	if err != nil {
		return nil, fmt.Errorf("sampling topic %q: making its reader: %w", topic, err)
	}
	defer reader.Close()
	ctx, cancel := context.WithTimeout(ctx, sampleWait)
	defer cancel()
	out := []SampledRecord{}
	for len(want) > 0 && ctx.Err() == nil {
		fs := reader.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if last, ok := want[r.Partition]; !ok || r.Offset > last {
				return
			}
			out = append(out, sampled(r))
			if r.Offset >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	slices.SortFunc(out, func(a, b SampledRecord) int {
		return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out, nil
}

func sampled(r *kgo.Record) SampledRecord {
	s := SampledRecord{Key: string(r.Key), Value: string(r.Value), Headers: make([]Header, len(r.Headers)),
		Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	for i, h := range r.Headers {
		s.Headers[i] = Header{Key: h.Key, Value: string(h.Value)}
	}
	return s
}
