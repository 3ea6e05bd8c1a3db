# Braid. `make run` starts the designer (http://127.0.0.1:8080) on the
# embedded broker, with a demo design;
# `make test` is what CI runs (.ci/run). Works the same with or without CI set
# in the environment (make passes the environment through to the tests).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
# Steps of `make test` run in order, even under make -j.
.NOTPARALLEL:

GO ?= go
MODULE := github.com/braidstream/braid
TEST_FLAGS := -count=1 -p 2 -timeout 10m
# Extra arguments for every `braid bench`, so only flags they all take (--records,
# --keys, --partitions), e.g. make bench BENCH_ARGS='--records 2000000'.
BENCH_ARGS ?=

.PHONY: run kafka test test-quick test-kafka test-fresh deps fmt fmt-check vet tidy-check templ-check size-check test-go fuzz-short fuzz bench bench-peer chaos

run:
	$(GO) run ./cmd/braid serve

# Apache Kafka (kafka/pom.xml pins it; KRaft, no ZooKeeper) in the
# foreground, for a person who wants the real broker: bootstrap
# 127.0.0.1:$(KAFKA_PORT), KAFKA_NODES=3 for three nodes; Ctrl-C stops it.
# Needs Java and Maven (make deps); never needed by make run.
KAFKA_PORT ?= 19092
KAFKA_NODES ?= 1
kafka:
	scripts/kafka.sh run --port $(KAFKA_PORT) --nodes $(KAFKA_NODES)

bench:
	$(GO) run ./cmd/braid bench pipe $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench count $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench restore $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench windowed $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench failover $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench eos $(BENCH_ARGS)
	$(GO) run ./cmd/braid bench join $(BENCH_ARGS)

# Braid against Kafka Streams 4.4.0 (peer/kstreams, built once into the
# cache by scripts/peer.sh) on a one-node Apache Kafka of its own (port
# KAFKA_PORT): docs/benchmarks.md. Needs Java and Maven, as make kafka does.
# Extra flags: PEER_ARGS, e.g. PEER_ARGS='--records 200000 --workloads pipe'.
PEER_ARGS ?=
bench-peer:
	scripts/peer.sh build >/dev/null
	$(GO) build -o "$${TMPDIR:-/tmp}/braid-bench-peer" ./cmd/braid
	dir=$$(mktemp -d "$${TMPDIR:-/tmp}/braid-bench-peer-kafka.XXXXXX"); \
	trap 'scripts/kafka.sh stop --dir "$$dir" --kill; rm -rf "$$dir"' EXIT; \
	brokers=$$(scripts/kafka.sh start --dir "$$dir" --port $(KAFKA_PORT) --watch-pid $$$$); \
	"$${TMPDIR:-/tmp}/braid-bench-peer" bench peer --brokers "$$brokers" $(PEER_ARGS)

# The long chaos run: worker processes killed with SIGKILL and restarted
# under exactly-once (and at-least-once), outputs checked against the truth;
# then the broker faults (killed and restarted after 5 s and 60 s, stopped
# 15 s, cut off at a proxy 30 s), each on a fresh setup under both
# guarantees, every worker to commit again within 10 s of the broker's
# return. make test runs short versions (e2e/chaos_test.go,
# e2e/brokerfaults_test.go). Extra flags: CHAOS_ARGS, e.g.
# CHAOS_ARGS='--duration 0 --alo-duration 0 --broker-faults cut-30s' runs one
# fault alone, --broker-faults none none. CHAOS_ARGS=--kafka runs it all on a
# three-node Apache Kafka cluster (scripts/kafka.sh) instead, with Kafka's
# broker faults: the leader of the most input, changelog and sink
# partitions killed (every worker committing while it is down) and started
# again after 20 s, one node stopped 15 s (SIGSTOP), the active controller
# killed and restarted, the whole cluster stopped and started again.
CHAOS_ARGS ?=
chaos:
	$(GO) run ./e2e/chaos/driver $(CHAOS_ARGS)

deps:
	scripts/install-deps.sh

fmt:
	$(GO) fmt ./...

# Go files outside .git and testdata (testdata may hold deliberately odd input).
fmt-check:
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*'); \
	if [[ -z "$$files" ]]; then exit 0; fi; \
	bad=$$(gofmt -l $$files); \
	if [[ -n "$$bad" ]]; then echo "gofmt: these files need formatting (run make fmt):"; echo "$$bad"; exit 1; fi

vet:
	$(GO) vet ./...

# go.mod and go.sum must be what `go mod tidy` makes them. It may download
# modules that only tidy needs (tests of our dependencies' packages).
tidy-check:
	@if ! diff=$$($(GO) mod tidy -diff 2>&1); then \
		echo "go mod tidy would change go.mod or go.sum (run go mod tidy and commit):"; echo "$$diff"; exit 1; \
	fi

