# musterd's Makefile. The two commands the README promises:
#   make run   runs the daemon on the bundled example config
#   make test  runs go vet and every test with the race detector
# Anything either needs is installed here, pinned, under .cache/ (git-ignored).

GO      ?= go
BIN     := bin
CONFIG  ?= examples/config
# Status files of make run go here, not into the example config.
STATE   ?= .cache/state
LISTEN  ?= 127.0.0.1:8090
GOFLAGS ?=

.PHONY: all build run test vet fmt bench bench-go clean

all: build

# bin/mcp-fake is the small MCP server that examples/config runs.
build:
	$(GO) build -o $(BIN)/musterd ./cmd/musterd
	$(GO) build -o $(BIN)/mcp-fake ./cmd/mcp-fake

run: build
	$(BIN)/musterd run --config-dir $(CONFIG) --state-dir $(STATE) --listen $(LISTEN)

vet:
	$(GO) vet ./...

# The suite runs with the race detector on this 2-core machine well inside
# CI's limit; -count=1 so a cached pass never hides a flaky one.
test: vet npm-servers
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) test -race -count=1 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# The benchmark harness (internal/benchharness): every key of issue #7 in
# one run, each beside what it is compared with, the daemon-level ones
# through the built binary. Prints the table (kept in bench/out/) and writes
# bench/results.json. Takes about 5 minutes on the 2-core machine.
bench: build
	@mkdir -p bench/out
	$(GO) run ./internal/benchharness -musterd $(BIN)/musterd -out bench/results.json | tee bench/out/table.md

# The Go benchmarks of single stages, for profiling one of them:
#   make bench-go PKG=./pkg/bus/ ARGS='-cpuprofile bench/out/cpu.prof'
PKG  ?= ./pkg/... ./cmd/...
ARGS ?=
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(ARGS) $(PKG)

clean:
	rm -rf $(BIN)

# A real third-party MCP server for the supervisor's tests, at a pinned
# version, installed with npm under .cache/npm when node is present. Without
# node the target says so and the tests that need the server skip.
NPM_PREFIX                := .cache/npm
SERVER_EVERYTHING_VERSION := 2026.8.31
NPM_SERVER_EVERYTHING     := @modelcontextprotocol/server-everything@$(SERVER_EVERYTHING_VERSION)
# Names the installed version, so that a new pin installs again.
NPM_SERVERS_STAMP         := $(NPM_PREFIX)/.installed-server-everything-$(SERVER_EVERYTHING_VERSION)

.PHONY: npm-servers

npm-servers:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "npm-servers: node or npm not found; not installing $(NPM_SERVER_EVERYTHING) (tests that need it will skip)"; \
	elif [ ! -f $(NPM_SERVERS_STAMP) ]; then \
		mkdir -p $(NPM_PREFIX) && \
		npm install --prefix $(NPM_PREFIX) --no-audit --no-fund --save-exact $(NPM_SERVER_EVERYTHING) && \
		touch $(NPM_SERVERS_STAMP); \
	fi
