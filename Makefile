# pdfexport — `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
GO ?= go
# The version is the newest release of CHANGELOG.md (no git tag needed; see
# docs/RELEASES.md), in its development form vX.Y.Z-dev+<commit> for a tree
# past that release: one with entries under Unreleased, or one whose
# docs/RELEASES.md already names the release's commit (a tree cannot name
# its own commit, so it was committed after the release). The commit's date
# stands in for a build date, so two builds of one commit are identical.
# Outside a git checkout commit and date stay empty and --version says
# "unknown".
RELEASE := $(shell sed -n 's/^## \[\([0-9][^]]*\)\].*/v\1/p' CHANGELOG.md | head -n 1)
RELEASE_COMMIT := $(shell sed -n 's/^| $(RELEASE) | `\([0-9a-f]\{40\}\)`.*/\1/p' docs/RELEASES.md)
UNRELEASED := $(shell sed -n '/^## \[Unreleased\]/,/^## \[[0-9]/{/^## /d;/[^[:space:]]/p;}' CHANGELOG.md | head -n 1)
HEAD_SHORT := $(shell git rev-parse HEAD 2>/dev/null | cut -c1-12)
VERSION ?= $(if $(UNRELEASED)$(RELEASE_COMMIT),$(RELEASE)-dev$(if $(HEAD_SHORT),+$(HEAD_SHORT)),$(RELEASE))
COMMIT ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; } && echo $$c)
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
SOURCE_URL := https://github.com/pdfexport/pdfexport
BUILDINFO := github.com/pdfexport/pdfexport/internal/platform/buildinfo
LDFLAGS = -s -w -X $(BUILDINFO).Version=$(VERSION) -X $(BUILDINFO).Commit=$(COMMIT) -X $(BUILDINFO).Date=$(BUILD_DATE)
# Pinned Go tools, installed into ./bin on first use.
STATICCHECK_VERSION := v0.8.2
GORELEASER_VERSION := v2.15.1
CYCLONEDX_GOMOD_VERSION := v1.10.0
APIDIFF_VERSION := v0.0.0-20261113113407-e3970619a1a4
GOVULNCHECK_VERSION := v1.9.0
# The vulnerability database: that module's data/osv, as of its date.
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
TEST_TIMEOUT ?= 9m
# The nested modules: their own go.mod, so that what only their tests need
# (Kubernetes API types, KEDA's CRD schemas, the OpenAPI validator) is no
# requirement of the root module that API servers import for exportclient.
# deployments/ checks the deployment files and the release configuration;
# api/ validates every HTTP exchange the root module's tests record
# (internal/api/apitest) against api/openapi.yaml.
NESTED_MODULES := deployments api
# Where the root module's tests record the HTTP API's exchanges for api/.
API_EXCHANGES := $(CURDIR)/var/api-exchanges

.PHONY: all setup build demo test test-short lint bench clean help chaos release-snapshot release-check release-tools image
all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install redis-server, Chromium, fonts, poppler-utils (apt) and versitygw where missing
	@scripts/setup.sh

build: ## build bin/worker, bin/enqueue, bin/api and bin/allinone
	@mkdir -p bin
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/worker ./cmd/worker
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/enqueue ./cmd/enqueue
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/api ./cmd/api
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/allinone ./cmd/allinone

demo: setup build ## run the end-to-end demo: Redis + 2 workers + 7 concurrent exports + a whole manual
	$(GO) run ./examples/demo

test: setup ## run every test (race detector, real Redis/Chromium/S3 server)
	$(GO) vet ./...
	@# The previous release's binaries, for the compatibility test, built
	@# (or taken from the cache) before the packages' timeouts start.
	$(GO) test -count=1 -timeout 15m -run '^TestPreviousBinaries_BuildOnceAndRun$$' ./internal/testing/testsupport
	rm -rf $(API_EXCHANGES)
	PDFEXPORT_API_EXCHANGES=$(API_EXCHANGES) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd deployments && $(GO) vet ./... && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	@# Every exchange recorded above, against api/openapi.yaml; none is a failure.
	cd api && $(GO) vet ./... && PDFEXPORT_API_EXCHANGES=$(API_EXCHANGES) $(GO) test -count=1 ./...

test-short: ## the tests that need no server, browser or built binary, checked to start none (30 CPU-s warm)
	@GO=$(GO) scripts/check-short.sh $(NESTED_MODULES)

