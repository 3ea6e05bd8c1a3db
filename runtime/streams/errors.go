package streams

import (
	"fmt"
)

// BuildError is one mistake Builder.Build reports: of a DSL call (a nil
// function, an option the operator does not take, a bad topic or store
// name) or of the whole topology (an operator name used twice). Build
// returns all of them joined (errors.Join): errors.As finds the first, and
// the joined error's Unwrap() []error gives every one.
type BuildError struct {
	// Operator is the operator the mistake is about: the one the failing
	// call had added when it found it, the one a bad Named names, or the
	// one Build's checks found (the second of two operators of one
	// name); "" when the call found the mistake before adding an
	// operator, or it is the topology's.
	Operator string
	// Method is the DSL call that found it ("Filter", "Table.GroupBy",
	// "Windowed.Count"); for a call another makes (Table.To's ToStream
	// and To) the inner one. "Build" for a second call of Build, "" for
	// Build's checks of the topology.
	Method string
	// Option names the option at fault by the function that makes it
	// ("Named", "Materialized", "WithPartitions"), when one is. A bad
	// repartition topic blames the option of the call that named it
	// (Repartition's or a join's Named, an aggregation's Materialized),
	// and nothing when another call named it (a grouping's Named).
	Option string
	// Arg names, when one is at fault, an argument: with Option, the
	// field of the option's argument ("Name" or "Retention" of
	// Materialized's StoreOptions; "" for the option as a whole);
	// without, a positional argument of Method by its name in the
	// method's signature: "topics" (Builder.Stream), "topic"
	// (Builder.Table, To), "branches", "other" (the stream or table
	// merged or joined), "table" (JoinTable's), "windows" (a stream
	// join's, or, for a windowed aggregation, which checks them,
	// WindowedBy's), or a function ("pred", "fn", "init", "agg",
	// "adder", "subtractor", "joiner"). Tools that build topologies for
	// their users, as Braid's compiler does, map Option and Arg back to
	// what their user set, so that no message need be parsed.
	Arg string
	Err error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("building topology: %v", e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }

// DeserializationError says a consumed record's key or value could not be
// decoded, or its timestamp could not be extracted. It names the record
// exactly so that it can be found with any Kafka tool.
type DeserializationError struct {
	Task      TaskID
	Topic     string
	Partition int32
	Offset    int64
	// Part is "key", "value" or "timestamp".
	Part string
	Err  error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("task %s: %s", e.Task, e.detail())
}

// detail is the error without its task.
func (e *DeserializationError) detail() string {
	return fmt.Sprintf("decoding %s of record %s/%d@%d: %v", e.Part, e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *DeserializationError) Unwrap() error { return e.Err }

// ProcessingError says a processor (a user function or a sink's serde)
// failed on a record. Node is the processor's name in the topology.
type ProcessingError struct {
	Task      TaskID
	Node      string
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *ProcessingError) Error() string {
	return fmt.Sprintf("task %s: %s", e.Task, e.detail())
}

// detail is the error without its task.
func (e *ProcessingError) detail() string {
	return fmt.Sprintf("processor %q on record %s/%d@%d: %v", e.Node, e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *ProcessingError) Unwrap() error { return e.Err }

// TaskFailedError is what Run returns when a task failed and the configured
// handler said to fail. Err is a *DeserializationError, a *ProcessingError
// or a produce error.
type TaskFailedError struct {
	Task TaskID
	Err  error
}

// Error names the task once: a DeserializationError or ProcessingError of
// the same task is given without its own "task ...:".
func (e *TaskFailedError) Error() string {
	switch err := e.Err.(type) {
	case *DeserializationError:
		if err.Task == e.Task {
			return fmt.Sprintf("task %s failed: %s", e.Task, err.detail())
		}
	case *ProcessingError:
		if err.Task == e.Task {
			return fmt.Sprintf("task %s failed: %s", e.Task, err.detail())
		}
	}
	return fmt.Sprintf("task %s failed: %v", e.Task, e.Err)
}

func (e *TaskFailedError) Unwrap() error { return e.Err }

// MissingSourceTopicError says a topic the topology reads does not exist.
// The App does not create source topics: a typo would otherwise silently
// read nothing.
type MissingSourceTopicError struct {
	Topic string
}

func (e *MissingSourceTopicError) Error() string {
	return fmt.Sprintf("source topic %q does not exist", e.Topic)
}

// InternalTopicError says an internal (repartition) topic exists with a
// layout the topology cannot use.
type InternalTopicError struct {
	Topic              string
	Partitions         int
	ExpectedPartitions int
}

func (e *InternalTopicError) Error() string {
	return fmt.Sprintf("internal topic %q has %d partitions, the topology needs %d; delete it or reset the application",
		e.Topic, e.Partitions, e.ExpectedPartitions)
}

// CopartitionError says that two topics a join reads together have
// different partition counts, so that one task would not see the same
// keys on both sides. Give them the same count, or repartition one side
// (Stream.Repartition with WithPartitions). Internal topics are named
// without the application id.
type CopartitionError struct {
	Topic           string
	Partitions      int
	OtherTopic      string
	OtherPartitions int
}

func (e *CopartitionError) Error() string {
	return fmt.Sprintf("joined topics %q (%d partitions) and %q (%d partitions) are not co-partitioned: a join needs the same partition count on both sides",
		e.Topic, e.Partitions, e.OtherTopic, e.OtherPartitions)
}

// FencedError says another live instance uses this App's transactional id
// (<ApplicationID>-<InstanceID>, under ExactlyOnce) and fenced it: two
// processes run with the same InstanceID. A fence right after a broker
// restart, by this instance's own older producer epoch, is not one: the
// App recovers from it by itself once, and fails with a FencedError only
// when it is fenced again within a minute of the previous fence.
type FencedError struct {
	ApplicationID, InstanceID string
	TransactionalID           string
	Err                       error
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("instance %q of application %q was fenced: another process runs with the same InstanceID "+
		"(transactional id %q); give each process its own InstanceID: %v", e.InstanceID, e.ApplicationID, e.TransactionalID, e.Err)
}

// StateDirInUseError says another App with stores holds this App's state
// directory, <StateDir>/<ApplicationID>: two instances, in this process or
// two, were given one StateDir. Sharing it would let each open, and delete, the
// other's stores, so the second stops before it joins the group.
type StateDirInUseError struct {
	Dir                       string
	ApplicationID, InstanceID string
	Err                       error
}

func (e *StateDirInUseError) Error() string {
	return fmt.Sprintf("instance %q of application %q cannot use state dir %s: another instance of the application uses it; "+
		"give each instance its own Config.StateDir: %v", e.InstanceID, e.ApplicationID, e.Dir, e.Err)
}

func (e *StateDirInUseError) Unwrap() error { return e.Err }

func (e *FencedError) Unwrap() error { return e.Err }

// AuthorizationError says the cluster refused the App an operation it
// needs (Op, e.g. "committing offsets"): an ACL or SASL problem that no
// retry heals.
type AuthorizationError struct {
	Op  string
	Err error
}

func (e *AuthorizationError) Error() string {
	return fmt.Sprintf("%s: not authorized: %v", e.Op, e.Err)
}

func (e *AuthorizationError) Unwrap() error { return e.Err }
