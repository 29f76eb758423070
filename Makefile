# The two commands of the README: `make demo` and `make test`.
GO ?= go

.PHONY: demo test test-load redis-suite deps build fuzz

build:
	$(GO) build -o bin/kavach ./cmd/kavach

deps:
	./scripts/deps.sh

# Kavach's main job, end to end, on a fresh machine.
demo: deps build
	./scripts/demo.sh

# The whole test suite; what CI runs.
test: deps
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting" >&2; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 60m ./...

# The tests that grade or replay again and again beside stress-ng, at
# their full counts (150 grades of one, ten of each candidate, ...).
# `make test` runs each a fifth as often, at least twice
# (internal/loadtest), so that the suite has headroom on a loaded machine.
test-load: deps
	KAVACH_LOAD=full $(GO) test -race -count=1 -timeout 60m -run 'UnderLoad' ./...

# Redis's own test suite through kavach record, replayed on the same
# build (docs/redis-suite.md): thirteen units, a few minutes. make test
# runs four of them (internal/redissuite).
redis-suite: deps
	./scripts/redis-suite.sh

# Each fuzz target for a short while (not part of `make test`, which runs
# their seed corpora).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run=XXX -fuzz=FuzzReader -fuzztime=$(FUZZTIME) ./fixtures/
	$(GO) test -run=XXX -fuzz=FuzzDecodeRender -fuzztime=$(FUZZTIME) ./htmlreport/
	$(GO) test -run=XXX -fuzz=FuzzSplit -fuzztime=$(FUZZTIME) ./integrations/redis/
	$(GO) test -run=XXX -fuzz=FuzzParse$$ -fuzztime=$(FUZZTIME) ./integrations/redis/
	$(GO) test -run=XXX -fuzz=FuzzParseCommand -fuzztime=$(FUZZTIME) ./integrations/redis/
	$(GO) test -run=XXX -fuzz=FuzzPeekName -fuzztime=$(FUZZTIME) ./integrations/redis/
	$(GO) test -run=XXX -fuzz=FuzzSplit -fuzztime=$(FUZZTIME) ./integrations/axum/
	$(GO) test -run=XXX -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./invariants/
	$(GO) test -run=XXX -fuzz=FuzzParseSummary -fuzztime=$(FUZZTIME) ./recount/
	$(GO) test -run=XXX -fuzz=FuzzLineConn -fuzztime=$(FUZZTIME) ./mcpserver/
	$(GO) test -run=XXX -fuzz=FuzzMaskError -fuzztime=$(FUZZTIME) .
	$(GO) test -run=XXX -fuzz=FuzzRawCommandDigests -fuzztime=$(FUZZTIME) ./integrations/redis/
