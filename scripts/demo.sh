#!/usr/bin/env bash
# `make run`: show nextn doing its job on the embedded model: a code prompt, greedy and sampled
# continuations with MTP drafts, then the same greedy run without MTP for comparison.
set -euo pipefail
NEXTN=${1:?usage: demo.sh NEXTN_BINARY MODEL}
MODEL=${2:?usage: demo.sh NEXTN_BINARY MODEL}
PROMPT=${PROMPT:-'def read_config(path):
    """Read a JSON config file and return it as a dict."""
'}
echo "== model: $MODEL"
"$NEXTN" inspect "$MODEL" | grep -E "^(architecture|layers|mtp head|parameters|kernels)"
echo
echo "== greedy, MTP drafts (depth 3)"
"$NEXTN" run "$MODEL" -p "$PROMPT" -n 96 --draft-depth 3
echo
echo "== sampled (temp 0.7, top-p 0.9, seed 1), MTP drafts (depths chosen from acceptance alone, so the seed repeats the text)"
"$NEXTN" run "$MODEL" -p "$PROMPT" -n 96 --temp 0.7 --top-p 0.9 --seed 1
echo
echo "== greedy without MTP (same text as the first run, for the speed comparison)"
"$NEXTN" run "$MODEL" -p "$PROMPT" -n 96 --no-mtp
echo
echo "note: this 5.6M-parameter model's 11 MB of weights stay in the CPU cache, so its steps are not"
echo "      bound by memory as a real model's are: a verify of k+1 tokens costs more steps here"
echo "      (nextn bench $MODEL prints the curve), greedy MTP gains less, and the sampled run, whose"
echo "      depths follow acceptance and a real model's verify cost, can even lose. On real models a"
echo "      decode step streams the weights from memory and a width-4 verify costs 1.05-1.5 steps with"
echo "      AVX-512 (1.26-1.7 with AVX2 or AVX-VNNI alone); to see what MTP gives there:"
echo "      nextn bench --synthetic qwen3.5-0.8b --quant q4 --draft perfect   (2.3-3.9x at depth 4 on the 2-core AVX-512 VMs"
echo "      measured, 1.9-3.3x with their AVX2 or AVX-VNNI kernels forced)"
