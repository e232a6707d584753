# Everyday targets. The project's one test command is `go test ./...` (README); CI runs .ci/run.
.PHONY: help build run test test-race vet fmt fmt-check lint nocgo bench fuzz ci tidy clean

GO ?= go
BIN ?= bin

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build the server and the bench tool into ./bin
	$(GO) build -o $(BIN)/tt-media-server ./cmd/tt-media-server
	$(GO) build -o $(BIN)/tt-media-bench ./cmd/tt-media-bench

run: build ## run the server in mock-device mode with the .env / environment settings
	$(BIN)/tt-media-server

test: ## go test ./... (the README's test command)
	$(GO) test ./...

test-race: ## the test suite under the race detector, as CI runs it
	$(GO) test -race ./...

vet: ## go vet
	$(GO) vet ./...

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint: ## package boundaries + golangci-lint (pinned in tools/go.mod, built once by scripts/install-golangci-lint.sh)
	scripts/check-boundaries.sh
	$$(scripts/install-golangci-lint.sh) run ./...

nocgo: ## the build without cgo (the packages that do not need the device bridge)
	CGO_ENABLED=0 $(GO) build ./...

bench: ## the side-by-side benchmarks (scripts/bench.sh; slow)
	scripts/bench.sh

fuzz: ## the fuzz targets for a while each (scripts/fuzz.sh)
	scripts/fuzz.sh

ci: ## what CI runs (.ci/run)
	.ci/run

tidy: ## go mod tidy for the server and the tools module
	$(GO) mod tidy
	cd tools && $(GO) mod tidy

clean: ## remove ./bin
	rm -rf $(BIN)
