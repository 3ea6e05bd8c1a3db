// Package braid is the root of the Braid module. It owns Source, the
// module's own runtime source that exported programs carry (source.go),
// and its tests guard the architecture described in ARCHITECTURE.md
// (which package may import which, package naming and documentation, and
// that the map names every top-level folder).
//
// Braid lets a person design a Kafka Streams-style topology in the browser,
// run it as fault-tolerant tasks in Go, watch it live and export it as a Go
// program. The engine lives in package runtime and its sub-packages; the
// binary is cmd/braid.
package braid
