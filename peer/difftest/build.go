package difftest

import "github.com/braidstream/braid/designer/designgen"

// The hand-written cases' builders: designgen's, short.
var (
	n     = designgen.Node
	chain = designgen.Chain
	rec   = designgen.Record
)
