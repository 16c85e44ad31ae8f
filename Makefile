# Token Turing Machine robot policy node. `make help` lists the targets.

SHELL := /bin/bash
BIN := bin/ttm

# Go from PATH, else from the official install in /usr/local/go.
ifeq ($(shell command -v go),)
export PATH := $(PATH):/usr/local/go/bin
endif
GO ?= go

# Debian packages. The demo and the binary: OpenBLAS and OpenCV for cgo,
# ROS 1 for the master. The tests and benchmarks add the message packages
# rostopic needs in the integration tests, and PyTorch for the reference
# TTM that the parity tests and make bench compare against.
DEMO_PACKAGES := gcc g++ pkg-config libopenblas-dev libopencv-dev ros-core
TEST_PACKAGES := $(DEMO_PACKAGES) python3-sensor-msgs python3-geometry-msgs python3-std-srvs python3-diagnostic-msgs \
	python3-numpy python3-torch

# goroslib's checksums are in go.sum; the checksum database cannot serve them here.
export GONOSUMDB := github.com/bluenviron
export GOFLAGS := -mod=readonly

.PHONY: help setup setup-test build test test-short bench soak demo train eval memory fuzz install-launch clean

help:
	@echo "make setup   install the Debian packages the binary and the demo need, and the Go modules (idempotent)"
	@echo "make setup-test  the same with the packages of the tests and benchmarks (PyTorch, ROS messages)"
	@echo "make build   build $(BIN)"
	@echo "make test    vet, format check, all tests (OpenBLAS build and pure-Go build), then the skipped tests"
	@echo "make bench   Go benchmarks and the TTM step benchmark, with the PyTorch baseline"
	@echo "make demo    roscore if needed, the policy node driving the simulator over ROS; strips and GIFs in bin/demo/episodes"
	@echo "make train   record expert demonstrations and train the families checkpoint's recipe, about 30 min (TRAIN_TASKS, TRAIN_EPISODES, TRAIN_STEPS, TRAIN_PRESET, TRAIN_ARGS, TRAIN_DIR)"
	@echo "make eval    closed-loop evaluation of the trained policy with the memory ablations"
	@echo "make memory  memory and no-memory twins with the goal probe on MEMORY_TASKS (default drawer,pointed_drawer), trained and evaluated, ~50 min"
	@echo "make soak    the node under load for SOAK (default 10m)"
	@echo "make fuzz    run each fuzz target for FUZZTIME (default 30s)"