lint: ## gofmt, go vet, staticcheck, the vendored asynq against upstream, apidiff of exportclient, govulncheck (all pinned; offline database), no tracker numbers or figures in comments, -short starts nothing
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	@for m in $(NESTED_MODULES); do echo "vet: $$m"; (cd $$m && $(GO) vet ./... && $(GO) vet -tags release ./...) || exit 1; done
	@test -x bin/staticcheck || GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	bin/staticcheck ./...
	@for m in $(NESTED_MODULES); do echo "staticcheck: $$m"; (cd $$m && ../bin/staticcheck ./... && ../bin/staticcheck -tags release ./...) || exit 1; done
	@test -x bin/apidiff || GOBIN=$(CURDIR)/bin $(GO) install golang.org/x/exp/cmd/apidiff@$(APIDIFF_VERSION)
	scripts/apidiff.sh
	@test -x bin/govulncheck || GOBIN=$(CURDIR)/bin $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	@test -x bin/indexdb || GOBIN=$(CURDIR)/bin $(GO) install golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION)
	GO=$(GO) VULNDB_VERSION=$(VULNDB_VERSION) scripts/vulncheck.sh . $(NESTED_MODULES)
	@scripts/check-modules.sh . $(NESTED_MODULES)
	@scripts/check-vendored.sh
	@scripts/check-words.sh
	@GO=$(GO) scripts/check-short.sh $(NESTED_MODULES)

bench: setup build ## benchmarks vs same-run baselines: prints a table, writes BENCHMARKS.md (BENCH_FLAGS=-quick: harness check)
	$(GO) run ./bench $(BENCH_FLAGS)

chaos: setup ## reliability suite: fault scenarios, soak, hostile inputs, fuzzing → RELIABILITY.md (~11 min)
	@scripts/chaos.sh

release-tools: # the pinned release tools in ./bin, and the SBOM step beside them
	@test -x bin/goreleaser || GOBIN=$(CURDIR)/bin $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
	@test -x bin/cyclonedx-gomod || GOBIN=$(CURDIR)/bin $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	$(GO) build -o bin/release-sbom ./internal/platform/sbom

# GoReleaser asks git for a remote URL even for a snapshot; a checkout with
# no remote (a worktree, a fresh git init) lends it the project's for the run.
RELEASE_GIT_ENV = $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=$(SOURCE_URL))

# One build at a time: GoReleaser adds the binaries to an archive in the
# order their builds finish, so parallel builds made two snapshots of one
# commit differ in their archives' entry order (seen in CI).
RELEASE_FLAGS := --parallelism 1

release-snapshot: release-tools ## release artifacts into dist/, unpublished: binaries, archives, SHA256SUMS, SBOMs (GoReleaser, pinned)
	$(RELEASE_GIT_ENV) bin/goreleaser release --snapshot --clean $(RELEASE_FLAGS)

release-check: release-snapshot ## the snapshot, verified: SHA256SUMS, archives, SBOMs, --version, a second build byte-identical
	cd deployments && RELEASE_FLAGS='$(RELEASE_FLAGS)' $(GO) test -tags release -count=1 -v -run '^TestReleaseSnapshot$$' .

# The image of deployments/Dockerfile, labelled (OCI) with the version, the
# commit, the source and the licence. Needs a running docker or podman; the
# build pulls golang and debian base images.
# An image tag takes no "+": a development version's becomes "-".
IMAGE ?= pdfexport:$(subst +,-,$(VERSION))
image: ## build the container image (deployments/Dockerfile) with docker or podman, whichever runs
	@engine=; for e in docker podman; do command -v $$e >/dev/null || continue; \
	  if $$e info >/dev/null 2>&1; then engine=$$e; break; fi; \
	  echo "make image: $$e is installed but cannot reach its engine ($$e info fails)" >&2; done; \
	test -n "$$engine" || { echo "make image: no usable container engine: install docker (with its daemon running) or podman" >&2; exit 1; }; \
	set -x; $$engine build -f deployments/Dockerfile -t $(IMAGE) \
	  --build-arg VERSION=$(VERSION) --build-arg REVISION=$(COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) --build-arg SOURCE=$(SOURCE_URL) .

clean: ## remove build output (bin/, stray go build binaries) and demo data
	rm -rf bin/worker bin/enqueue bin/api bin/allinone bin/release-sbom var/demo dist dist.repro
	rm -f enqueue worker demo cmd/api/api cmd/enqueue/enqueue cmd/worker/worker examples/demo/demo bench/bench
