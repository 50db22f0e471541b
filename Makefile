# heddle's build. `make test` is what CI runs (.ci/run); `make demo` runs the
# shipped example; `make soak` runs the soak (minutes, not part of make test).
GO        ?= go
BIN       := bin
PKGS      := ./...
STATICCHECK_VERSION := v0.8.2
FUZZTIME  ?= 20s

.PHONY: all build demo test test-deps test-integration test-short lint fmt vet staticcheck fuzz bench calltime bench-overhead bench-compare soak faults docs release clean

all: build

# bin/heddle (the stock command), the example and test servers, and
# bin/incidents-worker: the command with the example application's use cases.
build:
	$(GO) build -o $(BIN)/ ./cmd/... ./examples/incidents/cmd/incidents-worker

# The main job on the shipped example configuration, with the example
# application's worker (the shipped example grants its use case, which the
# stock bin/heddle does not carry): examples/demo.sh builds the SQLite
# warehouse, starts the example remote agent on 127.0.0.1:8091 and stops it
# at the end, compiles the configuration, opens the runtime (the example
# servers, the warehouse, the use case, the agent), shows what each agent may
# use, makes one call of each kind of grant and prints the dependency report.
demo: build
	examples/demo.sh

# Every test, with the race detector. Tests that need software from npm or a
# PostgreSQL server skip with a reason when it is absent, unless CI=true.
# `make test-deps` installs the npm part (integration/README.md). gotestsum
# runs go test and ends with a summary: every test that was skipped, with its
# reason, then every failure with its output.
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM         := $(GO) run gotest.tools/gotestsum@$(GOTESTSUM_VERSION) --format pkgname --format-hide-empty-pkg --

test:
	$(GOTESTSUM) -race -count=1 $(PKGS)

# Installs what the integration tests run against; quick when up to date.
test-deps:
	integration/setup.sh

# The tests against real third-party servers only, their software installed.
test-integration: test-deps
	$(GOTESTSUM) -race -count=1 ./integration/

test-short:
	$(GO) test -short $(PKGS)

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck $(PKGS)

# Runs every fuzz target for FUZZTIME each, one after the other, and prints
# a table of each one's executions and new inputs, also written to
# fuzz-results.txt (internal/fuzzrun). About twelve minutes on two cores
# with the default 20s, a build per target included. A target that fails fails
# the run, naming it and the input it wrote to its testdata. FUZZ narrows the
# targets by name (make fuzz FUZZ=ParseYAML); each new input is minimized
# for at most FUZZMINIMIZETIME. make test runs every target's seeds.
FUZZ             ?= .
FUZZMINIMIZETIME ?= 1s

fuzz:
	$(GO) run ./internal/fuzzrun -fuzztime $(FUZZTIME) -minimizetime $(FUZZMINIMIZETIME) -run '$(FUZZ)' -out fuzz-results.txt $(PKGS)

# The benchmarks of docs/performance.md: heddle's call path and start-up side
# by side with the raw go-sdk client, the invoke API over HTTP beside the
# in-process toolset and a minimal hand-written front door, the name index,
# and the compiler. About seven minutes on two cores. BENCH narrows them (make bench BENCH=CallOverhead);
# BENCHTIME sets each one's duration. A full run (BENCH left at .) then runs
# make calltime, which keeps the tables of where a call's time goes current.
BENCH     ?= .
BENCHTIME ?= 2s
BENCHPKGS := ./runtime/ ./serve/ ./grants/mcpkind/internal/mcpstdio/ ./grants/mcpkind/internal/jsonmsg/ ./internal/argcheck/ ./internal/resultcap/ ./internal/calldeadline/ ./compile/ ./grants/usecasekind/usecaselive/ ./grants/sqlkind/sqllive/ ./auth/plugin/

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem -count=1 $(BENCHPKGS)
	@if [ '$(BENCH)' = '.' ]; then $(MAKE) --no-print-directory calltime; fi

# Where a call's CPU time goes, per transport (docs/performance.md, between
# its calltime markers): BenchmarkCall over stdio, http-proc and
# http-proc-json, heddle's side and raw go-sdk's, each CPU-profiled in a
# process of its own, every sample put in one bucket (heddle, JSON, go-sdk's
# session, transport, kernel, Go runtime) by the rule the generated text
# states (internal/calltime). CALLTIME_CALLS calls per run; about half a
# minute on two cores.
CALLTIME_CALLS ?= 6000

