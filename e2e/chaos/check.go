package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var outputTopics = []string{MappedTopic, CountsTopic, WindowsTopic}

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

// outputs is what readTopics read.
type outputs struct {
	// records are each output topic's records, by partition and offset.
	records map[string][]*kgo.Record
	// aborted counts, per topic, the offsets below the last stable
	// offset that were neither records nor transaction markers: records
	// of aborted transactions, which a killed worker leaves.
	aborted map[string]int
	// unstable lists the partitions whose last stable offset was behind
	// their end: an open transaction, which after the workers stopped
	// should not be.
	unstable []string
}

// readTopics reads every partition of topics from its start to its last
// stable offset with a read-committed consumer: what a downstream reader
// of an exactly-once application sees.
func readTopics(ctx context.Context, brokers, topics []string, timeout time.Duration) (outputs, error) {
	out := outputs{records: make(map[string][]*kgo.Record), aborted: make(map[string]int)}
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return out, err
	}
	defer adm.Close()
	ends, err := listOffsets(ctx, kadm.NewClient(adm), topics)
	if err != nil {
		return out, err
	}
	from := make(map[string]map[int32]kgo.Offset)
	left := make(map[topicPartition]int64) // the last offset below the stable end
	for tp, e := range ends {
		if e.stable < e.end {
			out.unstable = append(out.unstable, fmt.Sprintf("%s: last stable offset %d, end %d", tp, e.stable, e.end))
		}
		if e.stable > e.start {
			if from[tp.topic] == nil {
				from[tp.topic] = make(map[int32]kgo.Offset)
			}
			from[tp.topic][tp.partition] = kgo.NewOffset().At(e.start)
			left[tp] = e.stable - 1
			out.aborted[tp.topic] += int(e.stable - e.start)
		}
	}
	slices.Sort(out.unstable)

	// Control records (transaction markers) are kept so that a partition
	// whose last stable offset follows a commit marker is seen to its end.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(from),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return out, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := make(map[topicPartition]int64)
	for len(left) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var missing []string
			for tp, last := range left {
				got, ok := seen[tp]
				if !ok {
					got = -1
				}
				missing = append(missing, fmt.Sprintf("%s read to offset %d of %d", tp, got, last))
			}
			slices.Sort(missing)
			return out, fmt.Errorf("reading to the last stable offsets within %v: %s", timeout, strings.Join(missing, ", "))
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			fetchErr = fmt.Errorf("fetching %s/%d: %w", t, p, err)
		})
		if fetchErr != nil {
			return out, fetchErr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			tp := topicPartition{r.Topic, r.Partition}
			if r.Offset >= ends[tp].stable {
				return // past the snapshot the check is about
			}
			seen[tp] = r.Offset
			if last, ok := left[tp]; ok && r.Offset >= last {
				delete(left, tp)
			}
			out.aborted[r.Topic]--
			if !r.Attrs.IsControl() {
				out.records[r.Topic] = append(out.records[r.Topic], r)
			}
		})
	}
	for _, recs := range out.records {
		slices.SortStableFunc(recs, func(a, b *kgo.Record) int {
			return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
	}
	return out, nil
}

// partitionEnds are a partition's start, last stable and end offsets.
type partitionEnds struct{ start, stable, end int64 }

func listOffsets(ctx context.Context, adm *kadm.Client, topics []string) (map[topicPartition]partitionEnds, error) {
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing start offsets: %w", err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing last stable offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	out := make(map[topicPartition]partitionEnds)
	stable.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		e, _ := ends.Lookup(o.Topic, o.Partition)
		out[topicPartition{o.Topic, o.Partition}] = partitionEnds{start: s.Offset, stable: o.Offset, end: e.Offset}
	})
	return out, nil
}

// Problem is one example of a check that failed.
type Problem struct {
	Kind   string // "duplicate", "lost" or "wrong"
	Topic  string
	Key    string
	Detail string // which input or window, and what was seen
}

func (p Problem) String() string {
	return fmt.Sprintf("%s in %s, key %s: %s", p.Kind, p.Topic, p.Key, p.Detail)
}

// maxExamples is how many problems of one kind in one topic a report
// keeps.
const maxExamples = 3

// checker compares the outputs with the truth and counts the problems in
// the report. Under exactly-once every difference is a problem; under
// at-least-once, what a replay after a crash explains (extra copies,
// results and counts above the truth) counts as duplicates, and only
// what falls short of the truth as lost.
type checker struct {
	exactly bool
	tr      truth
	rep     *Report
	kept    map[[2]string]int
}

func (c *checker) problem(kind, topic, key, format string, args ...any) {
	switch kind {
	case "duplicate":
		c.rep.Duplicates++
	case "lost":
		c.rep.Lost++
	default:
		c.rep.WrongCounts++
	}
	k := [2]string{kind, topic}
	if c.kept[k] < maxExamples {
		c.kept[k]++
		c.rep.Examples = append(c.rep.Examples, Problem{Kind: kind, Topic: topic, Key: key, Detail: fmt.Sprintf(format, args...)})
	}
}

// where names a record for the examples.
func where(r *kgo.Record) string { return fmt.Sprintf("p%d@%d", r.Partition, r.Offset) }

