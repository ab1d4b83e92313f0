# ShopMind build, generation, checks and tests. Every target works offline from the
# Go module proxy: buf is built from source, the plugins run as `go tool`.
SHELL := /bin/bash
BUF_VERSION := v1.75.0
BIN := $(CURDIR)/bin
BUF := $(BIN)/buf
GOMODCACHE := $(shell go env GOMODCACHE)
GOOGLEAPIS_MOD := github.com/grpc-ecosystem/grpc-gateway@v1.16.0
PROTOVALIDATE_MOD := github.com/bufbuild/protovalidate@v1.2.2
# The ref that `make breaking` compares the contract against.
BREAKING_AGAINST ?= main
TEST_FLAGS ?=
BENCH ?= .

.PHONY: all build run run-tls test test-short bench fuzz generate check lint fmt-check vet imports breaking drift third-party deps clean

all: build

$(BUF):
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

# Copies googleapis and protovalidate protos out of the Go module cache (not committed).
third-party: third_party/.stamp
third_party/.stamp: Makefile
	go mod download $(GOOGLEAPIS_MOD) $(PROTOVALIDATE_MOD)
	rm -rf third_party && mkdir -p third_party/googleapis/google third_party/protovalidate
	cp -r $(GOMODCACHE)/$(GOOGLEAPIS_MOD)/third_party/googleapis/google/api third_party/googleapis/google/
	cp -r $(GOMODCACHE)/$(PROTOVALIDATE_MOD)/proto/protovalidate/buf third_party/protovalidate/
	find third_party -name BUILD.bazel -delete
	chmod -R u+w third_party
	touch $@

# Generates into a scratch folder and swaps it in, so gen/ is never half-written.
generate: $(BUF) third-party
	rm -rf .gen.tmp
	$(BUF) generate -o .gen.tmp
	rm -rf gen && mv .gen.tmp/gen gen && rm -rf .gen.tmp

lint: $(BUF) third-party
	$(BUF) lint

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...

# The layering rules of README.md (Architecture), checked on the import graph.
imports:
	go test -count=1 ./internal/archtest/

# Compares the contract with the last commit of $(BREAKING_AGAINST), built from a clean export.
breaking: $(BUF) third-party
	@if ! git rev-parse --verify -q $(BREAKING_AGAINST) >/dev/null || [ -z "$$(git ls-tree -r --name-only $(BREAKING_AGAINST) proto)" ]; then \
		echo "breaking: no contract on $(BREAKING_AGAINST) yet, nothing to compare"; exit 0; fi; \
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	git archive $(BREAKING_AGAINST) proto buf.yaml | tar -x -C $$tmp && cp -r third_party $$tmp/ && \
	(cd $$tmp && $(BUF) build -o image.binpb) && $(BUF) breaking --against $$tmp/image.binpb

# Regenerates and fails when the committed gen/ differs.
drift: generate
	@if [ -n "$$(git status --porcelain -- gen)" ]; then echo "generated code is stale; run make generate and commit gen/"; git status --porcelain -- gen | head -20; exit 1; fi

check: lint breaking drift fmt-check vet imports

build:
	go build -o $(BIN)/shopmind ./cmd/shopmind

# Starts PostgreSQL (and later ClickHouse/etcd) when they are not running.
deps:
	./scripts/test-deps.sh

run: build
	./scripts/postgres.sh
	@echo "ShopMind: REST gateway http://$${SHOPMIND_HTTP_ADDR:-127.0.0.1:8080}  gRPC $${SHOPMIND_GRPC_ADDR:-127.0.0.1:9090}"
	@echo "  try: curl -s localhost:8080/healthz ; grpcurl -plaintext localhost:9090 list"
	@echo "  login: tenant demo, user admin, password $${SHOPMIND_ADMIN_PASSWORD:-admin123}"
	SHOPMIND_DEMO_DATA=$${SHOPMIND_DEMO_DATA:-true} $(BIN)/shopmind serve

# Like run, over HTTPS with HTTP/2, using a self-signed certificate for localhost written to
# the git-ignored .devcert/ (reused while valid). curl needs --cacert .devcert/cert.pem.
DEVCERT_DIR := $(CURDIR)/.devcert
run-tls: build
	./scripts/postgres.sh
	$(BIN)/shopmind devcert --dir $(DEVCERT_DIR) >/dev/null
	@echo "ShopMind: REST gateway https://$${SHOPMIND_HTTP_ADDR:-127.0.0.1:8080}  gRPC $${SHOPMIND_GRPC_ADDR:-127.0.0.1:9090}"
	@echo "  try: curl --cacert $(DEVCERT_DIR)/cert.pem https://localhost:8080/healthz"
	SHOPMIND_TLS_CERT_FILE=$(DEVCERT_DIR)/cert.pem SHOPMIND_TLS_KEY_FILE=$(DEVCERT_DIR)/key.pem \
		SHOPMIND_DEMO_DATA=$${SHOPMIND_DEMO_DATA:-true} $(BIN)/shopmind serve

# Every tier (unit, contract, platform). cmd/testprogress prints a line as each package
# starts and ends, names the packages still running every minute, and prints the failed
# tests' output in full at the end; pipefail keeps a failure of go test itself fatal.
TEST_PROGRESS := go run ./cmd/testprogress
test: deps
	@set -o pipefail; go test -count=1 -json $(TEST_FLAGS) ./... | $(TEST_PROGRESS)

# The unit tier: no database, no external server, no platform (helpers needing one skip
# under -short, see internal/testutil/tier); needs no `make deps`.
test-short:
	@set -o pipefail; go test -short -count=1 -json $(TEST_FLAGS) ./... | $(TEST_PROGRESS)

# SHOPMIND_BENCH_ORDERS sizes the analytics benchmark (10 million orders, loaded once into
# database shopmind_bench_analytics and ClickHouse database shopmind_bench, kept for later runs).
bench: deps build
	SHOPMIND_BENCH_ORDERS=$${SHOPMIND_BENCH_ORDERS:-10000000} go test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 2h ./...

# Fuzzes each parser for FUZZTIME, one target after another (go test -fuzz takes one at a
# time). `make test` already runs their seed corpora (testdata/fuzz); a crasher lands there
# too, to be kept as a regression seed. FUZZFLAGS passes e.g. -parallel 1. Minimising a new
# corpus entry may take 60s by default, a whole run's budget, hence -fuzzminimizetime.
FUZZTIME ?= 30s
FUZZFLAGS ?=
FUZZ_TARGETS := ./gateway:FuzzEnvelopeDecode ./gateway:FuzzPathRewrite ./gateway:FuzzRouteEnvironment \
	./services/basic:FuzzParseSort ./services/analysis/semantic:FuzzFormula ./services/chat/agent:FuzzParsePeriod
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $(FUZZFLAGS) $${t%%:*}; \
	done

clean:
	rm -rf bin third_party
