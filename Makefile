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
# The whole-platform tests in tests/ build only with this tag (internal/testutil/tier), so the
# unit tier (`go test -short ./...`) does not link their fourteen whole-platform binaries.
PLATFORM_TAGS := -tags platform
BENCH ?= .

.PHONY: all build install run run-tls run-cluster run-ch-cluster stop-ch-cluster test-ch-cluster ch-cluster-figures test test-short bench bench-stack fuzz generate check lint fmt-check vet imports breaking drift third-party deps clean sdk swagger-ui extension extension-check web web-types web-test web-drift

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

# Generates into a scratch folder and swaps it in. cmd/openapigen then writes gen/openapi
# (the documents as the gateway answers, OpenAPI 2 and 3.1) from protoc-gen-openapiv2's
# document and the contract's descriptors; it compiles against the new gen/go.
generate: $(BUF) third-party
	rm -rf .gen.tmp
	$(BUF) generate -o .gen.tmp
	$(BUF) build -o .gen.tmp/contract.binpb
	rm -rf gen && mv .gen.tmp/gen gen
	go run ./cmd/openapigen -swagger .gen.tmp/openapiv2/shopmind.swagger.json -image .gen.tmp/contract.binpb -out gen/openapi
	rm -rf .gen.tmp

# The SDKs from the contract (README.md, "API documents, SDKs and versioning"): the TypeScript REST types from the OpenAPI 3.1
# document (openapi-typescript) and the Connect client (protoc-gen-es), compiled to
# sdk/typescript/dist; the Python gRPC stubs with Debian's protoc and grpc_python_plugin.
# Generated code is not committed: it follows gen/ at every run. tests/sdk runs it.
PYTHON_PROTO_OUT := sdk/python
sdk: $(BUF) third-party
	./scripts/sdk-deps.sh
	rm -rf sdk/typescript/src/gen sdk/typescript/dist
	cd sdk/typescript && npx --no-install openapi-typescript ../../gen/openapi/shopmind.openapi.json -o src/gen/openapi.ts
	$(BUF) generate --template sdk/typescript/buf.gen.yaml
	cd sdk/typescript && npx --no-install tsc -p .
	rm -rf $(PYTHON_PROTO_OUT)/shopmind $(PYTHON_PROTO_OUT)/buf $(PYTHON_PROTO_OUT)/google
	protoc -Iproto -Ithird_party/googleapis -Ithird_party/protovalidate \
		--python_out=$(PYTHON_PROTO_OUT) --grpc_python_out=$(PYTHON_PROTO_OUT) \
		--plugin=protoc-gen-grpc_python=$$(command -v grpc_python_plugin) \
		$$(cd proto && find shopmind -name '*.proto' | sort) \
		buf/validate/validate.proto google/api/annotations.proto google/api/http.proto

# The web console (web/, README.md "Web console"). web-types writes the TypeScript SDK's REST
# types (sdk/typescript/src/gen/openapi.ts, the file `make sdk` writes, with the same
# openapi-typescript version) without the rest of `make sdk`; web type-checks the console
# against them (a contract change that breaks it fails here) and builds it into
# internal/console/dist, the embedded and committed build (`go build` needs no Node.js).
# web-drift, in `make check`, rebuilds and fails when the committed build differs.
web-types:
	./scripts/web-deps.sh
	cd web && npx --no-install openapi-typescript ../gen/openapi/shopmind.openapi.json -o ../sdk/typescript/src/gen/openapi.ts >/dev/null

web: web-types
	cd web && npx --no-install tsc -p . --noEmit && npx --no-install vite build --logLevel warn

# The console's unit tests (Vitest: the stream reducer on recorded streams, dates, CSV).
# Its browser tests run in `make test` (tests/web).
web-test: web-types
	cd web && npx --no-install vitest run

web-drift: web
	@if [ -n "$$(git status --porcelain -- internal/console/dist)" ]; then echo "the console's build is stale; run make web and commit internal/console/dist"; git status --porcelain -- internal/console/dist | head -20; exit 1; fi

