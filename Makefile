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

.PHONY: all build run test vet fmt bench clean

all: build

build:
	$(GO) build -o $(BIN)/musterd ./cmd/musterd

run: build
	$(BIN)/musterd run --config-dir $(CONFIG) --state-dir $(STATE) --listen $(LISTEN)

vet:
	$(GO) vet ./...

# The suite runs with the race detector on this 2-core machine well inside
# CI's limit; -count=1 so a cached pass never hides a flaky one.
test: vet
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) test -race -count=1 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Go benchmarks: bus delivery beside a channel and raw EventBus, and no-op
# reconciles through the pipeline beside a plain workqueue loop.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

clean:
	rm -rf $(BIN)
