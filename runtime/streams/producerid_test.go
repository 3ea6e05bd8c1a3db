package streams_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/braidstream/braid/runtime/streams"
)

// sessionLosses is an ErrorHook that keeps the App's reports of a lost
// group session.
type sessionLosses struct {
	mu   sync.Mutex
	errs []error
}

func (s *sessionLosses) OnError(ev streams.ErrorEvent) {
	if !ev.Fatal && strings.Contains(ev.Err.Error(), "losing the group session") {
		s.mu.Lock()
		s.errs = append(s.errs, ev.Err)
		s.mu.Unlock()
	}
}

func (s *sessionLosses) get() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// TestLateProducerID: under exactly-once a new session's producer id may
// come only after a while, once the coordinator has aborted the
// transaction the instance's last session left open (on Apache Kafka,
// after a node's death, 10 s and more). Answered later than one
// brokerTimeout (here 2 s), the App keeps the session, whose group client
// has joined meanwhile, and asks again, rather than giving it up and
// joining the group a second time. Later than two, it gives the session
// up, with the tasks its client took up, and starts another. Either way
// the record counts once.
func TestLateProducerID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hold   time.Duration
		losses bool
	}{
		{"within two bounds", 3 * time.Second, false},
		{"past two bounds", 5 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testLateProducerID(t, tc.hold, tc.losses) })
	}
}

func testLateProducerID(t *testing.T, hold time.Duration, wantLosses bool) {
	const app, input, output = "late-pid", "late-pid-clicks", "late-pid-counts"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond),
		kfake.SeedTopics(1, input, output))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()

	// The coordinator answers the App's InitProducerID as it does while
	// it aborts an earlier transaction of the id: retry, for hold from
	// the first request. The App's bound, brokerTimeout, is 2 s.
	var holdUntil atomic.Int64
	var held atomic.Int32
	c.ControlKey(int16(kmsg.InitProducerID), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.InitProducerIDRequest)
		if req.TransactionalID == nil || !strings.HasPrefix(*req.TransactionalID, app) {
			return nil, nil, false
		}
		holdUntil.CompareAndSwap(0, time.Now().Add(hold).UnixNano())
		if time.Now().UnixNano() >= holdUntil.Load() {
			return nil, nil, false
		}
		held.Add(1)
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})

	b := streams.NewBuilder()
	b.Stream([]string{input}, streams.WithSerdes(streams.String, streams.String)).GroupByKey().
		Count(streams.Materialized(streams.StoreOptions{Name: "counts"})).
		ToStream().To(output, streams.WithSerdes(streams.String, streams.Int64))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	losses := &sessionLosses{}
	a, err := streams.New(topo, streams.Config{
		ApplicationID: app, Brokers: brokers, StateDir: t.TempDir(),
		ProcessingGuarantee: streams.ExactlyOnce,
		CommitInterval:      100 * time.Millisecond,
		SessionTimeout:      2 * time.Second,
		HeartbeatInterval:   200 * time.Millisecond,
		TransactionTimeout:  2 * time.Second,
		Hooks:               []streams.Hook{losses},
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(input),
		kgo.ConsumeTopics(output), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("u1"), Value: []byte("click")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got *kgo.Record
	for got == nil {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no count came: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = r })
	}
	if string(got.Key) != "u1" || len(got.Value) != 8 || binary.BigEndian.Uint64(got.Value) != 1 {
		t.Errorf("count %q = %x, want u1 = 1", got.Key, got.Value)
	}
	if held.Load() == 0 {
		t.Fatal("no InitProducerID was held back: the test tests nothing")
	}
	switch errs := losses.get(); {
	case !wantLosses && len(errs) > 0:
		t.Errorf("the App gave its session up %d times, first: %v", len(errs), errs[0])
	case wantLosses && len(errs) == 0:
		t.Error("the App never gave up its session, whose producer id came past two bounds")
	}
}
