// Package bench measures Braid against baselines measured in the same run,
// on the same machine, over the same records. Absolute throughput on a
// shared machine varies by ±15% from run to run; the ratio of Braid to a
// hand-written franz-go program measured minutes apart in one process does
// not, so ratios are what Braid's targets are stated in.
//
// It backs `braid bench`. RunPipe is `braid bench pipe`: it starts an
// embedded broker, seeds an input topic once (Seed), runs the raw franz-go
// consume-and-produce pipe (RawPipe) and then each Braid variant over the
// same input, checks every output topic holds the records, and prints
// records per second for each and a final line
//
//	RESULT pipe ratio=<braid/raw> braid=<rec/s> raw=<rec/s>
//
// for the gated variant.
package bench
