# Token Turing Machine robot policy node. `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
BIN := bin/ttm

# Debian packages the project needs: OpenBLAS and OpenCV for cgo, ROS 1 for
# the node and its integration tests, PyTorch for the reference TTM the
# parity tests compare against.
APT_PACKAGES := gcc g++ pkg-config libopenblas-dev libopencv-dev \
	ros-core python3-sensor-msgs python3-geometry-msgs python3-std-srvs python3-diagnostic-msgs \
	python3-numpy python3-torch

# goroslib's checksums are in go.sum; the checksum database cannot serve them here.
export GONOSUMDB := github.com/bluenviron
export GOFLAGS := -mod=readonly

.PHONY: help setup build test test-short bench soak demo fuzz install-launch clean

help:
	@echo "make setup   install the Debian packages and Go modules (idempotent)"
	@echo "make build   build $(BIN)"
	@echo "make test    vet, format check, all tests (OpenBLAS build and pure-Go build)"
	@echo "make bench   Go benchmarks and the TTM step benchmark, with the PyTorch baseline"
	@echo "make demo    the main job on its embedded default"
	@echo "make fuzz    run each fuzz target for FUZZTIME (default 30s)"

setup:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		SUDO=$$([ $$(id -u) -eq 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	$(GO) mod download

build: setup
	$(GO) build -o $(BIN) ./cmd/ttm

test: setup
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	# One package at a time (-p 1): the node's tests run real-time control
	# loops whose warm-up refuses a policy slower than its period, and other
	# packages' tests on the same two cores would make that a coin toss.
	$(GO) test -count=1 -p 1 ./...
	$(GO) test -count=1 -p 1 -tags purego ./internal/... ./ttm/...

test-short:
	$(GO) test -short ./...

# BENCH_STEPS steps of the robot preset; the README's figures use 100000.
BENCH_STEPS ?= 5000
BENCHTIME ?= 1s
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./internal/... ./ttm/... ./language/... ./policy/... ./sim/...
	$(GO) test -run '^$$' -bench 'Backbone$$|FrontEnd|Head|DecodePreprocess' -benchmem -benchtime 10x ./vision/
	@mkdir -p bin/bench
	$(BIN) init --preset robot --seed 1 --out bin/bench/robot.safetensors
	$(BIN) bench --weights bin/bench/robot.safetensors --steps $(BENCH_STEPS) --pytorch

demo: build
	@mkdir -p bin/demo
	$(BIN) demo --dir bin/demo

# The node under load for SOAK (robot preset, 10 Hz, a 15 Hz camera): deadline
# misses, loop jitter, image-to-action latency, RSS; results in bin/soak.json.
SOAK ?= 10m
soak: setup
	@mkdir -p bin
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./node -soak=$(SOAK) -soak-out=$(CURDIR)/bin/soak.json

# Install the ROS package (launch files, parameters, the binary) where
# roslaunch finds it: put DEST on ROS_PACKAGE_PATH. Without it, the wrapper
# in launch/ runs ../bin/ttm after make build.
DEST ?= /opt/ttm/launch
install-launch: build
	mkdir -p $(DEST)/bin
	cp launch/package.xml launch/*.launch launch/*.yaml launch/ttm_node $(DEST)/
	cp $(BIN) $(DEST)/bin/ttm

FUZZTIME ?= 30s
# Each fuzz target, package by package (go test -fuzz takes one target at a time).
FUZZ_TARGETS := ./internal/safetensors:FuzzParse ./internal/onnx:FuzzParse \
	./node:FuzzParseArgs ./node:FuzzResolveName ./node:FuzzDecodeXMLRPCResponse ./node:FuzzInputsFrames \
	./vision:FuzzDecodeImage ./vision:FuzzDecodeCompressed ./vision:FuzzPrepareCheck ./vision:FuzzOpenCVImport \
	./language:FuzzNormalize ./language:FuzzTokenize ./language:FuzzParseVocab ./language:FuzzCheckEmbedding
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name in $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

clean:
	rm -rf bin