calltime:
	$(GO) run ./internal/calltime -calls $(CALLTIME_CALLS)

# The median-call overhead, measured as docs/performance.md describes it:
# ten runs of BenchmarkCallOverhead (heddle against raw go-sdk, and a second
# raw session against the first as a control), summarised by benchstat. About
# four minutes. The raw output stays in bench-overhead.txt.
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

bench-overhead:
	$(GO) test -run '^$$' -bench 'BenchmarkCallOverhead' -benchtime 3000x -benchmem -count=10 ./runtime/ | tee bench-overhead.txt
	$(GO) run $(BENCHSTAT) bench-overhead.txt

# heddle beside other MCP clients (bench/, a module of its own; its README
# says how): heddle's toolset, raw go-sdk, mcp-go, the TypeScript SDK (run by
# node), a client with no MCP library and a go-sdk connection per call,
# driving the same test server over stdio and Streamable HTTP with 1, 8 and
# 64 callers, in interleaved rounds; and the start-up of 1, 10 and 50 stdio
# servers and the heap per held session. One markdown table, printed and
# written to bench/compare.md, and every round's measurements in
# bench/compare.csv. About fifteen minutes on two cores;
# BENCH_COMPARE_FLAGS=-quick for seconds. npm ci runs only when bench/ts's
# lockfile changed.
BENCH_COMPARE_FLAGS ?=

bench/ts/node_modules/.package-lock.json: bench/ts/package.json bench/ts/package-lock.json
	npm ci --prefix bench/ts --no-audit --no-fund
	@touch $@

bench-compare: bench/ts/node_modules/.package-lock.json
	cd bench && $(GO) run . -out compare.md -samples compare.csv $(BENCH_COMPARE_FLAGS)

# The soak of docs/reliability.md (integration/soak, behind the soak build
# tag): heddle serve in a process of its own in front of two test servers of
# each transport (stdio, Streamable HTTP, SSE) and an SQLite source, 64
# callers for SOAK_DURATION after a warm-up, while servers are killed, hung
# and the configuration reloaded. It fails on a call past its deadline, a
# failure without a code, growth of serve's goroutines, open files or memory,
# or a process left behind. Built without -race: it measures. The report is
# printed and written to soak-results.md and soak-results.json (serve's log
# beside them, soak-results-serve.log); about five minutes at the default
# duration, `make soak SOAK_DURATION=20s` for a quick check. A longer
# SOAK_DURATION needs SOAK_TIMEOUT above it plus two minutes.
SOAK_DURATION ?= 3m
SOAK_TIMEOUT  ?= 20m
SOAK_OUT      ?= $(CURDIR)/soak-results.md

soak:
	SOAK_DURATION=$(SOAK_DURATION) SOAK_OUT=$(SOAK_OUT) $(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout $(SOAK_TIMEOUT) ./integration/soak/

# The fault matrix (integration/faults, docs/reliability.md), every cell of
# it: make test runs all but the slow one (100,000 tools), which this adds. With -race, as make test. About four minutes on two cores.
faults:
	HEDDLE_FAULTS=all $(GO) test -race -count=1 -timeout 20m ./integration/faults/

# docs/errors.md, and the JSON Schemas of api.yaml and agent.yaml (schema/).
docs:
	$(GO) run ./internal/gendocs
	$(GO) run ./internal/schemagen/cmd

# The release in dist/ (docs/operations.md#releases-and-the-container-image):
# per platform an archive of heddle, built with CGO_ENABLED=0 -trimpath and
# the version and commit stamped (heddle version shows them); the linux
# platforms' container image as an OCI tarball, built by ko without a Docker
# daemon and checked; and SHA256SUMS. VERSION defaults to git describe
# (v0.0.0-COMMIT without a tag, -dirty with changes); PLATFORMS, to linux and
# darwin, amd64 and arm64, narrows the targets (make release
# PLATFORMS=linux/amd64). About five minutes on two cores from a cold build
# cache, under one when warm. internal/release/release.sh says how.
VERSION   ?=
PLATFORMS ?=

release:
	VERSION='$(VERSION)' PLATFORMS='$(PLATFORMS)' internal/release/release.sh

clean:
	rm -rf $(BIN) dist