# Refreshes the Swagger UI the gateway serves at /docs (internal/apidocs) from npm.
SWAGGER_UI_VERSION := 5.35.0
swagger-ui:
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	(cd $$tmp && npm pack --silent swagger-ui-dist@$(SWAGGER_UI_VERSION) >/dev/null && tar -xzf swagger-ui-dist-$(SWAGGER_UI_VERSION).tgz) && \
	cp $$tmp/package/{swagger-ui-bundle.js,swagger-ui-bundle.js.LICENSE.txt,swagger-ui.css,LICENSE,NOTICE} internal/apidocs/swaggerui/ && \
	sed -i 's/^const SwaggerUIVersion = .*/const SwaggerUIVersion = "$(SWAGGER_UI_VERSION)"/' internal/apidocs/apidocs.go

lint: $(BUF) third-party
	$(BUF) lint

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet $(PLATFORM_TAGS) ./...

# The layering rules of README.md (Architecture), checked on the import graph.
imports:
	go test -count=1 ./internal/archtest/

# Compares the contract with the last commit of $(BREAKING_AGAINST), from a clean export (a
# workspace, not an image: the proto module has its own breaking exceptions in buf.yaml).
breaking: $(BUF) third-party
	@if ! git rev-parse --verify -q $(BREAKING_AGAINST) >/dev/null || [ -z "$$(git ls-tree -r --name-only $(BREAKING_AGAINST) proto)" ]; then \
		echo "breaking: no contract on $(BREAKING_AGAINST) yet, nothing to compare"; exit 0; fi; \
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	git archive $(BREAKING_AGAINST) proto buf.yaml | tar -x -C $$tmp && cp -r third_party $$tmp/ && \
	$(BUF) breaking --against $$tmp

# Regenerates and fails when the committed gen/ differs.
drift: generate
	@if [ -n "$$(git status --porcelain -- gen)" ]; then echo "generated code is stale; run make generate and commit gen/"; git status --porcelain -- gen | head -20; exit 1; fi

check: lint breaking drift web-drift fmt-check vet imports extension-check

# The browser extension (extension/README.md): its npm packages, the REST types from the
# OpenAPI document (a contract change that breaks it fails here), the type check, the unit
# tests (Vitest) and the build (esbuild) into internal/crxbundle/dist, which is committed: the
# binary embeds it and serves it as the zip the version check names, so `go build` needs no
# Node.js. The zip for loading by hand: extension/out/.
extension:
	./scripts/extension-deps.sh
	cd extension && env -u SHOPMIND_EXTENSION_SERVER npm run build && npx --no-install vitest run

# Fails when the committed build differs from what the sources build.
extension-check: extension
	@if [ -n "$$(git status --porcelain -- internal/crxbundle/dist)" ]; then echo "the built extension is stale: run make extension and commit internal/crxbundle/dist"; git status --porcelain -- internal/crxbundle/dist; exit 1; fi

build:
	go build -o $(BIN)/shopmind ./cmd/shopmind

# Installs the binary and the systemd units (deploy/README.md, "systemd"); DESTDIR and
# PREFIX as usual. The environment files are the operator's (/etc/shopmind, not touched).
PREFIX ?= /usr/local
SYSTEMD_DIR ?= /etc/systemd/system
install: build
	install -D -m 0755 $(BIN)/shopmind $(DESTDIR)$(PREFIX)/bin/shopmind
	install -D -m 0644 deploy/systemd/shopmind.service $(DESTDIR)$(SYSTEMD_DIR)/shopmind.service
	install -D -m 0644 deploy/systemd/shopmind@.service $(DESTDIR)$(SYSTEMD_DIR)/shopmind@.service
	@echo "installed $(DESTDIR)$(PREFIX)/bin/shopmind and the units shopmind.service, shopmind@.service in $(DESTDIR)$(SYSTEMD_DIR)"

