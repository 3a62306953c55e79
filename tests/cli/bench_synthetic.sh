#!/usr/bin/env bash
# `nextn bench --synthetic`: flag errors exit 2 with one clear line, a model too large for the
# memory exits 1 before building, and a small end-to-end run reports the model / quant / draft
# keys with every perfect draft accepted. Usage: bench_synthetic.sh NEXTN_BINARY
set -u
NEXTN=$1
source tests/cli_expect.sh

expect 2 "either MODEL or --synthetic" -- "$NEXTN" bench tests/data/qwen35-dense-tiny --synthetic qwen3.5-0.8b
expect 2 "unknown synthetic model 'qwen9'.*qwen3.5-0.8b, qwen3.5-2b, qwen3.5-9b, qwen3.5-35b-a3b" -- "$NEXTN" bench --synthetic qwen9
expect 2 "--draft: unknown draft variant 'great'" -- "$NEXTN" bench --synthetic qwen3.5-0.8b --draft great
expect 2 "--draft applies to --synthetic" -- "$NEXTN" bench tests/data/qwen35-dense-tiny --draft perfect
expect 2 "--draft-model does not apply" -- "$NEXTN" bench --synthetic qwen3.5-0.8b --draft-model x
expect 2 "--no-mtp and --draft contradict" -- "$NEXTN" bench --synthetic qwen3.5-0.8b --no-mtp --draft perfect
expect 2 "^nextn bench: --quant: unknown type .q3. \(supported: .*q4_k_m and q2_k for synthetic models\)" -- "$NEXTN" bench --synthetic qwen3.5-0.8b --quant q3

# 142 GB of f32 weights: refused up front (unless this machine really has that much free).
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
if [ "${avail_kb:-0}" -gt 0 ] && [ "$avail_kb" -lt 140000000 ]; then
    expect 1 "synthetic qwen3.5-35b-a3b with f32 weights needs [0-9.]+ GB of memory but only [0-9.]+ GB is available" -- \
        "$NEXTN" bench --synthetic qwen3.5-35b-a3b --quant f32
fi

# End to end, kept short (q4 weights, 4 prompt tokens, 9 tokens per decode): the JSON keys, and
# the perfect head's first drafts accepted in every round at every depth.
out=$("$NEXTN" bench --synthetic qwen3.5-0.8b --quant q4 --draft perfect --prompt-tokens 4 \
      --decode-tokens 9 --threads 2 --json 2>/dev/null)
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL: synthetic perfect bench exited $rc"
    failures=$((failures + 1))
elif ! python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["model"] == "synthetic:qwen3.5-0.8b", r["model"]
assert r["quant"] == "q4_0", r["quant"]
assert r["activations"] in ("int8", "f32"), r["activations"]
# Every x86 vector table has int8 kernels: q4 weights go through them there by default.
assert r["isa"] == "scalar" or r["activations"] == "int8", (r["isa"], r["activations"])
assert r["draft"] == "perfect", r["draft"]
assert isinstance(r["cpu"], str) and r["cpu"], r.get("cpu")  # the CPU the settings were chosen for
# The keys the README promises, with values that follow from their definitions.
import math
assert r["isa"] in ("scalar", "avx2", "avxvnni", "avx512"), r["isa"]
assert r["threads"] == 2, r["threads"]
assert r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0, r
cost = r["verify_cost"]  # cost(N)/cost(1) for N = 1..8
assert len(cost) == 8 and cost[0] == 1.0 and all(math.isfinite(c) and c > 0 for c in cost), cost
assert r["weight_bytes_per_token"] > 0 and r["machine_read_bandwidth_gbs"] > 0, r
assert abs(r["bandwidth_gbs"] - r["weight_bytes_per_token"] * r["decode_tok_s"] / 1e9) < 1e-9 * r["bandwidth_gbs"], r
assert abs(r["bandwidth_pct"] - 100 * r["bandwidth_gbs"] / r["machine_read_bandwidth_gbs"]) < 1e-6, r
# The state traffic: 18 GDN layers' fp32 state and conv window read and written (40.4 MB) plus
# six attention layers' KV reads (4 KB per position each): at least 40 MB per decode token.
assert r["state_bandwidth_gbs"] >= 0.040 * r["decode_tok_s"], (r["state_bandwidth_gbs"], r["decode_tok_s"])
assert r["bandwidth_pct_with_state"] > r["bandwidth_pct"], r
# Exactly, at the run's mean KV length (4 prompt tokens + 9 // 2 decoded: position 8, so 9
# positions read): each GDN layer reads and writes its state (16 v heads x 128 x 128 floats) and
# conv window (3 x conv dim 6144 floats), 2 x 4 x 280576 bytes; each attention layer reads K and
# V of 2 kv heads x 256 f32 values (--kv-type f32, the default) at 9 positions.
state_bytes = 18 * 2 * 4 * (16 * 128 * 128 + 3 * 6144) + 6 * 2 * (256 * 4) * 2 * 9
state_gbs = state_bytes * r["decode_tok_s"] / 1e9
assert abs(r["state_bandwidth_gbs"] - state_gbs) < 1e-9 * state_gbs, (r["state_bandwidth_gbs"], state_gbs)
with_state = 100 * (r["bandwidth_gbs"] + r["state_bandwidth_gbs"]) / r["machine_read_bandwidth_gbs"]
assert abs(r["bandwidth_pct_with_state"] - with_state) < 1e-6, (r["bandwidth_pct_with_state"], with_state)
assert r["kv_type"] == "f32", r["kv_type"]  # the --kv-type default
# The decode's share of the weight-sized buffer's read rate (the cache verdict's other rate).
of_weight_sized = 100 * r["bandwidth_gbs"] / r["weight_sized_read_gbs"]
assert abs(r["bandwidth_pct_of_weight_sized_read"] - of_weight_sized) < 1e-6, r
# Prefill's matmul work: per token 2 x the multiply-adds of the 0.8B's trunk matrices, no LM
# head. GDN layer (18): in_qkv 6144, in_z 2048, in_a + in_b 32, out_proj 1024 x 2048; attention
# layer (6): q 4096, k 512, v 512, o 1024 x 2048; FFN (24): 3 x 3584; all times hidden 1024.
macs = 18 * 1024 * (6144 + 2048 + 32 + 2048) + 6 * 1024 * (4096 + 512 + 512 + 2048) + 24 * 3 * 3584 * 1024
assert abs(r["prefill_matmul_ops_per_s"] / r["prefill_tok_s"] / (2 * macs) - 1) < 1e-9, (r["prefill_matmul_ops_per_s"], r["prefill_tok_s"])
if r["isa"] != "scalar":  # the scalar table reports no peak
    assert r["compute_peak_kind"] == ("int8" if r["activations"] == "int8" else "f32"), r["compute_peak_kind"]
    assert r["compute_peak_ops_per_s"] > 0, r
    assert abs(r["prefill_peak_pct"] - 100 * r["prefill_matmul_ops_per_s"] / r["compute_peak_ops_per_s"]) < 1e-6, r
