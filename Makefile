# Top-level entry points. `make run` and `make test` are the whole set-up on a fresh Debian machine.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
MODEL ?= $(if $(wildcard models/nextn-tiny/config.json),models/nextn-tiny,tests/data/qwen35-dense-tiny)

.PHONY: all deps build run test bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DNEXTN_WERROR=ON > /dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	@bash scripts/demo.sh $(BUILD_DIR)/nextn $(MODEL)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300

bench: build
	@bash scripts/bench.sh $(BUILD_DIR)

# The fuzz targets (file readers, chat templates, tokenizer) for FUZZ_SECONDS each; the clang
# build in $(BUILD_DIR)/fuzz is the one make test uses for its few-second run.
FUZZ_SECONDS ?= 120
fuzz:
	@bash scripts/fuzz.sh $(FUZZ_SECONDS) $(BUILD_DIR)/fuzz

clean:
	rm -rf $(BUILD_DIR)
