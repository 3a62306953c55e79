#!/usr/bin/env bash
# `nextn bench --synthetic qwen3.5-0.8b --quant q4_k_m|q2_k` end to end (their own test, so that a
# CPU without the int8 kernels reports it SKIPPED rather than passed). Usage: bench_k_quants.sh
# NEXTN_BINARY
set -u
NEXTN=$1
failures=0

# --quant q4_k_m and q2_k (synthetic only): llama.cpp's Q4_K_M mix, or every matrix Q2_K, built
# through the K-quant encoders and held as such a file's tensors are; the perfect head's drafts all
# accepted. Without the int8 kernels (an x86 CPU without AVX2, or a build with no SIMD kernels)
# they are refused, naming why.
for quant in q4_k_m q2_k; do
    errfile="${TMPDIR:-/tmp}/nextn_${quant}_err.$$"
    out=$("$NEXTN" bench --synthetic qwen3.5-0.8b --quant "$quant" --draft perfect --prompt-tokens 4 \
          --decode-tokens 9 --repeat 1 --threads 2 --json 2>"$errfile")
    rc=$?
    err=$(cat "$errfile"); rm -f "$errfile"
    if [ "$rc" -eq 2 ] && grep -q "needs the int8 kernels" <<<"$err"; then
        echo "SKIPPED: --quant $quant end to end: no int8 kernels on this CPU ($err)"
        exit 77
    elif [ "$rc" -ne 0 ]; then
        echo "FAIL: synthetic $quant bench exited $rc: $err"
        failures=$((failures + 1))
    elif ! python3 - "$out" "$quant" <<'PY'
import json, sys
r, quant = json.loads(sys.argv[1]), sys.argv[2]
assert r["quant"] == quant, r["quant"]
assert r["activations"] == "int8", r["activations"]
assert [m["depth"] for m in r["mtp"][:4]] == [1, 2, 3, 4], r["mtp"]
for m in r["mtp"][:4]:
    assert m["acceptance_d1"] == 1.0, m
PY
    then
        echo "FAIL: synthetic $quant bench JSON: $out"
        failures=$((failures + 1))
    fi
done

[ "$failures" -eq 0 ] && echo "bench_k_quants: passed"
exit $((failures > 0))
