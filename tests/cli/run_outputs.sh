#!/usr/bin/env bash
# `nextn run` outputs a user relies on: --stats-json carries the keys issue 4 names and the same
# ids the run printed; greedy MTP output (any draft head, either MTP input) equals --no-mtp output
# through the CLI; --stop ends the text before the stop string; the report gives the load time.
# Usage: run_outputs.sh NEXTN_BINARY
set -u
NEXTN=$1
MODEL=tests/data/qwen35-dense-tiny
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The adaptive depth is remembered per model under $XDG_CACHE_HOME: keep the tests' runs out of
# the user's cache and independent of earlier runs.
export XDG_CACHE_HOME="$TMP/cache"
command -v python3 >/dev/null || { echo "SKIPPED: python3 is needed to read the JSON"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

PROMPT=--tokens=1,2,3,4,5,6,7
plain=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos --no-mtp -q) || fail "plain run"
for extra in "--draft-depth 2" "--draft-depth 3 --draft-vocab 300 --draft-quant q8_0" \
             "--draft-depth 4 --mtp-input pre-norm" "--draft-depth auto"; do
    out=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos -q $extra \
          --stats-json "$TMP/stats.json") || fail "run $extra"
    [ "$out" = "$plain" ] || fail "$extra: '$out' != plain '$plain'"
    python3 - "$TMP/stats.json" "$out" <<'PY' || fail "$extra: stats json"
import json, sys
j = json.load(open(sys.argv[1]))
for k in ["generated_ids", "decode_tok_s", "rounds", "tokens_per_round", "drafted", "accepted",
          "acceptance_by_position", "load_seconds"]:
    assert k in j, "missing key " + k
assert 0 < j["load_seconds"] < 60, "load_seconds %r" % j["load_seconds"]
assert j["generated_ids"] == [int(x) for x in sys.argv[2].split()], "ids differ from the printed ones"
assert len(j["drafted"]) == len(j["accepted"]) == len(j["acceptance_by_position"])
assert all(0 <= a <= d for a, d in zip(j["accepted"], j["drafted"]))
assert j["rounds"] >= 1 and j["tokens_per_round"] >= 1.0
PY
done

# A quick load prints no progress lines (they start after a second), and the report says how
# long the load took.
report=$("$NEXTN" run "$MODEL" $PROMPT -n 4 --ids 2>&1 >/dev/null) || fail "report run"
case "$report" in *"loading "*) fail "a quick load printed progress: $report" ;; esac
case "$report" in *"--- load: "*" s"*) ;; *) fail "no load time in the report: $report" ;; esac

# inspect gives the matrices' memory as held and per --quant type.
info=$("$NEXTN" inspect "$MODEL") || fail "inspect"
case "$info" in *"weight memory:   "*" as held; with --quant bf16 >= "*", q8_0 >= "*", q4 >= "*) ;;
    *) fail "inspect has no weight memory line: $info" ;; esac

# --stop: the text ends before the stop string, whatever the draft depth.
TEXT_MODEL=models/nextn-tiny
if [ -f "$TEXT_MODEL/tokenizer.json" ]; then
    full=$("$NEXTN" run "$TEXT_MODEL" -p "Once upon a time" -n 60 --ignore-eos --no-mtp -q) || fail "text run"
    # A stop string taken from the middle of the full output (its 20th..24th bytes).
    stop=${full:20:4}
    want=${full%%"$stop"*}
    for d in 0 3; do
        got=$("$NEXTN" run "$TEXT_MODEL" -p "Once upon a time" -n 60 --ignore-eos -q --draft-depth $d \
              --stop "$stop" --stop "@@never@@") || fail "stop run"
        [ "$got" = "$want" ] || fail "--stop '$stop' depth $d: got '$got' want '$want'"
    done
    # Escapes in a stop string are its bytes (llama.cpp's habit, and the README's --stop "\n\n"):
    # --stop '\n' ends the text at its first line.
    case "$full" in *$'\n'*) ;; *) fail "the text run has no newline to stop at" ;; esac
    got=$("$NEXTN" run "$TEXT_MODEL" -p "Once upon a time" -n 60 --ignore-eos -q --stop '\n') || fail "stop \\n run"
    [ "$got" = "${full%%$'\n'*}" ] || fail "--stop '\\n': got '$got' want the first line '${full%%$'\n'*}'"
fi

# --seed -1 picks a seed at random and reports it; that seed gives the same text again, under
# the adaptive depth as under a fixed one.
TEXT_MODEL=models/nextn-tiny
if [ -f "$TEXT_MODEL/tokenizer.json" ]; then
    first=$("$NEXTN" run "$TEXT_MODEL" -p "def main(" -n 40 --ids -q --temp 0.9 --seed -1 \
            --stats-json "$TMP/seeded.json") || fail "run --seed -1"
    seed=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['seed'])" "$TMP/seeded.json")
    again=$("$NEXTN" run "$TEXT_MODEL" -p "def main(" -n 40 --ids -q --temp 0.9 --seed "$seed") || fail "run --seed $seed"
    [ "$first" = "$again" ] || fail "--seed $seed (reported by --seed -1): '$again' != '$first'"
fi

# --logit-bias: +100 on one token makes greedy output that token throughout; -inf bans it.
biased=$("$NEXTN" run "$MODEL" $PROMPT -n 12 --ids --ignore-eos -q --logit-bias 5+100) || fail "logit-bias +100"
[ "$biased" = "5 5 5 5 5 5 5 5 5 5 5 5" ] || fail "--logit-bias 5+100: '$biased'"
first=${plain%% *}
banned=$("$NEXTN" run "$MODEL" $PROMPT -n 12 --ids --ignore-eos -q --logit-bias "$first-inf") || fail "logit-bias -inf"
case " $banned " in *" $first "*) fail "--logit-bias $first-inf: the banned token came out: '$banned'" ;; esac

