package compiler

import (
	"flag"

	"github.com/braidstream/braid/runtime/process"
)

// The usages of the exported program's own flags: --app-id's (its
// default is the design's) and --describe, which braid run has not.
const (
	exportAppIDUsage    = "application id, the consumer group's id and internal topics' prefix (default: the design's, braid-<design id>, as with braid run)"
	exportDescribeUsage = "print the topology as Kafka Streams' describe() does, and exit"
)

// DefineExportedFlags defines on fs the flags an exported program of a
// design with application id appID takes, as its main defines them: for
// braid export --help.
func DefineExportedFlags(fs *flag.FlagSet, appID string) {
	process.DefineFlags(fs, appID, exportAppIDUsage)
	fs.Bool("describe", false, exportDescribeUsage)
}
