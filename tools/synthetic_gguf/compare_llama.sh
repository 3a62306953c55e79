#!/usr/bin/env bash
# Times llama.cpp's llama-bench and `nextn bench` on one synthetic GGUF file on this machine,
# and prints both engines' figures side by side with their ratios (README, Speed).
#   tools/synthetic_gguf/compare_llama.sh LLAMA_BENCH [MODEL] [TYPE] [THREADS]
# LLAMA_BENCH: a llama-bench binary you built (a llama.cpp that knows the qwen35 architecture).
# Defaults: qwen3.5-0.8b, q4_0, one thread per core. Prompt 512 and 128 decoded tokens (the 9B:
# 128 and 32). The file is written to a temporary directory and removed at the end; it needs
# the model's size free there (0.44 GB for the 0.8B at q4_0, 5.2 GB for the 9B). BUILD_DIR: where
# nextn is built (default build). `LLAMA_BENCH=... make bench` runs it for q8_0 and q4_0.
set -euo pipefail
cd "$(dirname "$0")/../.."
nextn=${BUILD_DIR:-build}/nextn
if [ $# -lt 1 ] || [ ! -x "$1" ] || [ -d "$1" ]; then
    echo "usage: $0 LLAMA_BENCH [MODEL] [TYPE] [THREADS]: LLAMA_BENCH must be an executable llama-bench" >&2
    exit 2
fi
llama_bench=$1
model=${2:-qwen3.5-0.8b}
type=${3:-q4_0}
threads=${4:-$(nproc)}
if [ ! -x "$nextn" ]; then
    echo "$0: $nextn is missing: run make build first" >&2
    exit 2
fi
prompt=512
decode=128
if [ "$model" = qwen3.5-9b ]; then
    prompt=128
    decode=32
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file="$dir/$model-$type.gguf"
tools/synthetic_gguf/synthetic_gguf.py "$file" --model "$model" --type "$type"
echo "llama-bench: prefill $prompt, decode $decode, batches of 1, 4 and 8 (its verify cost) ..." >&2
"$llama_bench" -m "$file" -t "$threads" -p "$prompt" -n "$decode" -r 3 -o json >"$dir/llama.json"
"$llama_bench" -m "$file" -t "$threads" -p 1,4,8 -n 0 -r 3 -o json >"$dir/llama_cost.json"
echo "nextn bench ..." >&2
"$nextn" bench "$file" -t "$threads" --prompt-tokens "$prompt" --decode-tokens "$decode" \
    --no-mtp --json >"$dir/nextn.json"

python3 - "$dir" "$prompt" "$decode" "$model" "$type" "$threads" <<'PY'
import json, sys
d, prompt, decode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
llama = json.load(open(f"{d}/llama.json")) + json.load(open(f"{d}/llama_cost.json"))
nextn = json.load(open(f"{d}/nextn.json"))

def llama_tps(n_prompt, n_gen):
    return next(r["avg_ts"] for r in llama if r["n_prompt"] == n_prompt and r["n_gen"] == n_gen)

l_pp, l_tg = llama_tps(prompt, 0), llama_tps(0, decode)
# cost(N) / cost(1): a batch of N tokens' time over one token's, from the tok/s of each
l_cost = {n: n * llama_tps(1, 0) / llama_tps(n, 0) for n in (4, 8)}
n_pp, n_tg = nextn["prefill_tok_s"], nextn["decode_tok_s"]
n_tg_b2b = nextn["decode_back_to_back_tok_s"]
print(f"{sys.argv[4]} {sys.argv[5]}, {sys.argv[6]} threads, {nextn['isa']}, {nextn.get('cpu', '')}")
print(f"{'':34}{'nextn':>10}{'llama.cpp':>12}{'ratio':>8}")
print(f"{'prefill ' + str(prompt) + ', tok/s':34}{n_pp:10.1f}{l_pp:12.1f}{n_pp / l_pp:7.2f}x")
print(f"{'decode, tok/s, back to back':34}{n_tg_b2b:10.1f}{l_tg:12.1f}{n_tg_b2b / l_tg:7.2f}x")
print(f"{'decode between read probes':34}{n_tg:10.1f}{'':12}{n_tg / l_tg:7.2f}x")
print(f"{'cost(4) / cost(1)':34}{nextn['verify_cost'][3]:10.2f}{l_cost[4]:12.2f}")
print(f"{'cost(8) / cost(1)':34}{nextn['verify_cost'][7]:10.2f}{l_cost[8]:12.2f}")
print(f"nextn's decode streams {nextn['bandwidth_pct']:.0f}% of the read probe "
      f"({nextn['machine_read_bandwidth_gbs']:.1f} GB/s); llama.cpp's at the same bytes a token: "
      f"{nextn['bandwidth_pct'] * l_tg / n_tg:.0f}%")
PY
