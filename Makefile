# Top-level entry points. `make run` and `make test` are the whole set-up on a fresh Debian machine.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
MODEL ?= $(if $(wildcard models/nextn-tiny/config.json),models/nextn-tiny,tests/data/qwen35-dense-tiny)

.PHONY: all deps build run test bench fuzz sanitize portable aarch64 clean

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

# Every test under AddressSanitizer and UndefinedBehaviorSanitizer (gcc, -O1, its own build in
# $(SANITIZE_DIR)). A sanitizer's report exits 99, so a CLI test that expects exit 1 fails on it
# too. cli_fuzz is left out: the fuzz targets have their own ASan/UBSan build (make fuzz).
SANITIZE_DIR ?= $(BUILD_DIR)-sanitize
SANITIZE_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
		-DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)
	@cd $(SANITIZE_DIR) && ASAN_OPTIONS=exitcode=99:detect_leaks=1 \
		UBSAN_OPTIONS=halt_on_error=1:exitcode=99:print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS) --timeout 3600 -E '^cli_fuzz$$'

# What a build for a CPU other than x86-64 (ARM, ...) compiles, built and tested here: no x86
# kernels, so every table is the scalar reference, and char unsigned, as aarch64's ABI has it. On
# such a CPU `make` itself builds this way (CMakeLists.txt, NEXTN_X86_KERNELS).
PORTABLE_DIR ?= $(BUILD_DIR)-portable
portable: deps
	@cmake -S . -B $(PORTABLE_DIR) -DCMAKE_BUILD_TYPE=Release -DNEXTN_WERROR=ON -DNEXTN_X86_KERNELS=OFF \
		-DCMAKE_CXX_FLAGS="-funsigned-char" > /dev/null
	@cmake --build $(PORTABLE_DIR) -j $(JOBS)
	@cd $(PORTABLE_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 3600

# The aarch64 build (src/kernels/arm/ instead of x86/), cross-compiled with Debian's
# g++-aarch64-linux-gnu in $(AARCH64_DIR), its tests run under qemu-user: correctness of the ARM
# code here, not its speed. AARCH64_TESTS (a ctest regex) picks tests; emulated, the whole suite
# takes hours on 2 cores. scripts/aarch64.sh installs what it needs first.
AARCH64_DIR ?= $(BUILD_DIR)-aarch64
AARCH64_TESTS ?=
aarch64:
	@bash scripts/aarch64.sh $(AARCH64_DIR) $(JOBS) '$(AARCH64_TESTS)'

clean:
	rm -rf $(BUILD_DIR)
