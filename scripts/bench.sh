#!/usr/bin/env bash
# `make bench`: kernel micro-benchmarks, tokenizer throughput, the model benchmark, and a
# synthetic Qwen3.5-0.8B (real shapes, random weights, q8_0) with a random MTP head (drafts
# rejected: the cost of speculating for nothing) and a perfect one (every draft accepted: the
# ceiling of MTP speed-up on this machine), then q4 decode and a 512-token prefill.
# LLAMA_BENCH=/path/to/llama-bench (a llama.cpp you built) adds the same-machine comparison on
# one synthetic file per type (tools/synthetic_gguf/compare_llama.sh).
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
for draft in random perfect; do
    echo "== nextn bench --synthetic qwen3.5-0.8b --quant q8_0 --draft $draft"
    "$BUILD/nextn" bench --synthetic qwen3.5-0.8b --quant q8_0 --draft "$draft" --decode-tokens 32 --json
done
# The comparison points: Q4_0 decode with the perfect head, and a 512-token Q8_0 prefill
# (llama.cpp 34af94cd9 in the issue, on its Zen 5 VM: decode Q8_0 28.4, Q4_0 42.3, prefill 512
# Q8_0 157 tok/s; on the Zen 4 VM, same GGUF files as nextn: 28.9, 50.6, 143; on the 2-core
# Xeon VM, same files from tools/synthetic_gguf: 17.5, 25.7, 115; README, Speed).
echo "== nextn bench --synthetic qwen3.5-0.8b --quant q4 --draft perfect"
"$BUILD/nextn" bench --synthetic qwen3.5-0.8b --quant q4 --draft perfect --decode-tokens 32 --json
echo "== nextn bench --synthetic qwen3.5-0.8b --quant q8_0 --no-mtp --prompt-tokens 512"
"$BUILD/nextn" bench --synthetic qwen3.5-0.8b --quant q8_0 --no-mtp --prompt-tokens 512 --json
if [ -n "${LLAMA_BENCH:-}" ]; then
    for type in q8_0 q4_0; do
        echo "== tools/synthetic_gguf/compare_llama.sh $LLAMA_BENCH qwen3.5-0.8b $type"
        BUILD_DIR="$BUILD" tools/synthetic_gguf/compare_llama.sh "$LLAMA_BENCH" qwen3.5-0.8b "$type"
    done
fi