assert r["rollback_cost"]["keep_1_of_5"] > 0 and r["rollback_cost"]["keep_4_of_5"] > 0, r["rollback_cost"]
assert [m["depth"] for m in r["mtp"]] == [1, 2, 3, 4, "auto", "auto-warm"]
for m in r["mtp"]:
    assert m["acceptance_d1"] == 1.0 or m["depth"] in ("auto", "auto-warm"), m
    # The speed-ups divide by the plain decode timed as the MTP runs are: back to back.
    assert abs(m["speedup"] * r["decode_back_to_back_tok_s"] - m["decode_tok_s"]) < 1e-6 * m["decode_tok_s"], (m, r["decode_back_to_back_tok_s"])
# The modelled speed-up of each fixed depth: with every draft accepted a round commits depth + 1
# tokens, and costs its verify plus the depth's draft steps.
head_cost = r["draft_head"]["draft_step_cost"]
for m in r["mtp"][:4]:
    k = m["depth"]
    assert abs(m["model_tokens_per_round"] - (k + 1)) < 1e-9, m
    assert abs(m["model_round_cost"] - (r["verify_cost"][k] + k * head_cost)) < 1e-9, (m, r["verify_cost"])
    assert abs(m["model_speedup"] - (k + 1) / m["model_round_cost"]) < 1e-9, m
for m in r["mtp"][4:]:
    assert "model_speedup" not in m, m
# Where a round's time went: disjoint parts of the round's time, which is the run's decode time
# over its rounds (tokens a round over tokens a second).
for m in r["mtp"]:
    t = m["round_ms"]
    assert min(t["draft"], t["verify"]) > 0 and min(t["accept"], t["commit"]) >= 0, t
    assert t["draft"] + t["verify"] + t["accept"] + t["commit"] <= t["total"] * (1 + 1e-9), t
    assert abs(t["total"] - 1e3 * m["tokens_per_round"] / m["decode_tok_s"]) < 1e-6 * t["total"], (t, m)
assert r["draft_head"]["draft_step_cost"] > 0, r["draft_head"]
# How the decode-width matmuls prefetch; where two ways are timed, every timed forward ran on one
# of them: the decode runs, the verify curve and the MTP rounds, hundreds in all.
assert r["narrow_fetch"] in ("cursor", "group streams", "timed", ""), r["narrow_fetch"]
if r["narrow_fetch"] == "timed":
    assert set(r["timed_forwards"]) == {"cursor", "group streams"}, r["timed_forwards"]
    assert sum(r["timed_forwards"].values()) > 100, r["timed_forwards"]
else:
    assert "timed_forwards" not in r, r
PY
then
    echo "FAIL: synthetic perfect bench JSON: $out"
    failures=$((failures + 1))
fi