setup: PACKAGES := $(DEMO_PACKAGES)
setup-test: PACKAGES := $(TEST_PACKAGES)
setup setup-test:
	@command -v $(GO) >/dev/null || { echo "Go not found: put it on PATH or install it in /usr/local/go"; exit 1; }
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		SUDO=$$([ $$(id -u) -eq 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	$(GO) mod download

build: setup
	$(GO) build -o $(BIN) ./cmd/ttm

# One package at a time (-p 1): the node's tests run real-time control
# loops whose warm-up refuses a policy slower than its period, and other
# packages' tests on the same two cores would make that a coin toss.
# go test -json goes through internal/testsummary, which prints what go
# test prints (ok and FAIL lines, failed tests' output), then the skipped
# tests; the exit status is go test's.
test: setup-test
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) build -o bin/testsummary ./internal/testsummary
	@set -o pipefail; { $(GO) test -json -count=1 -p 1 ./...; a=$$?; \
		$(GO) test -json -count=1 -p 1 -tags purego ./internal/... ./ttm/...; b=$$?; \
		exit $$((a | b)); } 2>&1 | bin/testsummary

test-short:
	$(GO) test -short ./...

# BENCH_STEPS steps of the robot preset; the README's figures use 100000.
BENCH_STEPS ?= 5000
BENCHTIME ?= 1s
bench: build setup-test
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./internal/... ./ttm/... ./language/... ./policy/... ./sim/...
	$(GO) test -run '^$$' -bench 'Backbone$$|FrontEnd|Head|DecodePreprocess' -benchmem -benchtime 10x ./vision/
	@mkdir -p bin/bench
	$(BIN) init --preset robot --seed 1 --out bin/bench/robot.safetensors
	$(BIN) bench --weights bin/bench/robot.safetensors --steps $(BENCH_STEPS) --pytorch

# The demo: roscore (if no master answers at ROS_MASTER_URI; stopped at the
# end), the policy node on DEMO_POLICY (the committed families checkpoint,
# trained in Go by make train; a fresh, untrained small policy when the
# file does not exist) and the simulator node it drives over ROS.
# Episodes show on the terminal; each one's headcam strip (PNG) and rollout
# (GIF) go to bin/demo/episodes. DEMO_ARGS=--ttm adds the TTM episode and
# step benchmark first.
DEMO_POLICY ?= launch/checkpoints/families/policy.safetensors
DEMO_RATE ?= 3
DEMO_TASKS ?= all
DEMO_EPISODES ?= 1
DEMO_ARGS ?=
demo: build
	@mkdir -p bin/demo
	$(BIN) demo --dir bin/demo $(if $(wildcard $(DEMO_POLICY)),--policy $(DEMO_POLICY)) \
		--rate $(DEMO_RATE) --tasks $(DEMO_TASKS) --episodes $(DEMO_EPISODES) $(DEMO_ARGS)

# Behavioural cloning from scripted-expert demonstrations, then its
# closed-loop evaluation with the memory ablations.
# TRAIN_DIR holds the dataset (bags + index.json + the feature cache), the
# checkpoint, its training state (a rerun resumes), the JSON log and the
# learning curve.
# The defaults are the recipe of the committed families checkpoint
# (launch/checkpoints/families): 300 DART episodes of each of the five task
# families, the small-memory-film preset with ttm train's defaults for it
# (keypoint supervision, geometry labels of which half the windows read the
# policy's own keypoints over the second half of the run, censored bounds,
# 16 windows of 16 steps), 10000 updates at a peak learning rate of 1.5e-3,
# training seed 3 (the seed also draws the random backbone). About 30 min
# on two cores: a few to encode the frames, the rest to train.
TRAIN_DIR ?= bin/train
TRAIN_TASKS ?= families
TRAIN_EPISODES ?= 300
TRAIN_STEPS ?= 10000
TRAIN_PRESET ?= small-memory-film
TRAIN_ARGS ?= --lr 1.5e-3 --seed 3
train: build
	$(BIN) record --experts --tasks $(TRAIN_TASKS) --episodes $(TRAIN_EPISODES) --size 128x160 --noise 0.1 --base-noise 0.05 --label expert --out $(TRAIN_DIR)/data
	$(BIN) train --data $(TRAIN_DIR)/data --preset $(TRAIN_PRESET) --steps $(TRAIN_STEPS) --out $(TRAIN_DIR)/$(TRAIN_PRESET).safetensors $(TRAIN_ARGS)

EVAL_EPISODES ?= 50
eval: build
	$(BIN) eval --policy $(TRAIN_DIR)/$(TRAIN_PRESET).safetensors --ablations nomem,knockout --episodes $(EVAL_EPISODES) \
		--size 128x160 --out $(TRAIN_DIR)/eval

# The memory comparison (launch/checkpoints/memory-twins): twins with and
# without memory on a family and its memory task, the small-goal-probe
# preset with ttm train's defaults for it (keypoint supervision, geometry
# labels only, the goal probe's loss at 0.2, censored bounds, 16 windows of
# 16 steps), 4000 updates each, each evaluated the way it was trained;
# about 50 min. The cue twins (launch/checkpoints/cue-twins) are the
# small-memory-prior preset's, on 1000 episodes of pick,cue_pick,move,put_back
# recorded with --memory-labels: ttm train --preset small-memory-prior
# --lr 1.5e-3 --seed 3 --steps 10000 [--no-memory].
MEMORY_TASKS ?= drawer,pointed_drawer
MEMORY_EPISODES ?= 300
MEMORY_DIR ?= bin/memory
MEMORY_ARGS ?= --preset small-goal-probe --steps 4000 --geometry-own 0
memory: build
	$(BIN) record --experts --tasks $(MEMORY_TASKS) --episodes $(MEMORY_EPISODES) --size 128x160 --noise 0.1 --base-noise 0.05 --label expert --memory-labels --out $(MEMORY_DIR)/data
	$(BIN) train --data $(MEMORY_DIR)/data $(MEMORY_ARGS) --out $(MEMORY_DIR)/memory/policy.safetensors
	$(BIN) train --data $(MEMORY_DIR)/data $(MEMORY_ARGS) --no-memory --out $(MEMORY_DIR)/no-memory/policy.safetensors
	$(BIN) eval --policy $(MEMORY_DIR)/memory/policy.safetensors --tasks $(MEMORY_TASKS) --episodes 50 --seed 5001 --ablations nomem,knockout --out $(MEMORY_DIR)/eval-memory
	$(BIN) eval --policy $(MEMORY_DIR)/no-memory/policy.safetensors --tasks $(MEMORY_TASKS) --episodes 50 --seed 5001 --out $(MEMORY_DIR)/eval-no-memory

# The node under load for SOAK (robot preset, 10 Hz, a 15 Hz camera): deadline
# misses, loop jitter, image-to-action latency, RSS; results in bin/soak.json.
SOAK ?= 10m
soak: setup-test
	@mkdir -p bin
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./node -soak=$(SOAK) -soak-out=$(CURDIR)/bin/soak.json

# Install the ROS package (launch files, parameters, the binary) where
# roslaunch finds it: put DEST on ROS_PACKAGE_PATH. Without it, the wrapper
# in launch/ runs ../bin/ttm after make build.
DEST ?= /opt/ttm/launch
install-launch: build
	mkdir -p $(DEST)/bin
	cp launch/package.xml launch/*.launch launch/*.yaml launch/ttm_node launch/ttm_sim $(DEST)/
	cp $(BIN) $(DEST)/bin/ttm

FUZZTIME ?= 30s
# Each fuzz target, package by package (go test -fuzz takes one target at a time).
FUZZ_TARGETS := ./internal/safetensors:FuzzParse ./internal/onnx:FuzzParse ./internal/rosbag:FuzzReadBag \
	./ttm:FuzzParseConfig ./policy:FuzzParseConfig ./policy/seq:FuzzParseConfig ./policy/seq:FuzzFromJSON \
	./node:FuzzParseArgs ./node:FuzzResolveName ./node:FuzzDecodeXMLRPCResponse ./node:FuzzInputsFrames ./node:FuzzCheckAction \
	./vision:FuzzDecodeImage ./vision:FuzzDecodeCompressed ./vision:FuzzPrepareCheck ./vision:FuzzOpenCVImport ./vision:FuzzDepthwiseLayer \
	./language:FuzzNormalize ./language:FuzzTokenize ./language:FuzzParseVocab ./language:FuzzCheckEmbedding \
	./sim:FuzzParseSize ./sim:FuzzSelectTasks ./sim/eval:FuzzParseLedger ./sim/eval:FuzzParseOptions
# -fuzzminimizetime: the bag fuzzer's seeds are 14 KB (header padding); minimising them takes long.
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name in $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s $$pkg || exit 1; \
	done

clean:
	rm -rf bin
