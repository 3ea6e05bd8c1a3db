package streams_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidstream/braid/runtime/streams"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordErrors feeds a 1-partition topic 11 records of which the one
// at offset 5 cannot be decoded, has a negative timestamp or makes a
// processor fail, and checks both error handlings: FailOnError stops the
// App with the record named and everything before it committed, so
// nothing is lost; LogAndContinue skips it, counts it and goes on.
func TestRecordErrors(t *testing.T) {
	const (
		n   = 11
		bad = 5 // offset of the bad record
	)
	kinds := []struct {
		name string
		// badValue is the value at offset bad.
		badValue string
		// check checks the error the bad record caused.
		check func(t *testing.T, err error)
	}{
		{
			name:     "undecodable value",
			badValue: "not json",
			check: func(t *testing.T, err error) {
				checkDeserializationError(t, err, "value", bad)
			},
		},
		{
			name:     "negative timestamp",
			badValue: `{"id":5,"ts":-5}`,
			check: func(t *testing.T, err error) {
				checkDeserializationError(t, err, "timestamp", bad)
			},
		},
		{
			name:     "processing error",
			badValue: `{"id":5,"ts":1005,"explode":true}`,
			check: func(t *testing.T, err error) {
				t.Helper()
				var pe *streams.ProcessingError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v (%T) is no *ProcessingError", err, err)
				}
				want := streams.ProcessingError{Task: streams.TaskID{}, Node: "explode", Topic: "in", Partition: 0, Offset: bad, Err: pe.Err}
				if *pe != want {
					t.Errorf("ProcessingError = %+v, want %+v", *pe, want)
				}
				if !errors.Is(err, errBoom) {
					t.Errorf("error %v does not wrap the mapper's error", err)
				}
				if de := (*streams.DeserializationError)(nil); errors.As(err, &de) {
					t.Errorf("a processing error is also a DeserializationError: %v", err)
				}
			},
		},
	}
	for _, kind := range kinds {
		for _, handling := range []streams.ErrorHandling{streams.FailOnError, streams.LogAndContinue} {
			t.Run(fmt.Sprintf("%s/%s", kind.name, handling), func(t *testing.T) {
				b := startBroker(t)
				createTopic(t, b, "in", 1)
				createTopic(t, b, "out", 1)
				var recs []*kgo.Record
				for i := range n {
					v := fmt.Sprintf(`{"id":%d,"ts":%d}`, i, 1000+i)
					if i == bad {
						v = kind.badValue
					}
					recs = append(recs, &kgo.Record{Topic: "in", Key: key(i), Value: []byte(v)})
				}
				produce(t, b, recs...)

				builder := streams.NewBuilder()
				builder.Stream([]string{"in"}, streams.WithSerdes(streams.String, streams.JSON), streams.WithTimestamps(streams.JSONTimestamp("ts"))).
					MapValues(func(v any) (any, error) {
						if v.(map[string]any)["explode"] == true {
							return nil, errBoom
						}
						return v, nil
					}, streams.Named("explode")).
					To("out", streams.WithSerdes(streams.String, streams.JSON))
				topo, err := builder.Build()
				if err != nil {
					t.Fatal(err)
				}
				hooks := &recorder{}
				cfg := testConfig(b, "errors")
				cfg.Hooks = []streams.Hook{hooks}
				cfg.DeserializationErrors, cfg.ProcessingErrors = handling, handling
				app, err := streams.New(topo, cfg)
				if err != nil {
					t.Fatal(err)
				}

				if handling == streams.FailOnError {
					err := runToError(t, app, 20*time.Second)
					if err == nil {
						t.Fatal("Run returned nil, want the bad record's error")
					}
					var tf *streams.TaskFailedError
					if !errors.As(err, &tf) {
						t.Fatalf("Run: %v (%T), want a *TaskFailedError", err, err)
					}
					if tf.Task != (streams.TaskID{Subtopology: 0, Partition: 0}) {
						t.Errorf("TaskFailedError.Task = %v, want 0_0", tf.Task)
					}
					kind.check(t, err)
					if got := app.State(); got != streams.Failed {
						t.Errorf("State() = %v, want %v", got, streams.Failed)
					}
					if states := hooks.stateNames(); len(states) == 0 || states[len(states)-1] != "ERROR" {
						t.Errorf("states %v, want ERROR last", states)
					}
					var fatal []streams.ErrorEvent
					for _, e := range hooks.errors() {
						if e.Fatal {
							fatal = append(fatal, e)
						}
					}
					if len(fatal) != 1 || fatal[0].Task != tf.Task || !errors.Is(fatal[0].Err, tf.Err) {
						t.Errorf("fatal error events %+v, want one for task 0_0 with Run's error", fatal)
					}
					// The records before the bad one came out and are
					// committed; the bad one is not, so a restart meets it
					// again.
					if got := endOffsets(t, b, "out"); got[0] != bad {
						t.Errorf("the output holds %d records, want the %d before the bad one", got[0], bad)
					}
					checkIDs(t, consumeN(t, b, "out", bad, 10*time.Second), []int{0, 1, 2, 3, 4})
					if got := committedOffsets(t, b, "errors", "in"); got[0] != bad {
						t.Errorf("committed offset of in/0 = %d (committed: %v), want %d", got[0], got, bad)
					}
					return
				}

				stop := runApp(t, app)
				checkIDs(t, consumeN(t, b, "out", n-1, 20*time.Second), []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10})
				waitFor(t, 10*time.Second, "in/0 to be committed up to 11", func() bool {
					return committedOffsets(t, b, "errors", "in")[0] == n
				})
				waitFor(t, 5*time.Second, "Stats to count 11 processed and 1 skipped", func() bool {
					st := app.Stats()
					return len(st.Tasks) == 1 && st.Tasks[0].Processed == n && st.Tasks[0].Skipped == 1
				})
				skipped := hooks.skippedRecords()
				if len(skipped) != 1 {
					t.Fatalf("%d records skipped, want 1: %+v", len(skipped), skipped)
				}
				s := skipped[0]
				if s.Task != (streams.TaskID{}) || s.Topic != "in" || s.Partition != 0 || s.Offset != bad {
					t.Errorf("skipped %+v, want task 0_0, in/0@%d", s, bad)
				}
				kind.check(t, s.Err)
				errs := hooks.errors()
				if len(errs) != 1 || errs[0].Fatal || errs[0].Err != s.Err {
					t.Errorf("error events %+v, want one, not fatal, with the skipped record's error", errs)
				}
				if got := app.State(); got != streams.Running {
					t.Errorf("State() = %v, want %v", got, streams.Running)
				}
				if err := stop(); err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := endOffsets(t, b, "out"); got[0] != n-1 {
					t.Errorf("the output holds %d records, want %d", got[0], n-1)
				}
			})
		}
	}
}