# The flags reach the model: --quant bf16 holds this bf16 checkpoint's matrices as bf16 (its
# help's type, not widened to f32), --f32-activations multiplies --quant q8_0 weights with f32
# activations instead of int8 ones, --kv-type f16 makes an f16 cache. Short runs of the tiny test
# model, without the MTP runs.
tiny=(bench tests/data/qwen35-dense-tiny --json --prompt-tokens 4 --decode-tokens 2 --repeat 1 --no-mtp
      --threads 2)
for flags in "--quant bf16 --kv-type f16:bf16:f32:f16" \
             "--quant q8_0 --f32-activations:q8_0:f32:f32"; do
    IFS=: read -r extra want_quant want_act want_kv <<<"$flags"
    out=$("$NEXTN" "${tiny[@]}" $extra 2>/dev/null)
    if ! python3 - "$out" "$want_quant" "$want_act" "$want_kv" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
got = (r["quant"], r["activations"], r["kv_type"])
assert got == tuple(sys.argv[2:5]), got
PY
    then
        echo "FAIL: bench $extra: quant / activations / kv_type: $out"
        failures=$((failures + 1))
    fi
done

# Whether the weights are cache-served is measured: a read probe over a buffer the size of the
# weights against the large probe. The rates are the machine's, so the test checks that the
# verdict, the JSON and the note agree with the reported rates, not what the rates are.
if [ -f models/nextn-tiny/config.json ]; then
    args=(bench models/nextn-tiny --prompt-tokens 4 --decode-tokens 4 --repeat 1 --threads 2)
    out=$("$NEXTN" "${args[@]}" --json 2>/dev/null)
    if ! python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
fits, small, large = r["weights_fit_in_cache"], r["weight_sized_read_gbs"], r["machine_read_bandwidth_gbs"]
weights, cache = r["weight_bytes_per_token"], r["last_level_cache_bytes"]
assert isinstance(fits, bool) and small > 0 and large > 0 and weights > 0 and cache >= 0, r
assert fits == (small >= 1.25 * large and (cache == 0 or weights <= cache)), (fits, small, large, weights, cache)
PY
    then
        echo "FAIL: tiny-model bench JSON: weights_fit_in_cache disagrees with its read rates: $out"
        failures=$((failures + 1))
    fi
    # The text run states the weight-sized read in every case; its verdict must follow its rate
    # (1.25x the large probe or more: served by cache, wholly or in part).
    text=$("$NEXTN" "${args[@]}" 2>/dev/null)
    rc=$?
    line=$(printf '%s\n' "$text" | grep -E "^(note: )?a buffer the size of the [0-9]+ MB of weights")
    ratio=$(printf '%s\n' "$line" | sed -nE "s/.* GB\/s, ([0-9.]+)x the large probe's rate: .*/\1/p")
    if [ "$rc" -ne 0 ] || [ "$(printf '%s\n' "$line" | grep -c .)" -ne 1 ] || [ -z "$ratio" ]; then
        echo "FAIL: tiny-model bench (exit $rc) did not state its weight-sized read once: $line"
        failures=$((failures + 1))
    elif ! python3 - "$ratio" "$line" <<'PY'
import sys
ratio, line = float(sys.argv[1]), sys.argv[2]
served = "decode reads the weights from cache" in line or "serves part of such a buffer" in line
assert served == (ratio >= 1.25) and served == line.startswith("note: "), (ratio, line)
assert served or line.endswith("not served by cache"), line
PY
    then
        echo "FAIL: tiny-model bench's cache verdict disagrees with its rate: $line"
        failures=$((failures + 1))
    fi
    # A round at fixed depth k drafts k tokens: the first from flushing the last round's pairs,
    # the other k - 1 by chained steps; the round line after each depth's line says so (auto
    # rounds vary in depth: no parts).
    if ! python3 - "$text" <<'PY'
import sys
lines = sys.argv[1].splitlines()
want = {"depth 1": " (the last round's pairs flushed) + verify",
        "depth 2": " (the last round's pairs flushed, then 1 chained step) + verify",
        "depth 3": " (the last round's pairs flushed, then 2 chained steps) + verify",
        "depth 4": " (the last round's pairs flushed, then 3 chained steps) + verify"}
seen = 0
for i, l in enumerate(lines[:-1]):
    if not l.startswith("mtp "):
        continue
    label = l[4:].split(":")[0]
    nxt = lines[i + 1]
    if label in want:
        assert nxt.startswith("  a round: ") and want[label] in nxt, (label, nxt)
        seen += 1
    elif label.startswith("auto"):
        assert nxt.startswith("  a round: ") and "flushed" not in nxt, (label, nxt)
assert seen == 4, seen
PY
    then
        echo "FAIL: tiny-model bench's round lines do not name a depth's drafting parts: $text"
        failures=$((failures + 1))
    fi
fi

[ "$failures" -eq 0 ] && echo "bench_synthetic: all passed"
exit $((failures > 0))
