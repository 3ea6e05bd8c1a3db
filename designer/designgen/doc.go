// Package designgen makes random valid designs, and input records for
// them, the same for the same seed. It is the one generator of two kinds
// of property test: the compiler's (each design compiles, and its exported
// Go program describes and computes as the compiler's topology does) and
// the differential tests against Kafka Streams (peer/difftest: the same
// design in Braid's TestDriver and in Kafka Streams' TopologyTestDriver
// gives the same records).
//
// Its designs stay within what the Kafka Streams peer's DesignRunner can
// build (named expression functions, the catalog's stateless operators,
// aggregations in every window kind, the three join kinds, branch, merge,
// flat-map, tables), so that one seed means the same case to both tests.
package designgen
