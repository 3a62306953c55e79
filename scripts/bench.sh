#!/usr/bin/env bash
# `make bench`: kernel micro-benchmarks, tokenizer throughput, and the model benchmark.
set -euo pipefail
BUILD=${1:-build}
MODEL=${MODEL:-$( [ -f models/nextn-tiny/config.json ] && echo models/nextn-tiny || echo tests/data/qwen35-dense-tiny )}
for b in "$BUILD"/*_bench; do
    [ -x "$b" ] || continue
    echo "== $b"
    "$b" --benchmark_min_time=0.2 || echo "(benchmark $b failed)"
done
echo "== nextn bench $MODEL"
"$BUILD/nextn" bench "$MODEL" --json
