package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Crash-aborted transactions need an abort marker, which kfake does not
// write.
//
// When kfake starts from a data dir that was not closed cleanly (a
// SIGKILL), loadPartitionFullReplay (kfake/persist.go) treats every
// transaction still open in a partition's log as aborted: it adds the
// transaction to the partition's aborted-transaction index and bumps its
// producer's epoch (loadFromDisk), but it writes no abort control batch.
// The transactional id survives, so the producer that initialises again
// gets the same producer id. A read_committed fetch returns the aborted
// transaction as (producer id, first offset), and the reader (franz-go's
// aborter in kgo/source.go, the Java client alike) drops every
// transactional batch of that producer id from that offset on until it
// reads an abort marker of that producer id. None ever comes, so every
// later committed transaction of the producer on that partition is hidden
// from read_committed readers, for good.
//
// So Start, after kfake has loaded a data dir and before any client can
// connect, writes the missing markers: repairCrashAbortedTxns reads every
// partition's log once, finds the aborted transactions the broker reports
// that no abort marker of their producer id follows, and writes one with
// WriteTxnMarkers (kfake's writeTxnMarker appends the control batch; it
// adds no second aborted-index entry, since after a load the producer has
// no transaction open in the partition). Remove this once kfake's
// loadPartitionFullReplay writes the markers itself.
//
// It reads the whole log, through an in-memory connection: its cost is
// proportional to the size of the data dir, which kfake holds in memory
// anyway. A repaired log has the marker on disk, so a later start finds
// nothing to do. Retention and compaction start only after the repair, and
// treat these markers as they treat those EndTxn writes (compaction keeps a
// producer's markers while data of that producer survives, as Kafka does).

// repairCrashAbortedTxns writes an abort marker for every aborted
// transaction of the broker that cl reaches that has none.
func repairCrashAbortedTxns(ctx context.Context, cl *kgo.Client) error {
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	if len(topics) == 0 {
		return nil
	}
	starts, err := adm.ListStartOffsets(ctx, topics.Names()...)
	if err != nil {
		return fmt.Errorf("listing start offsets: %w", err)
	}
	type pidEpoch struct {
		pid   int64
		epoch int16
	}
	markers := make(map[pidEpoch]map[string][]int32)
	var errs []error
	for _, td := range topics.Sorted() {
		for _, pd := range td.Partitions.Sorted() {
			start, ok := starts.Lookup(td.Topic, pd.Partition)
			if !ok || start.Err != nil {
				errs = append(errs, fmt.Errorf("%s/%d: no start offset: %v", td.Topic, pd.Partition, start.Err))
				continue
			}
			open, err := unmarkedAborts(ctx, cl, td.Topic, td.ID, pd.Partition, start.Offset)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%d: %w", td.Topic, pd.Partition, err))
				continue
			}
			for pid, epoch := range open {
				k := pidEpoch{pid, epoch}
				if markers[k] == nil {
					markers[k] = make(map[string][]int32)
				}
				markers[k][td.Topic] = append(markers[k][td.Topic], pd.Partition)
			}
		}
	}
	if len(markers) == 0 {
		return errors.Join(errs...)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for k, topics := range markers {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = k.pid, k.epoch, false
		for topic, parts := range topics {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = topic, parts
			m.Topics = append(m.Topics, mt)
		}
		req.Markers = append(req.Markers, m)
	}
	return errors.Join(append(errs, writeMarkers(ctx, cl, req))...)
}

