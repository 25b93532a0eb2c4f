# pdfexport — `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/pdfexport/pdfexport/internal/buildinfo.Version=$(VERSION)
# Pinned Go tools, installed into ./bin on first use.
STATICCHECK_VERSION := v0.8.2
TEST_TIMEOUT ?= 9m

.PHONY: all setup build demo test test-short lint bench clean help chaos
all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install redis-server, Chromium, fonts, poppler-utils (apt) and versitygw where missing
	@scripts/setup.sh

build: ## build bin/worker, bin/enqueue and bin/api
	@mkdir -p bin
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/worker ./cmd/worker
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/enqueue ./cmd/enqueue
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/api ./cmd/api

demo: setup build ## run the end-to-end demo: Redis + 2 workers + 7 concurrent exports + a whole manual
	$(GO) run ./examples/demo

test: setup ## run every test (race detector, real Redis/Chromium/S3 server)
	$(GO) vet ./...
	@# The previous release's binaries, for the compatibility test, built
	@# (or taken from the cache) before the packages' timeouts start.
	$(GO) test -count=1 -timeout 15m -run '^TestPreviousBinaries_BuildOnceAndRun$$' ./internal/testsupport
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

test-short: ## the tests that need no server, browser or built binary (30 CPU-s warm)
	$(GO) test -short -count=1 ./...

lint: ## gofmt, go vet, staticcheck (pinned), the vendored asynq against upstream
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	@test -x bin/staticcheck || GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	bin/staticcheck ./...
	@scripts/check-vendored.sh

bench: setup build ## benchmarks vs same-run baselines: prints a table, writes BENCHMARKS.md (BENCH_FLAGS=-quick: harness check)
	$(GO) run ./bench $(BENCH_FLAGS)

chaos: setup ## reliability suite: fault scenarios, soak, hostile inputs, fuzzing → RELIABILITY.md (~11 min)
	@scripts/chaos.sh

clean: ## remove build output (bin/, stray go build binaries) and demo data
	rm -rf bin/worker bin/enqueue bin/api var/demo
	rm -f enqueue worker demo cmd/api/api cmd/enqueue/enqueue cmd/worker/worker examples/demo/demo bench/bench
