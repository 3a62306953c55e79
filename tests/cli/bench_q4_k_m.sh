#!/usr/bin/env bash
# `nextn bench --synthetic qwen3.5-0.8b --quant q4_k_m` end to end (its own test, so that a CPU
# without the int8 kernels reports it SKIPPED rather than passed). Usage: bench_q4_k_m.sh NEXTN_BINARY
set -u
NEXTN=$1
failures=0

# --quant q4_k_m (synthetic only): llama.cpp's Q4_K_M mix, built through the K-quant encoders and
# held as a Q4_K_M file's tensors are; the perfect head's drafts all accepted. Without the int8
# kernels (an x86 CPU without AVX2, or a build with no SIMD kernels) it is refused, naming why.
out=$("$NEXTN" bench --synthetic qwen3.5-0.8b --quant q4_k_m --draft perfect --prompt-tokens 4 \
      --decode-tokens 9 --repeat 1 --threads 2 --json 2>"${TMPDIR:-/tmp}/nextn_q4km_err.$$")
rc=$?
err=$(cat "${TMPDIR:-/tmp}/nextn_q4km_err.$$"); rm -f "${TMPDIR:-/tmp}/nextn_q4km_err.$$"
if [ "$rc" -eq 2 ] && grep -q "needs the int8 kernels" <<<"$err"; then
    echo "SKIPPED: --quant q4_k_m end to end: no int8 kernels on this CPU ($err)"
    exit 77
elif [ "$rc" -ne 0 ]; then
    echo "FAIL: synthetic q4_k_m bench exited $rc: $err"
    failures=$((failures + 1))
elif ! python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["quant"] == "q4_k_m", r["quant"]
assert r["activations"] == "int8", r["activations"]
assert [m["depth"] for m in r["mtp"][:4]] == [1, 2, 3, 4], r["mtp"]
for m in r["mtp"][:4]:
    assert m["acceptance_d1"] == 1.0, m
PY
then
    echo "FAIL: synthetic q4_k_m bench JSON: $out"
    failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] && echo "bench_q4_k_m: passed"
exit $((failures > 0))
