# Tollgate. `make run` starts the gateway on its embedded default;
# `make test` passes every test. Both do their own set-up.

GO        ?= go
BIN       := bin
PLUGINS   := sim openai anthropic gemini openai-compatible suno elevenlabs tavily syncso
GOFLAGS_B := -trimpath
# `tollgate version` says which build this is: the tag (or dev), the commit
# and the build date, set at link time.
VERSION   ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
FUZZTIME  ?= 2000x
# make fuzz-long: each fuzz target runs this long (nightly-style).
FUZZTIME_LONG ?= 5m
# make run serves /metrics here (a loopback listener of its own).
METRICS_LISTEN ?= 127.0.0.1:9090
# make test lists packages as they finish and sums up at the end.
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.13.0
# TEST_JSON=FILE keeps the tests' go test -json record there (.ci/run
# counts the kinds of test that ran in it: internal/testkind).
TEST_JSON ?=

.PHONY: all build plugins run install test test-setup fuzz fuzz-long bench soak proto lint clean deps

all: build

deps:
	$(GO) mod download

# The gateway and every vendor plugin, side by side (plugins are found
# beside the tollgate binary).
build: deps plugins
	$(GO) build $(GOFLAGS_B) -ldflags "$(LDFLAGS)" -o $(BIN)/tollgate ./cmd/tollgate

plugins: deps
	@mkdir -p $(BIN)
	@for p in $(PLUGINS); do \
		echo "building $(BIN)/tollgate-plugin-$$p"; \
		$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-plugin-$$p ./cmd/tollgate-plugin-$$p || exit 1; \
	done

run: build
	./$(BIN)/tollgate serve --metrics-listen $(METRICS_LISTEN)

# tollgate and its plugins (which sit beside it) into $GOBIN, or
# $GOPATH/bin, for those who want `tollgate` on their PATH.
install: deps
	$(GO) install $(GOFLAGS_B) -ldflags "$(LDFLAGS)" ./cmd/tollgate $(PLUGINS:%=./cmd/tollgate-plugin-%)
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
		echo "installed tollgate and its plugins into $$dir"; \
		case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH: add it (export PATH=\"$$dir:\$$PATH\")";; esac

# Unit, integration (real binary and plugin processes) and conformance tests
# with the race detector, each package listed as it finishes; each
# micro-benchmark once so none can rot; short fuzz runs of the decoders and
# translators. test-setup says what the tests need and installs it when it
# can (README: "What make test sets up").
test: deps lint test-setup
	$(GOTESTSUM) --format pkgname $(if $(TEST_JSON),--jsonfile $(TEST_JSON)) -- -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./...
	$(MAKE) fuzz

test-setup:
	@./.ci/test-setup.sh

fuzz:
	@./.ci/fuzz.sh $(FUZZTIME)

# Every fuzz target for FUZZTIME_LONG each (5 minutes: about two hours in
# all), nightly-style; a failing input lands in the package's
# testdata/fuzz/ and becomes a regression seed once committed.
fuzz-long:
	@./.ci/fuzz.sh $(FUZZTIME_LONG)

bench: build
	$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-upstream ./cmd/tollgate-upstream
	$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-bench ./cmd/tollgate-bench
	./$(BIN)/tollgate-bench --bin $(BIN) --duration $(or $(BENCH_DURATION),5s) --out bench-results --check $(BENCH_FLAGS); \
		st=$$?; \
		mkdir -p bench-results/postgres; \
		./$(BIN)/tollgate-bench --bin $(BIN) --duration $(or $(BENCH_DURATION),5s) --out bench-results/postgres \
			--store postgres --no-proxy-reference || st=1; \
		$(GO) run ./internal/ledgerbench -rows $(or $(LEDGER_ROWS),1000000) > bench-results/ledger.md || st=1; \
		cat bench-results/ledger.md; \
		$(GO) run ./internal/kbbench -pages $(or $(KB_PAGES),100000) -queries 200 > bench-results/kb.md || st=1; \
		cat bench-results/kb.md; \
		$(GO) run ./internal/consolebench -rows $(or $(CONSOLE_ROWS),100000) > bench-results/console.md || st=1; \
		cat bench-results/console.md; \
		$(GO) test -run '^$$' -bench . -benchmem ./... || st=1; exit $$st

# The gateway and its real plugins on loopback under c=64 chat and media
# for SOAK_DURATION (30 minutes): RSS, goroutines, open files and p99 per
# minute into bench-results/soak.md and soak.json; exits 1 unless they
# stay flat (docs/operations.md, "Soak").
soak: build
	$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-upstream ./cmd/tollgate-upstream
	$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-soak ./cmd/tollgate-soak
	./$(BIN)/tollgate-soak --bin $(BIN) --duration $(or $(SOAK_DURATION),30m) --interval $(or $(SOAK_INTERVAL),1m) --out bench-results

proto:
	@command -v protoc >/dev/null || (apt-get update -qq && apt-get install -y -qq protobuf-compiler)
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative proto/vendorplugin/v1/vendor.proto proto/vendorplugin/v1/jobs.proto

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '\.pb\.go$$'); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN)

# Claude Code, Codex and the openai, Anthropic and Google JS SDKs, pinned in
# e2e/agents/package-lock.json and installed into .e2e/node, run unmodified
# against the embedded default and against the vendor simulators behind
# the real plugins (docs/agents.md). Needs node and npm; not part of test.
.PHONY: e2e-agents
e2e-agents: build
	$(GO) build $(GOFLAGS_B) -o $(BIN)/tollgate-upstream ./cmd/tollgate-upstream
	./e2e/agents/install.sh
	node e2e/agents/run.mjs