# Microservices mode on this machine: Debian's etcd and one process per target (two
# gateways, two tenant replicas), as deploy/README.md describes; Ctrl-C stops them all.
run-cluster: build
	./scripts/postgres.sh
	./scripts/etcd.sh
	./scripts/run-cluster.sh $(BIN)/shopmind

# The analytical store's cluster on this machine: 2 shards x 2 replicas of Debian's
# clickhouse-server on 127.0.0.1:9301-9304 and Debian's zookeeper on 127.0.0.1:2191
# (scripts/clickhouse-cluster.sh; WAREHOUSE.md "Cluster mode"). Stays up until stop-ch-cluster.
run-ch-cluster:
	./scripts/clickhouse-cluster.sh start
	@echo "SHOPMIND_ANALYTICS_URL=$(CH_CLUSTER_URL:/default=/shopmind) SHOPMIND_CLICKHOUSE_CLUSTER=shopmind make run"

stop-ch-cluster:
	./scripts/clickhouse-cluster.sh stop

# The cluster tier: the analytical store's, sandbox's, semantic layer's, analytics', crx's
# and chat's ClickHouse tests again, against the 2x2 cluster (a database per test, created
# ON CLUSTER), plus the cluster's own fault and migration tests (tests/chcluster). It
# starts the cluster and stops it at the end unless CH_CLUSTER_KEEP=1; tests/chcluster stops
# and starts the cluster's processes, so it runs alone, after the others.
# CH_CLUSTER_RUN narrows the tier (go test -run).
CH_CLUSTER_RUN ?=
CH_CLUSTER_URL := clickhouse://127.0.0.1:9301,127.0.0.1:9302,127.0.0.1:9303,127.0.0.1:9304/default
CH_CLUSTER_PKGS := ./internal/analytics/... ./internal/sqlsandbox/ ./services/analysis/semantic/ \
	./tests/platform/analysis/ ./tests/platform/crx/
# The chat's tests that read the analytical store (its tools, collected values, the offline
# agents over analysis), with the platform's store on the cluster (SHOPMIND_TEST_ANALYTICS);
# basic's orders and their push to the store (TestOrdersAndMetrics).
CH_CLUSTER_CHAT_RUN := TestEveryToolThroughTheModel|TestEntitiesFollowBasicData|TestCollectedValuesInAChatAnswer|TestOfflineAnalystAgainstAnalysis|TestOfflineTeamAgainstAnalysis
CH_CLUSTER_ENV := SHOPMIND_TEST_CLICKHOUSE_URL=$(CH_CLUSTER_URL) SHOPMIND_TEST_CLICKHOUSE_CLUSTER=shopmind
test-ch-cluster: deps
	./scripts/clickhouse-cluster.sh start
	@set -o pipefail; status=0; \
	$(CH_CLUSTER_ENV) go test $(PLATFORM_TAGS) -count=1 -json -run '$(CH_CLUSTER_RUN)' $(TEST_FLAGS) $(CH_CLUSTER_PKGS) | $(TEST_PROGRESS) || status=$$?; \
	$(CH_CLUSTER_ENV) SHOPMIND_TEST_ANALYTICS=clickhouse go test $(PLATFORM_TAGS) -count=1 -json -run '$(or $(CH_CLUSTER_RUN),$(CH_CLUSTER_CHAT_RUN))' $(TEST_FLAGS) ./tests/platform/chat/ | $(TEST_PROGRESS) || status=$$?; \
	$(CH_CLUSTER_ENV) go test $(PLATFORM_TAGS) -count=1 -json -run '$(or $(CH_CLUSTER_RUN),TestOrdersAndMetrics)' $(TEST_FLAGS) ./tests/platform/basic/ | $(TEST_PROGRESS) || status=$$?; \
	$(CH_CLUSTER_ENV) go test $(PLATFORM_TAGS) -count=1 -json -run '$(CH_CLUSTER_RUN)' $(TEST_FLAGS) ./tests/chcluster/ | $(TEST_PROGRESS) || status=$$?; \
	$(CH_CLUSTER_ENV) go test $(PLATFORM_TAGS) -count=1 -json -run '$(or $(CH_CLUSTER_RUN),TestClickHouseClusterZooKeeperOutage)' $(TEST_FLAGS) ./tests/reliability/ | $(TEST_PROGRESS) || status=$$?; \
	[ -n "$(CH_CLUSTER_KEEP)" ] || ./scripts/clickhouse-cluster.sh stop; exit $$status