// checkMapped checks that every input's mapped record is there once per
// copy of the input.
func (c *checker) checkMapped(recs []*kgo.Record) {
	copies := make(map[inputID][]string)
	for _, r := range recs {
		key := string(r.Key)
		if isFlushKey(key) {
			continue
		}
		var m Mapped
		if err := json.Unmarshal(r.Value, &m); err != nil {
			c.problem("wrong", MappedTopic, key, "%s: undecodable value %q: %v", where(r), r.Value, err)
			continue
		}
		if m.Key != key || m.Seq < 1 || m.Seq > c.tr.perKey[key] {
			c.problem("wrong", MappedTopic, key, "%s: %+v maps no input that was produced", where(r), m)
			continue
		}
		in := inputID{key, m.Seq}
		copies[in] = append(copies[in], where(r)+" by "+m.By)
	}
	for _, key := range slices.Sorted(maps.Keys(c.tr.perKey)) {
		for seq := int64(1); seq <= c.tr.perKey[key]; seq++ {
			seen, want := copies[inputID{key, seq}], c.tr.copiesOf(inputID{key, seq})
			switch {
			case len(seen) == 0 && want > 0:
				c.problem("lost", MappedTopic, key, "seq %d is missing", seq)
			case len(seen) < want:
				for range want - len(seen) {
					c.problem("lost", MappedTopic, key, "seq %d appears %d times, the input topic holds it %d times: %s", seq, len(seen), want, strings.Join(seen, ", "))
				}
			case len(seen) > want:
				for range len(seen) - want {
					c.problem("duplicate", MappedTopic, key, "seq %d appears %d times: %s", seq, len(seen), strings.Join(seen, ", "))
				}
			}
		}
	}
}

// checkCounts checks each key's last count against its inputs and that
// its updates grow.
func (c *checker) checkCounts(recs []*kgo.Record) {
	type update struct {
		n     int64
		where string
	}
	updates := make(map[string][]update)
	for _, r := range recs {
		key := string(r.Key)
		if isFlushKey(key) {
			continue
		}
		v, err := streams.Int64.Deserialize(CountsTopic, r.Value)
		if err != nil || v == nil {
			c.problem("wrong", CountsTopic, key, "%s: value %x is no count: %v", where(r), r.Value, err)
			continue
		}
		if _, ok := c.tr.perKey[key]; !ok {
			c.problem("wrong", CountsTopic, key, "%s: a count %d of a key that got no input", where(r), v)
			continue
		}
		updates[key] = append(updates[key], update{v.(int64), where(r)})
	}
	for _, key := range slices.Sorted(maps.Keys(c.tr.perKey)) {
		want, us := c.tr.inputsOf(key), updates[key]
		if len(us) == 0 {
			if want > 0 {
				c.problem("lost", CountsTopic, key, "no count for %d inputs", want)
			}
			continue
		}
		for i := 1; i < len(us); i++ {
			if us[i].n <= us[i-1].n {
				c.problem("duplicate", CountsTopic, key, "the count went from %d (%s) to %d (%s)", us[i-1].n, us[i-1].where, us[i].n, us[i].where)
			}
		}
		last := us[len(us)-1]
		switch {
		case last.n == want:
		case c.exactly:
			c.problem("wrong", CountsTopic, key, "last count %d (%s), %d inputs", last.n, last.where, want)
		case last.n < want:
			c.problem("lost", CountsTopic, key, "last count %d (%s), %d inputs", last.n, last.where, want)
		default:
			c.problem("duplicate", CountsTopic, key, "last count %d (%s), %d inputs", last.n, last.where, want)
		}
	}
}

// checkWindows checks that every window of every key has one final
// result, its number of inputs.
func (c *checker) checkWindows(recs []*kgo.Record) {
	type result struct {
		n     int64
		where string
	}
	keySerde := streams.WindowedJSON(streams.String)
	size := WindowSize.Milliseconds()
	results := make(map[windowKey][]result)
	for _, r := range recs {
		k, err := keySerde.Deserialize(WindowsTopic, r.Key)
		w, ok := k.(streams.Windowed)
		if err != nil || !ok {
			c.problem("wrong", WindowsTopic, string(r.Key), "%s: undecodable windowed key: %v", where(r), err)
			continue
		}
		key, _ := w.Key.(string)
		if isFlushKey(key) {
			continue
		}
		v, err := streams.Int64.Deserialize(WindowsTopic, r.Value)
		if err != nil || v == nil {
			c.problem("wrong", WindowsTopic, key, "%s: window %s: value %x is no count: %v", where(r), w, r.Value, err)
			continue
		}
		wk := windowKey{key, w.Start}
		if _, ok := c.tr.windows[wk]; !ok || w.End != w.Start+size {
			c.problem("wrong", WindowsTopic, key, "%s: a result %d for window %s, which got no input", where(r), v, w)
			continue
		}
		results[wk] = append(results[wk], result{v.(int64), where(r)})
	}
	keys := slices.SortedFunc(maps.Keys(c.tr.windows), func(a, b windowKey) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.start, b.start))
	})
	for _, wk := range keys {
		want, rs := c.tr.windows[wk], results[wk]
		window := fmt.Sprintf("window [%d,%d)", wk.start, wk.start+size)
		if len(rs) == 0 {
			c.problem("lost", WindowsTopic, wk.key, "%s: no result for %d inputs", window, want)
			continue
		}
		var seen []string
		for _, r := range rs {
			seen = append(seen, fmt.Sprintf("%d (%s)", r.n, r.where))
		}
		for range len(rs) - 1 {
			c.problem("duplicate", WindowsTopic, wk.key, "%s: %d results: %s", window, len(rs), strings.Join(seen, ", "))
		}
		first := rs[0].n
		switch {
		case first == want:
		case c.exactly:
			c.problem("wrong", WindowsTopic, wk.key, "%s: result %s, %d inputs", window, seen[0], want)
		case first < want:
			c.problem("lost", WindowsTopic, wk.key, "%s: result %s, %d inputs", window, seen[0], want)
		default:
			c.problem("duplicate", WindowsTopic, wk.key, "%s: result %s, %d inputs", window, seen[0], want)
		}
	}
}
