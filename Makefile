# cairn — build, test, benchmark.
# Needs Go (the machine image has it at /usr/local/go); Debian packages for
# benchmarks (ninja-build, snakemake, hyperfine) are installed on demand.

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
BIN := bin
CAIRN := $(BIN)/cairn
FUZZTIME ?= 30s
PKGS ?= ./...
# go-nvml's cgo code uses NVML calls its headers mark deprecated: without
# this, a first build prints a page of warnings about code that is not ours.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS
# The run report's browser tests need chromium: `make test` installs it
# when missing (scripts/chromium-deps.sh), and where it cannot they skip.
# The real model server's tests (e2e/llamacpp) need llama-cpp-python: `make
# test` installs it from wheels built before (`make llama-deps` builds
# llama.cpp once: many minutes), and where there are none they skip.
# The test recipe pipes go test into its summary; pipefail keeps go test's
# failure as the recipe's.
SHELL := /bin/bash

.PHONY: all build sim test test-third-party test-short vet cross fmt fmt-check tidy-check bench crosscheck llama-deps llama-check fuzz fuzz-short demo demo-optimizer demo-decision gpu-check clean

all: build

build:
	$(GO) build -o $(CAIRN) ./cmd/cairn

# The simulated workloads of the demo and the end-to-end tests (stand-ins
# for the real preflight, RULER and AIME24 scripts; see pipelines/README.md).
sim:
	$(GO) build -o $(BIN)/sim/ ./sim/work/... ./cmd/cairn-sim-model

# The crash points (engine/failpoint) are compiled in only with the tag
# cairn_failpoints (engine/crashtest builds cairn so): vet that build too.
vet:
	$(GO) vet ./...
	$(GO) vet -tags cairn_failpoints ./engine/failpoint ./engine/store ./engine/runlog ./engine

# cairn builds, and vets, for the systems it is used on besides this one
# (CI runs this): 32-bit Linux, arm64 Linux and macOS on Apple silicon,
# without cgo (so without NVML, which cairn uses on Linux with cgo only).
# Every target is tried; the status is non-zero when any failed, and the
# last line names them.
CROSS ?= linux/386 linux/arm64 darwin/arm64
cross:
	@failed=; for t in $(CROSS); do \
		echo "cross: $$t"; \
		export CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/}; \
		$(GO) build ./... && $(GO) vet ./... || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "cross: failed for$$failed"; exit 1; fi; \
	echo "cross: $(CROSS) build and vet"

# Package results and failing tests' output as they come, then each
# skipped test with its reason, then one line: "N passed, N failed,
# N skipped" (scripts/testsum). The status is non-zero on any
# failure.
test: vet test-third-party
	@bash scripts/chromium-deps.sh || true
	@CAIRN_LLAMA_BUILD=0 bash scripts/llama-deps.sh || true
	@$(GO) build -o $(BIN)/testsum ./scripts/testsum
	@set -o pipefail; $(GO) test -json -race -count=1 -timeout 30m $(PKGS) 2>&1 | $(BIN)/testsum

# The patched modules in third_party/ pass their own test suites and the
# tests that hold each patch to upstream's behaviour (third_party/README.md).
test-third-party:
	@for m in third_party/*/; do (cd $$m && $(GO) vet ./... && $(GO) test -count=1 ./...) || exit 1; done

# The aggregation against statsmodels, scipy and numpy (docs/aggregate.md):
# installs Debian's python3-scipy and python3-statsmodels when missing.
crosscheck:
	bash scripts/crosscheck-deps.sh
	$(GO) test -count=1 -run '^TestCrossCheck$$' -v ./stages/aggregate

# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], pinned)
# and gguf in build/pyenv-llama, for the tests that run a real model server
# (e2e/llamacpp, part of make test): the first install builds llama.cpp
# (many minutes), later ones take the wheels kept in build/wheels-llama.
llama-deps:
	bash scripts/llama-deps.sh

llama-check: llama-deps
	CAIRN_REQUIRE_LLAMA=1 $(GO) test -count=1 -v ./e2e/llamacpp

test-short:
	$(GO) test -short -count=1 ./...

# third_party/ holds patched copies of other projects' modules, kept as
# their authors format them (third_party/README.md).
fmt:
	gofmt -w $$(git ls-files '*.go' ':!third_party')
	$(CAIRN) fmt --recursive pipelines testdata/valid 2>/dev/null || true

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' ':!third_party')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# go.mod and go.sum are as go mod tidy leaves them (the diff shown otherwise).
tidy-check:
	$(GO) mod tidy -diff

bench: build
	bash bench/run.sh

# Every fuzzer for FUZZTIME each, one after the other (scripts/fuzz.sh). A
# failing fuzzer does not stop the others: each one's result is listed at
# the end, and the status is non-zero when any failed (a failing input is
# written under the package's testdata/fuzz, where go test then runs it as a
# test).
FUZZERS := ./engine/plan:FuzzPipeline ./dsl:FuzzParseInPieces ./dsl:FuzzFastParse \
	./engine/memo:FuzzReadMemo ./storage/wal:FuzzRead ./dsl/addrs:FuzzNodeAddr ./dsl/addrs:FuzzParse \
	./stages/modelcache:FuzzParse ./dsl/jsonwrite:FuzzString ./dsl/jsonwrite:FuzzRawAsIs \
	./stages/items:FuzzScoresLine ./stages/items:FuzzDecodeReply ./engine/plan:FuzzEnvelopeJSON ./dsl:FuzzDecodeJSON \
	./dsl:FuzzNumberText ./engine/store:FuzzUnmarshalRecordIsEncodingJSON

fuzz:
	@GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZERS)

# A short run of every fuzzer, for CI.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s

demo: build sim
	bash pipelines/demo.sh

# Seed 002's optimizer grid with the simulated task model and methods. It
# builds only the two programs the demo runs, in one go build (linked in
# parallel), not the other simulated workloads.
demo-optimizer:
	$(GO) build -o $(BIN)/ ./cmd/cairn ./cmd/cairn-sim-model
	bash pipelines/demo-optimizer.sh

# Seed 003's decision protocol with a simulated training job (see
# pipelines/demo-decision.sh).
demo-decision: build sim
	bash pipelines/demo-decision.sh

gpu-check: build
	bash scripts/gpu-check.sh

clean:
	rm -rf $(BIN)
