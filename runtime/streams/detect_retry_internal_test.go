package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The supervisor's fence and removal ask the coordinator again while it
// answers that it is busy, CONCURRENT_TRANSACTIONS included: kerr does not
// mark that one retriable, and taking it as final left a dead instance's
// transaction open until its timeout on Apache Kafka.
func TestRetryRetriableAsksAgainWhileBusy(t *testing.T) {
	for _, c := range []struct {
		name    string
		answers []error
		want    error
		calls   int
	}{
		{"concurrent transactions then done", []error{kerr.ConcurrentTransactions, kerr.ConcurrentTransactions, nil}, nil, 3},
		{"coordinator loading then done", []error{kerr.CoordinatorLoadInProgress, nil}, nil, 2},
		{"not retriable", []error{kerr.TransactionalIDAuthorizationFailed, nil}, kerr.TransactionalIDAuthorizationFailed, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retryRetriable(context.Background(), func() error {
				calls++
				return c.answers[calls-1]
			})
			if err != c.want {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if calls != c.calls {
				t.Errorf("%d calls, want %d", calls, c.calls)
			}
		})
	}
	t.Run("busy until the context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		err := retryRetriable(ctx, func() error { return kerr.ConcurrentTransactions })
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, kerr.ConcurrentTransactions) {
			t.Fatalf("got %v, want the context's end with the last answer", err)
		}
	})
}