func checkDeserializationError(t *testing.T, err error, part string, offset int64) {
	t.Helper()
	var de *streams.DeserializationError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is no *DeserializationError", err, err)
	}
	want := streams.DeserializationError{Task: streams.TaskID{}, Topic: "in", Partition: 0, Offset: offset, Part: part, Err: de.Err}
	if *de != want {
		t.Errorf("DeserializationError = %+v, want %+v", *de, want)
	}
	if de.Err == nil {
		t.Error("DeserializationError wraps no cause")
	}
	if pe := (*streams.ProcessingError)(nil); errors.As(err, &pe) {
		t.Errorf("a deserialization error is also a ProcessingError: %v", err)
	}
}

// checkIDs checks that the JSON values of recs carry exactly the ids want,
// in order.
func checkIDs(t *testing.T, recs []*kgo.Record, want []int) {
	t.Helper()
	var got []int
	for _, r := range recs {
		var v struct{ ID int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("output %s: %v", r.Value, err)
		}
		got = append(got, v.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("output ids %v, want %v", got, want)
	}
}

// TestMissingSourceTopic checks that Run fails at once, naming the topic,
// and does not create it.
func TestMissingSourceTopic(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "present", 2)
	builder := streams.NewBuilder()
	builder.Stream([]string{"present", "missing"}).To("out")
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	hooks := &recorder{}
	cfg := testConfig(b, "missing")
	cfg.Hooks = []streams.Hook{hooks}
	app, err := streams.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = runToError(t, app, 10*time.Second)
	var me *streams.MissingSourceTopicError
	if !errors.As(err, &me) {
		t.Fatalf("Run: %v (%T), want a *MissingSourceTopicError", err, err)
	}
	if me.Topic != "missing" {
		t.Errorf("MissingSourceTopicError.Topic = %q, want %q", me.Topic, "missing")
	}
	if !strings.Contains(err.Error(), `"missing"`) || strings.Contains(err.Error(), `"present"`) {
		t.Errorf("error %q should name the missing topic and only it", err)
	}
	t.Logf("Run failed after %v", time.Since(start))
	if got := app.State(); got != streams.Failed {
		t.Errorf("State() = %v, want %v", got, streams.Failed)
	}
	details, err := admin(t, b).ListTopics(context.Background(), "missing")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := details["missing"]; ok && d.Err == nil {
		t.Errorf("Run created the missing source topic: %+v", d)
	}
}

// TestInternalTopicWithWrongPartitionCount checks that an existing
// repartition topic with another partition count than the topology needs
// stops Run before it processes anything.
func TestInternalTopicWithWrongPartitionCount(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "orders", 4)
	const internal = "wrong-by-customer-repartition"
	createTopic(t, b, internal, 3)
	builder := streams.NewBuilder()
	builder.Stream([]string{"orders"}, streams.WithSerdes(streams.String, streams.JSON)).
		SelectKey(func(_, v any) (any, error) { return v.(map[string]any)["customer"], nil }).
		Repartition(streams.Named("by-customer")).
		To("out")
	topo, err := builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	app, err := streams.New(topo, testConfig(b, "wrong"))
	if err != nil {
		t.Fatal(err)
	}
	err = runToError(t, app, 10*time.Second)
	var ie *streams.InternalTopicError
	if !errors.As(err, &ie) {
		t.Fatalf("Run: %v (%T), want an *InternalTopicError", err, err)
	}
	if want := (streams.InternalTopicError{Topic: internal, Partitions: 3, ExpectedPartitions: 4}); *ie != want {
		t.Errorf("InternalTopicError = %+v, want %+v", *ie, want)
	}
	if got := app.State(); got != streams.Failed {
		t.Errorf("State() = %v, want %v", got, streams.Failed)
	}
}

// A TaskFailedError names its task once, not again for the record error
// it wraps.
func TestTaskFailedErrorNamesTaskOnce(t *testing.T) {
	id := streams.TaskID{Subtopology: 0, Partition: 3}
	for _, err := range []error{
		&streams.TaskFailedError{Task: id, Err: &streams.ProcessingError{Task: id, Node: "f", Topic: "in", Partition: 3, Offset: 7, Err: errors.New("boom")}},
		&streams.TaskFailedError{Task: id, Err: &streams.DeserializationError{Task: id, Part: "value", Topic: "in", Partition: 3, Offset: 7, Err: errors.New("boom")}},
	} {
		msg := err.Error()
		if n := strings.Count(msg, "task "); n != 1 || !strings.HasPrefix(msg, "task 0_3 failed: ") || !strings.HasSuffix(msg, "record in/3@7: boom") {
			t.Errorf("got %q, want the task named once", msg)
		}
	}
}
