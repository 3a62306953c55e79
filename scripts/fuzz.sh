#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang and runs each for SECONDS on its seed corpus
# (fuzz/corpus/<target>), failing on the first crash, sanitizer report or exception other than
# nextn::Error. New inputs libFuzzer finds go to BUILD_DIR/corpus/<target>, crash inputs to
# BUILD_DIR/artifacts/ (replay one with: BUILD_DIR/<target> FILE).
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]   (defaults: 10, build-fuzz)
# FUZZ_TARGETS="chat_template_fuzz tokenizer_fuzz" runs only those; FUZZ_JOBS sets build jobs.
# Exits 77 with "SKIPPED: <reason>" when clang / libFuzzer are not installed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${1:-10}
BUILD=${2:-$ROOT/build-fuzz}
TARGETS=${FUZZ_TARGETS:-"gguf_fuzz safetensors_fuzz config_fuzz chat_template_fuzz tokenizer_fuzz"}

CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [ -z "$CXX" ]; then
    echo "SKIPPED: clang++ not found (libFuzzer needs clang)"
    exit 77
fi
mkdir -p "$BUILD"
# A one-line probe: some clang installs lack the libFuzzer runtime.
probe=$BUILD/probe.cpp
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$probe"
if ! "$CXX" -fsanitize=fuzzer,address,undefined "$probe" -o "$BUILD/probe" 2> "$BUILD/probe.log"; then
    echo "SKIPPED: $CXX cannot link -fsanitize=fuzzer,address,undefined (libFuzzer runtime missing?)"
    exit 77
fi

if ! cmake -S "$ROOT/fuzz" -B "$BUILD" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE= > "$BUILD/configure.log" 2>&1; then
    cat "$BUILD/configure.log"
    echo "FAIL: cannot configure fuzz/"
    exit 1
fi
if ! cmake --build "$BUILD" -j "${FUZZ_JOBS:-2}" > "$BUILD/build.log" 2>&1; then
    cat "$BUILD/build.log"
    echo "FAIL: fuzz targets do not build"
    exit 1
fi

status=0
for t in $TARGETS; do
    name=${t%_fuzz}
    mkdir -p "$BUILD/corpus/$name" "$BUILD/artifacts"
    log=$BUILD/$t.log
    # -timeout: one input taking over 10 s is a hang; -rss_limit_mb / -malloc_limit_mb: a corrupt
    # count must not allocate hundreds of MB from a few KB of input.
    "$BUILD/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=1024 \
        -malloc_limit_mb=256 -max_len=16384 -dict="$ROOT/fuzz/$name.dict" -print_final_stats=1 \
        -artifact_prefix="$BUILD/artifacts/$name-" "$BUILD/corpus/$name" "$ROOT/fuzz/corpus/$name" \
        > "$log" 2>&1
    rc=$?
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    if [ $rc -ne 0 ]; then
        tail -n 60 "$log"
        echo "FAIL: $t exited $rc (log: $log; crash input in $BUILD/artifacts/)"
        status=1
    else
        echo "ok: $t ran ${SECONDS_EACH}s, $runs inputs, no crash"
    fi
done
exit $status