// writeMarkers sends req and reports every marker it could not write, by
// producer and partition.
func writeMarkers(ctx context.Context, cl *kgo.Client, req *kmsg.WriteTxnMarkersRequest) error {
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("writing abort markers: %w", err)
	}
	var errs []error
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("writing the abort marker of producer %d to %s/%d: %w", m.ProducerID, t.Topic, p.Partition, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// unmarkedAborts reads a partition from offset start with read_committed
// and returns, by producer id, the aborted transactions the broker
// reports that no abort marker of their producer follows in the log, with
// the epoch of their last batch.
func unmarkedAborts(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition int32, start int64) (map[int64]int16, error) {
	aborted, batches, err := readTxnIndex(ctx, cl, topic, id, partition, start)
	if err != nil {
		return nil, err
	}
	open := make(map[int64]int16)
	for pid, firsts := range aborted {
		for _, first := range firsts {
			marked, epoch, seen := false, int16(-1), false
			for _, b := range batches[pid] {
				if b.offset < first {
					continue
				}
				if b.control {
					marked = b.abort
					break
				}
				epoch, seen = b.epoch, true
			}
			if !marked && seen {
				open[pid] = epoch
			}
		}
	}
	return open, nil
}

// pidBatch is a transactional batch of a producer, as readTxnIndex reads
// it.
type pidBatch struct {
	offset  int64
	epoch   int16
	control bool
	abort   bool
}

// readTxnIndex reads a partition from offset start to its last stable
// offset with read_committed and returns the aborted transactions the
// broker reports (producer id → first offsets) and the transactional
// batches of the log, by producer id, in offset order.
func readTxnIndex(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition int32, start int64) (map[int64][]int64, map[int64][]pidBatch, error) {
	aborted := make(map[int64][]int64)    // producer id → first offsets
	batches := make(map[int64][]pidBatch) // transactional batches, by producer id
	for offset := start; ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MaxBytes = 64 << 20
		req.IsolationLevel = 1 // read_committed, for the aborted transactions
		req.SessionEpoch = -1  // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 64<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching from %d: %w", offset, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, nil, fmt.Errorf("fetching from %d: %w", offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, nil, fmt.Errorf("fetching from %d: the response has no partition", offset)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, nil, fmt.Errorf("fetching from %d: %w", offset, err)
		}
		for _, at := range p.AbortedTransactions {
			if !containsOffset(aborted[at.ProducerID], at.FirstOffset) {
				aborted[at.ProducerID] = append(aborted[at.ProducerID], at.FirstOffset)
			}
		}
		next := offset
		for raw := p.RecordBatches; len(raw) >= 12; {
			size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
			if size > len(raw) || size < 12 {
				break // a partial batch at the end of the response
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw[:size]); err != nil {
				return nil, nil, fmt.Errorf("decoding the batch at %d: %w", next, err)
			}
			raw = raw[size:]
			if end := b.FirstOffset + int64(b.LastOffsetDelta) + 1; end > next {
				next = end
			}
			if b.Attributes&0x0010 == 0 { // not transactional
				continue
			}
			pb := pidBatch{offset: b.FirstOffset, epoch: b.ProducerEpoch, control: b.Attributes&0x0020 != 0}
			if pb.control {
				// The control record's key is version (int16) and
				// type (int16): 0 aborts, 1 commits. kfake writes it
				// uncompressed.
				var rec kmsg.Record
				pb.abort = rec.ReadFrom(b.Records) == nil && len(rec.Key) >= 4 && binary.BigEndian.Uint16(rec.Key[2:4]) == 0
			}
			batches[b.ProducerID] = append(batches[b.ProducerID], pb)
		}
		if next <= offset || next >= p.LastStableOffset {
			break
		}
		offset = next
	}
	return aborted, batches, nil
}

func containsOffset(offsets []int64, o int64) bool {
	for _, x := range offsets {
		if x == o {
			return true
		}
	}
	return false
}

// gatedListener holds back the connections of its listener until opened,
// and meanwhile hands kfake the in-memory connections of dial: Start
// repairs the log through them before any client reaches the broker.
type gatedListener struct {
	net.Listener
	inject    chan net.Conn
	open      chan struct{}
	closed    chan struct{}
	openOnce  sync.Once
	closeOnce sync.Once
}

func newGatedListener(ln net.Listener) *gatedListener {
	return &gatedListener{Listener: ln, inject: make(chan net.Conn), open: make(chan struct{}), closed: make(chan struct{})}
}

func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.inject:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.open:
	}
	return l.Listener.Accept()
}

// dial connects to the broker in memory, past the gate.
func (l *gatedListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.inject <- server:
		return client, nil
	case <-l.open:
	case <-l.closed:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, errors.New("the broker's in-memory listener is no longer accepting")
}

// Open lets the listener's own connections through.
func (l *gatedListener) Open() { l.openOnce.Do(func() { close(l.open) }) }

func (l *gatedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