# The cluster figures of the README (tests/chcluster TestScaleFigures): CH_FIGURES_ORDERS
# orders of one tenant over a year into the 2x2 cluster, a 1-shard cluster and the single
# server (databases shopmind_fig_*, kept), previews against hand-written SQL, crx batches.
CH_FIGURES_ORDERS ?= 1000000
ch-cluster-figures: deps
	./scripts/clickhouse-cluster.sh start
	$(CH_CLUSTER_ENV) SHOPMIND_CH_CLUSTER_FIGURES_ORDERS=$(CH_FIGURES_ORDERS) go test $(PLATFORM_TAGS) -count=1 -v -timeout 3h -run TestScaleFigures ./tests/chcluster/

# Starts PostgreSQL and ClickHouse when they are not running, installs etcd.
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

# Every tier (unit, contract, platform: hence the tag). cmd/testprogress prints a line as each package
# starts and ends, names the packages still running every minute, and prints the failed
# tests' output in full at the end; pipefail keeps a failure of go test itself fatal.
TEST_PROGRESS := go run ./cmd/testprogress
test: deps
	@set -o pipefail; go test $(PLATFORM_TAGS) -count=1 -json $(TEST_FLAGS) ./... | $(TEST_PROGRESS)
	$(MAKE) test-ch-cluster

# The unit tier: no database, no external server, no platform (helpers needing one skip
# under -short, see internal/testutil/tier; tests/ does not build without the platform tag);
# needs no `make deps`.
test-short:
	@set -o pipefail; go test -short -count=1 -json $(TEST_FLAGS) ./... | $(TEST_PROGRESS)

# SHOPMIND_BENCH_ORDERS sizes the analytics benchmark (10 million orders, loaded once into
# database shopmind_bench_analytics and ClickHouse database shopmind_bench, kept for later runs).
bench: deps build
	SHOPMIND_BENCH_ORDERS=$${SHOPMIND_BENCH_ORDERS:-10000000} go test $(PLATFORM_TAGS) -run '^$$' -bench '$(BENCH)' -benchmem -timeout 2h ./...

# The whole stack against a hand-written peer (cmd/benchstack): ShopMind and the peer on one
# database, loaded alternately by wrk (installed from Debian's packages when missing);
# prints the ratios of throughput and of p50/p99 latency per endpoint. STACK_FLAGS passes
# e.g. -rounds 5 -duration 10s.
STACK_FLAGS ?=
bench-stack: build
	./scripts/postgres.sh
	@command -v wrk >/dev/null || apt-get install -y wrk
	go build -o $(BIN)/benchstack ./cmd/benchstack
	$(BIN)/benchstack -shopmind $(BIN)/shopmind $(STACK_FLAGS)

# Fuzzes each parser for FUZZTIME, one target after another (go test -fuzz takes one at a
# time). `make test` already runs their seed corpora (testdata/fuzz); a crasher lands there
# too, to be kept as a regression seed. FUZZFLAGS passes e.g. -parallel 1. Minimising a new
# corpus entry may take 60s by default, a whole run's budget, hence -fuzzminimizetime.
FUZZTIME ?= 30s
FUZZFLAGS ?=
FUZZ_TARGETS := ./gateway:FuzzEnvelopeDecode ./gateway:FuzzPathRewrite ./gateway:FuzzRouteEnvironment \
	./services/basic:FuzzParseSort ./services/analysis/semantic:FuzzFormula ./services/chat/agent/offline:FuzzParsePeriod \
	./internal/sqlsandbox:FuzzRewrite
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $(FUZZFLAGS) $${t%%:*}; \
	done

clean:
	rm -rf bin third_party