# --ignore-eos bans the end-of-sequence token (llama.cpp's meaning): it never comes out, even
# with a bias that would otherwise make the model emit nothing else.
eos=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['text_config']['eos_token_id'])" "$MODEL/config.json")
no_eos=$("$NEXTN" run "$MODEL" $PROMPT -n 12 --ids --ignore-eos -q --logit-bias "$eos+100") || fail "ignore-eos run"
case " $no_eos " in *" $eos "*) fail "--ignore-eos: end-of-sequence token $eos came out: '$no_eos'" ;; esac
[ "$(wc -w <<<"$no_eos")" -eq 12 ] || fail "--ignore-eos: expected 12 tokens, got '$no_eos'"

# chat with a seed repeats the whole conversation (each turn samples with its own seed).
if [ -f "$TEXT_MODEL/tokenizer.json" ]; then
    chat_a=$(printf 'hello\nhello\n' | "$NEXTN" chat "$TEXT_MODEL" --temp 0.9 --seed 3 -n 24 2>/dev/null) || fail "chat a"
    chat_b=$(printf 'hello\nhello\n' | "$NEXTN" chat "$TEXT_MODEL" --temp 0.9 --seed 3 -n 24 2>/dev/null) || fail "chat b"
    [ "$chat_a" = "$chat_b" ] || fail "chat --seed 3 twice gave different conversations"
fi

# tokenize --jsonl answers every input line on its own output line, a blank one with [].
if [ -f "$TEXT_MODEL/tokenizer.json" ]; then
    lines=$(printf '"def"\n\n"main"\n' | "$NEXTN" tokenize "$TEXT_MODEL" --jsonl) || fail "tokenize --jsonl"
    want="$(printf def | "$NEXTN" tokenize "$TEXT_MODEL")
[]
$(printf main | "$NEXTN" tokenize "$TEXT_MODEL")"
    [ "$lines" = "$want" ] || fail "tokenize --jsonl: '$lines' want '$want'"
fi

# Quantized at load (q8_0: the int8 kernels where the CPU has them; q4): greedy MTP output
# equals plain output, with int8 and with f32 activations; and so for this bf16 checkpoint with
# bf16 activations (the bf16 dot product where the CPU has one).
for quant in "--quant q8_0" "--quant q4" "--quant q8_0 --f32-activations" "--bf16-activations"; do
    qplain=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos --no-mtp -q $quant) || fail "plain $quant"
    qmtp=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos -q --draft-depth 3 $quant) || fail "mtp $quant"
    [ "$qplain" = "$qmtp" ] || fail "$quant: MTP '$qmtp' != plain '$qplain'"
done

# --kv-type f16 and q8_0: greedy MTP output equals plain output through the CLI, and the stats
# report a KV cache of half (f16) and 17/64 (q8_0: 34 bytes for 32 values) of the f32 one's bytes.
"$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos -q --no-mtp --stats-json "$TMP/kv_f32.json" >/dev/null \
    || fail "kv f32 run"
for kv in f16 q8_0; do
    kplain=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos -q --no-mtp --kv-type $kv \
             --stats-json "$TMP/kv_$kv.json") || fail "kv $kv plain"
    kmtp=$("$NEXTN" run "$MODEL" $PROMPT -n 40 --ids --ignore-eos -q --draft-depth 3 --kv-type $kv) \
        || fail "kv $kv mtp"
    [ "$kplain" = "$kmtp" ] || fail "--kv-type $kv: MTP '$kmtp' != plain '$kplain'"
done
python3 - "$TMP/kv_f32.json" "$TMP/kv_f16.json" "$TMP/kv_q8_0.json" <<'PY' || fail "--kv-type: kv_cache_bytes"
import json, sys
f32, f16, q8 = (json.load(open(p))["kv_cache_bytes"] for p in sys.argv[1:4])
assert f32 > 0, "no KV bytes reported"
assert 2 * f16 == f32, (f32, f16)
assert 64 * q8 == 17 * f32, (f32, q8)
PY

# inspect says how the weights are held (this bf16 checkpoint: all bf16, kept as is). Its
# output is taken whole before it is searched: in a pipe inspect's own exit status would be lost.
info=$("$NEXTN" inspect "$MODEL") || fail "inspect exited $?"
grep -qE "^weights held as: bf16 x[0-9]+ \(matrices" <<<"$info" || fail "inspect: weights held as"

# With --bf16-activations on a CPU with the bf16 dot product, inspect shows the matrices as
# bf16-dot and bench reports bf16 activations; elsewhere the flag changes nothing.
info_bf16=$("$NEXTN" inspect "$MODEL" --bf16-activations) || fail "inspect --bf16-activations exited $?"
if grep -q "AVX512_BF16" <<<"$info"; then
    grep -qE "^weights held as: bf16 \(bf16-dot\) x[0-9]+ " <<<"$info_bf16" \
        || fail "inspect --bf16-activations: weights held as"
    "$NEXTN" bench "$MODEL" --bf16-activations --json --prompt-tokens 8 --decode-tokens 4 --repeat 1 \
        > "$TMP/bench_bf16.json" 2>/dev/null || fail "bench --bf16-activations"
    python3 - "$TMP/bench_bf16.json" <<'PY' || fail "bench --bf16-activations: keys"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["activations"] == "bf16" and b["quant"] == "bf16", (b["activations"], b["quant"])
assert b["compute_peak_kind"] == "bf16", b["compute_peak_kind"]
PY
else
    grep -qE "^weights held as: bf16 x[0-9]+ " <<<"$info_bf16" \
        || fail "inspect --bf16-activations without the bf16 dot product: weights held as"
fi

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok"