# Generated templ code must be current. Compares file contents before and after
# `templ generate`, so it also works on a tree with uncommitted changes.
templ-check:
	@if [[ -z "$$(find . -name '*.templ' -not -path './.git/*' -print -quit)" ]]; then exit 0; fi; \
	sums() { find . -name '*_templ.go' -not -path './.git/*' -print0 | sort -z | xargs -0 -r sha256sum; }; \
	before=$$(sums); \
	$(GO) run github.com/a-h/templ/cmd/templ generate; \
	after=$$(sums); \
	if [[ "$$before" != "$$after" ]]; then \
		echo "templ: these generated files were stale (now regenerated; commit them):"; \
		comm -3 <(echo "$$before") <(echo "$$after") | awk '{print $$NF}' | sort -u || true; \
		exit 1; \
	fi

# No tracked file over 1 MB outside static/vendor/: build outputs are never
# committed (a 54 MB cmd/braid/braid once was), and .gitignore names them.
MAX_FILE_BYTES := 1048576
size-check:
	@if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then echo "size-check: not a git checkout, skipped"; exit 0; fi; \
	big=$$(git ls-files -z | grep -zv '^static/vendor/' | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > $(MAX_FILE_BYTES)'); \
	if [[ -n "$$big" ]]; then echo "size-check: tracked files over 1 MB (build outputs? git rm --cached them and add them to .gitignore):"; echo "$$big"; exit 1; fi

# The concurrent packages (runtime/..., monitor, the websocket bridge, the
# deployments) with the race detector, everything else without.
RACE_PKGS = ^$(MODULE)/(runtime|monitor|deploy|web/wsbridge)(/|$$)
test-go:
	@pkgs=$$($(GO) list ./...); \
	runtime=$$(grep -E '$(RACE_PKGS)' <<<"$$pkgs" || true); \
	others=$$(grep -vE '$(RACE_PKGS)' <<<"$$pkgs" || true); \
	if [[ -n "$$runtime" ]]; then echo "go test -race $(TEST_FLAGS) <runtime, monitor, deploy, web/wsbridge>"; $(GO) test -race $(TEST_FLAGS) $$runtime; fi; \
	if [[ -n "$$others" ]]; then echo "go test $(TEST_FLAGS) <other packages>"; $(GO) test $(TEST_FLAGS) $$others; fi

# A short run of each parser's fuzz target (designs, describe() texts,
# expressions) (the corpus in testdata/fuzz and
# the seeds run in test-go too); make fuzz FUZZTIME=10m for a long one.
# Minimizing a new interesting input may take up to -fuzzminimizetime
# (60 s by default) and is not cut short by -fuzztime: a short run that meets
# one ends in "context deadline exceeded". Keep it short.
FUZZTIME ?= 10s
FUZZ_FLAGS = -run='^$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=100x
fuzz-short:
	$(GO) test $(FUZZ_FLAGS) -fuzz='^FuzzDecode$$' ./designer
	$(GO) test $(FUZZ_FLAGS) -fuzz='^FuzzImportDescribe$$' ./compiler
	$(GO) test $(FUZZ_FLAGS) -fuzz='^FuzzCompileExpr$$' ./compiler

# make fuzz: longer fuzzing, the differential tests (peer/difftest) and
# the compiler's property test over 2000 generated designs rather than
# make test's 200.
fuzz: fuzz-short
	$(GO) test -count=1 -timeout 10m -run '^TestDifferentialSeeds$$' ./peer/difftest -seeds 2000
	$(GO) test -count=1 -timeout 10m -run '^TestRandomDesigns$$' ./compiler -designs=2000

# make test as on a new machine: a clean clone of HEAD, empty module and
# build caches; then the demo exported as a module and built outside it.
test-fresh:
	scripts/test-fresh.sh

# The inner loop: every package's tests with -short (no race detector, no
# browser, no long runs), under 3 minutes. make test stays the full check.
test-quick:
	$(GO) test -short -count=1 -p 2 -timeout 5m ./...

# The real-Kafka pass: the tests kafka/tests.txt lists, where Kafka's own
# coordinators, cleaner and leader election matter, on an Apache Kafka
# cluster each package starts (brokertest). make test runs it last; a
# listed test that skips fails it.
test-kafka:
	GO=$(GO) scripts/test-kafka.sh

test:
	@scripts/install-deps.sh || { echo "make test: FAILED (installing dependencies)"; exit 1; }
	@$(MAKE) --no-print-directory fmt-check vet tidy-check templ-check size-check test-go fuzz-short test-kafka || { echo "make test: FAILED"; exit 1; }
	@echo "make test: PASSED (gofmt, vet, go mod tidy, templ, file sizes, tests on the embedded broker, short fuzzing, tests on Apache Kafka)"
