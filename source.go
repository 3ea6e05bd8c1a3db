package braid

import "embed"

// Source is the part of this module an exported program needs: go.mod,
// go.sum and the runtime's packages (runtime/..., tests and testdata
// included, since embed cannot leave them out; writers skip them).
//
// Braid's module is not on any module proxy, so a program exported by
// `braid export` carries this copy beside its main.go, behind a local
// replace directive: it builds on any machine with exactly the runtime of
// the braid binary that wrote it.
//
//go:embed go.mod go.sum runtime
var Source embed.FS
