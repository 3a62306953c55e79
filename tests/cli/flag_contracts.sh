#!/usr/bin/env bash
# What each command's --help (and the README) promises of its flags, checked at the edges: the
# bounds a flag states are accepted and one past them refused (exit 2), the forms a value may take
# (inline --flag=V, "1 2 3" ids, \xNN escapes, ID-BIAS) mean what the help says, and outputs whose
# content follows from the fixture's own files (config.json, the safetensors header, the chat
# template) say it. Every run is a few tokens of the tiny test model: seconds in all.
# Usage: flag_contracts.sh NEXTN_BINARY
set -u
NEXTN=$1
MODEL=tests/data/qwen35-dense-tiny
TEXT_MODEL=models/nextn-tiny
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The adaptive depth is remembered per model under $XDG_CACHE_HOME: keep the tests' runs out of
# the user's cache and independent of earlier runs.
export XDG_CACHE_HOME="$TMP/cache"
command -v python3 >/dev/null || { echo "SKIPPED: python3 is needed to read the fixtures"; exit 77; }
source tests/cli_expect.sh
# check NAME CONDITION...: one counted check of a shell condition.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        passes=$((passes + 1))
    else
        echo "FAIL: $name: $out"
        failures=$((failures + 1))
    fi
}
PROMPT=--tokens=1,2,3,4,5,6,7
# A run of N greedy tokens as ids, never ending early (plain decoding unless EXTRA says more).
ids() { "$NEXTN" run "$MODEL" $PROMPT --ids --ignore-eos -q "$@"; }

# --- main: help is asked for with --help, -h or help: usage on stdout, exit 0 (no command at
# all is the usage error, exit 2, errors.sh).
for h in --help -h help; do
    out=$("$NEXTN" $h 2>/dev/null)
    check "nextn $h: exit 0 with the usage on stdout" grep -q "^usage: nextn COMMAND" <<<"$out"
done

# --- args: a flag missing its value, a switch given one, "--" ending the flags, "-" a path.
expect 2 "^nextn run: flag --prompt needs a value" -- "$NEXTN" run "$MODEL" -p
expect 2 "^nextn run: flag --quiet takes no value" -- "$NEXTN" run "$MODEL" -p hi -q=1
# After "--" every argument is positional, one starting with '-' too: here a MODEL path, which
# then does not exist (exit 1), rather than an unknown flag (exit 2).
expect 1 "does not exist" -- "$NEXTN" inspect -- "$TMP/-x"
check "inspect -- MODEL reads the model after --" "$NEXTN" inspect -- "$MODEL" >/dev/null 2>&1
# A lone "-" is no flag (it has no name): a path, here one that does not exist.
expect 1 "does not exist" -- "$NEXTN" inspect -
# Integers beyond int64 and numbers beyond double are not silently clamped.
expect 2 "^nextn run: flag --n-predict expects an integer, got '99999999999999999999'" -- \
    "$NEXTN" run "$MODEL" -p hi -n 99999999999999999999
expect 2 "^nextn run: flag --temp expects a number, got '0.5x'" -- "$NEXTN" run "$MODEL" -p hi --temp 0.5x
expect 2 "^nextn run: flag --top-p expects a number, got '1e999'" -- "$NEXTN" run "$MODEL" -p hi --top-p 1e999
# A number too small for a normal double is still that number (strtod reports ERANGE for the
# subnormal 1e-320 as for an overflow): --min-p 1e-320 is in [0, 1].
check "--min-p 1e-320 (an underflow) runs" "$NEXTN" run "$MODEL" $PROMPT -n 1 -q --min-p 1e-320
# An inline --flag=V value is a value like any other, repeatable flags included: +100 on token 5
# makes greedy output 5 throughout (as run_outputs.sh checks for the spaced form).
check "--logit-bias=5+100 (inline) biases token 5" [ "$(ids -n 4 --no-mtp --logit-bias=5+100)" = "5 5 5 5" ]

# --- --tokens IDS: "1,2,3" or "1 2 3" (the help's two forms; tabs and newlines separate too),
# each a token id: 0..2^31-1.
comma=$(ids -n 6 --no-mtp)
check "--tokens '1 2 3 ...' (spaces, a tab) equals the comma form" \
    [ "$("$NEXTN" run "$MODEL" --tokens "$(printf '1 2 3\t4 5,6 7')" --ids --ignore-eos -q -n 6 --no-mtp)" \
    = "$comma" ]
expect 2 "^nextn run: flag --tokens: '-1' is not a token id" -- "$NEXTN" run "$MODEL" --tokens 1,-1
# 2^32 would wrap to token 0 in an int32.
expect 2 "^nextn run: flag --tokens: '4294967296' is not a token id" -- \
    "$NEXTN" run "$MODEL" --tokens 4294967296
expect 2 "^nextn run: flag --tokens: '2x' is not a token id" -- "$NEXTN" run "$MODEL" --tokens 1,2x
expect 2 "^nextn run: flag --tokens needs at least one token id" -- "$NEXTN" run "$MODEL" --tokens ", ,"
# Ids index the vocabulary [0, vocab_size): vocab_size itself is outside (1024 in config.json).
vocab=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['text_config']['vocab_size'])" \
    "$MODEL/config.json")
expect 1 "prompt token id $vocab is outside the vocabulary of $vocab" -- \
    "$NEXTN" run "$MODEL" --tokens "1,$vocab"
check "--tokens with id vocab_size - 1 runs" "$NEXTN" run "$MODEL" --tokens "1,$((vocab - 1))" -n 1 -q --ids

# --- run's own bounds, as its help states them.
expect 2 "^nextn run: give exactly one of -p TEXT or --tokens IDS" -- "$NEXTN" run "$MODEL" -p hi --tokens 1
expect 2 "^nextn run: --draft-depth must be auto or between 0 and 8" -- \
    "$NEXTN" run "$MODEL" -p hi --draft-depth -1
check "--draft-depth 8 (the largest) runs" "$NEXTN" run "$MODEL" $PROMPT -n 3 -q --draft-depth 8
expect 2 "^nextn run: --logprobs must be between 0 and 20" -- "$NEXTN" run "$MODEL" -p hi --logprobs 21
expect 2 "^nextn run: --logprobs must be between 0 and 20" -- "$NEXTN" run "$MODEL" -p hi --logprobs -1
# --logprobs N: a line for each token, each with N alternatives (NAME:LOGPROB after the '|').
lp=$("$NEXTN" run "$MODEL" $PROMPT -n 3 --ids --ignore-eos -q --logprobs 2 2>&1 >/dev/null)
check "--logprobs 2: three [logprob] lines of two alternatives each" python3 - "$lp" <<'PY'
import sys
lines = [l for l in sys.argv[1].splitlines() if l.startswith("[logprob] ")]
assert len(lines) == 3, lines
assert all(len(l.split("|")[1].split()) == 2 for l in lines), lines
PY
lp20=$("$NEXTN" run "$MODEL" $PROMPT -n 1 --ids -q --logprobs 20 2>&1 >/dev/null)
check "--logprobs 20 (the largest): 20 alternatives" \
    [ "$(grep '^\[logprob\]' <<<"$lp20" | cut -d'|' -f2 | wc -w)" -eq 20 ]
# -n counts from 1; the largest count is 2^44 (token_count_flag), allowed when --ctx ends the
# run long before.
check "-n 1 (the smallest) gives one token" [ "$(ids -n 1 --no-mtp | wc -w)" -eq 1 ]
expect 0 "note: stopped after 4 tokens at the end of the context \(10 tokens, --ctx\)" -- \
    "$NEXTN" run "$MODEL" $PROMPT -q --ids --ignore-eos -n 17592186044416 --ctx 10
# --ctx may be the model's whole context length (max_position_embeddings 4096), not more.
check "--ctx 4096 (the model's context length) runs" "$NEXTN" run "$MODEL" $PROMPT -n 2 -q --ctx 4096
# Without --ctx the context is capped at the model's length: a 4090-token prompt leaves 7 of the
# 20 tokens asked for (the first 6 fed back at positions 4090..4095, the 7th read off the logits
# of position 4095; as --ctx 10 after 7 ids gives 4 above), and the run says why it stopped.
long_prompt=$(python3 -c "print(','.join(str(i % 1000 + 1) for i in range(4090)))")
expect 0 "note: stopped after 7 tokens at the end of the context \(4096 tokens: the model's" -- \
    "$NEXTN" run "$MODEL" --tokens "$long_prompt" -n 20 --ignore-eos -q --ids --no-mtp
expect 2 "^nextn run: --stop: the stop string must not be empty" -- "$NEXTN" run "$MODEL" -p hi --stop ""
expect 2 "^nextn run: the prompt encodes to no tokens" -- "$NEXTN" run "$MODEL" -p ""
# -q: no report; without it the report counts the first token with the prefill (-n 5: 4 decoded,
# 5 generated).
report=$("$NEXTN" run "$MODEL" $PROMPT -n 5 --ids --ignore-eos -q 2>&1 >/dev/null)
check "-q prints no report" [ -z "$report" ]
report=$("$NEXTN" run "$MODEL" $PROMPT -n 5 --ids --ignore-eos --no-mtp 2>&1 >/dev/null)
check "the report: 4 decode tokens of 5 generated" \
    grep -q -- "^--- decode: 4 tokens in .*(5 generated" <<<"$report"

# A model without a tokenizer: ids in and out; text flags are refused.
mkdir "$TMP/notok"
cp "$MODEL/config.json" "$MODEL/model.safetensors" "$TMP/notok/"
check "no tokenizer: the output is ids" \
    [ "$("$NEXTN" run "$TMP/notok" $PROMPT -n 6 --ignore-eos -q --no-mtp)" = "$comma" ]
expect 2 "^nextn run: --stop needs a tokenizer to see the text" -- "$NEXTN" run "$TMP/notok" $PROMPT --stop x
expect 1 "no tokenizer found; use --tokens" -- "$NEXTN" run "$TMP/notok" -p hi

# --stats-json: the depth and MTP use it reports follow the flags (plain: no MTP, depth 0; fixed
# depth 3: 3), the prompt is the 7 ids given, the seed the one given, and `generated` counts ids.
"$NEXTN" run "$MODEL" $PROMPT -n 6 --ignore-eos -q --no-mtp --seed 42 \
    --stats-json "$TMP/plain.json" >/dev/null
"$NEXTN" run "$MODEL" $PROMPT -n 6 --ignore-eos -q --draft-depth 3 --stats-json "$TMP/d3.json" >/dev/null
check "--stats-json follows the flags" python3 - "$TMP/plain.json" "$TMP/d3.json" <<'PY'
import json, sys
p, d = (json.load(open(f)) for f in sys.argv[1:3])
assert p["mtp"] is False and p["final_draft_depth"] == 0, p
assert d["mtp"] is True and d["final_draft_depth"] == 3, d
for j in (p, d):
    assert j["prompt_tokens"] == 7 and j["generated"] == len(j["generated_ids"]) == 6, j
    # Neither ended at a token (--ignore-eos) nor at the end of the context (7 + 6 + 16 positions).
    assert j["stopped_by_token"] is False and j["stopped_by_context"] is False, j
assert p["seed"] == 42, p["seed"]
PY
# A run ended by --ctx says so in its stats (7 ids, --ctx 10: 4 tokens, as above).
"$NEXTN" run "$MODEL" $PROMPT -n 50 --ignore-eos -q --no-mtp --ctx 10 \
    --stats-json "$TMP/ctx.json" >/dev/null 2>&1
check "--stats-json: stopped_by_context" python3 - "$TMP/ctx.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["stopped_by_context"] is True and j["stopped_by_token"] is False and j["generated"] == 4, j
PY
# --seed -1 draws a fresh seed each run (random_device: two equal draws of 32 bits are a 2^-32
# chance); a fixed seed stands for itself.
"$NEXTN" run "$MODEL" $PROMPT -n 1 -q --temp 1 --seed -1 --stats-json "$TMP/r1.json" >/dev/null
"$NEXTN" run "$MODEL" $PROMPT -n 1 -q --temp 1 --seed -1 --stats-json "$TMP/r2.json" >/dev/null
check "--seed -1 twice: two different seeds" python3 - "$TMP/r1.json" "$TMP/r2.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["seed"] for f in sys.argv[1:3])
assert a != b and a < 2**32 and b < 2**32, (a, b)
PY

# --- model flags (common_flags.cpp).
expect 2 "^nextn run: --threads must be between 0 and 1024" -- "$NEXTN" run "$MODEL" -p hi --threads -1
# --threads 1024 is in range: the flag parsed after it (a bad --quant) is the error named, before
# any thread starts.
expect 2 "^nextn run: --quant: unknown type 'q3'" -- "$NEXTN" run "$MODEL" -p hi --threads 1024 --quant q3
# As many threads as the machine has is no oversubscription: no warning.
out=$("$NEXTN" run "$MODEL" $PROMPT -n 1 -q --threads "$(nproc)" 2>&1 >/dev/null)
check "--threads \$(nproc): no warning" [ -z "$out" ]
check "--draft-vocab 0 (the whole vocabulary) runs" "$NEXTN" run "$MODEL" $PROMPT -n 3 -q --draft-vocab 0
for t in native f32 bf16 q8_0 q4; do
    check "--draft-quant $t (listed in the help) runs" \
        "$NEXTN" run "$MODEL" $PROMPT -n 3 -q --draft-depth 2 --draft-quant $t
done
expect 2 "^nextn run: --top-k -99999999999 is out of range" -- \
    "$NEXTN" run "$MODEL" -p hi --top-k -99999999999

# --- --logit-bias ID+BIAS / ID-BIAS (llama.cpp's form).
expect 2 "^nextn run: --logit-bias: expected TOKEN_ID\+BIAS" -- "$NEXTN" run "$MODEL" -p hi --logit-bias -3+1
expect 2 "^nextn run: --logit-bias: expected TOKEN_ID\+BIAS" -- \
    "$NEXTN" run "$MODEL" -p hi --logit-bias 99999999999+1
# The sign between ID and BIAS is the bias's: a second sign makes it no number of this form.
expect 2 "^nextn run: --logit-bias: expected TOKEN_ID\+BIAS" -- "$NEXTN" run "$MODEL" -p hi --logit-bias 5--1
expect 2 "^nextn run: --logit-bias: expected TOKEN_ID\+BIAS" -- "$NEXTN" run "$MODEL" -p hi --logit-bias 5+-1
plain=$(ids -n 12 --no-mtp)
first=${plain%% *}
# ID-100 lowers the token's logit by 100: the tiny model's logits spread far less, so greedy
# never picks it (a +100 would make it every token).
lowered=$(ids -n 12 --no-mtp --logit-bias "$first-100")
check "--logit-bias $first-100 keeps token $first out" \
    bash -c "case ' $lowered ' in *' $first '*) exit 1;; esac"
# Repeated biases of one id add up: +100 and -100 cancel, the output is the plain one.
check "--logit-bias +100 then -100 on one id cancel" \
    [ "$(ids -n 12 --no-mtp --logit-bias "$first+100" --logit-bias "$first-100")" = "$plain" ]

# --- text: stop strings with \xNN escapes (the help's), --ids with --stop.
if [ -f "$TEXT_MODEL/tokenizer.json" ]; then
    text_run() { "$NEXTN" run "$TEXT_MODEL" -p "Once upon a time" -n 60 --ignore-eos -q "$@"; }
    full=$(text_run --no-mtp)
    # \x0a and \x0A are byte 10, a newline: the text ends at its first line.
    for esc in '\x0a' '\x0A'; do
        check "--stop '$esc' ends at the first line" [ "$(text_run --stop "$esc")" = "${full%%$'\n'*}" ]
    done
    # --stats-json's acceptance at each draft position is accepted / drafted there (0 where
    # nothing was drafted); this model's head drafts right often enough to tell positions apart,
    # and the adaptive depth drafts a different count at each.
    text_run --stats-json "$TMP/auto.json" >/dev/null
    check "--stats-json: acceptance_by_position" python3 - "$TMP/auto.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["drafted"]) == 4 and sum(d["accepted"]) > 0, d
want = [a / n if n else 0.0 for a, n in zip(d["accepted"], d["drafted"])]
assert d["acceptance_by_position"] == want, (d["acceptance_by_position"], want)
PY
    # The MTP head reads the post-norm hidden state unless --mtp-input says otherwise (the
    # help's default): the same drafts, so the same counts, as with --mtp-input post-norm.
    text_run --draft-depth 3 --stats-json "$TMP/text.json" >/dev/null
    text_run --draft-depth 3 --mtp-input post-norm --stats-json "$TMP/post.json" >/dev/null
    check "--mtp-input: post-norm is the default" python3 - "$TMP/text.json" "$TMP/post.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert (a["drafted"], a["accepted"]) == (b["drafted"], b["accepted"]), (a, b)
PY
    # With --ids the run ends as the text run does: at the token that completes the stop
    # string, so the ids are a strict prefix of the full run's.
    all_ids=$(text_run --no-mtp --ids)
    stop_ids=$(text_run --no-mtp --ids --stop '\n')
    check "--ids --stop: a strict prefix of the full ids" \
        bash -c '[ "${#2}" -lt "${#1}" ] && [ "${1#"$2"}" != "$1" ]' _ "$all_ids" "$stop_ids"
fi

# --- chat and template.
echo '[{"role": "user", "content": "hi"}]' > "$TMP/m.json"
# --ctx must be at least 16: 16 is accepted (no input: the chat ends at once).
check "chat --ctx 16 (the smallest) starts" \
    bash -c "'$NEXTN' chat '$MODEL' --ctx 16 </dev/null >/dev/null 2>&1"
expect 2 "^nextn chat: --ctx must be at least 16" -- "$NEXTN" chat "$MODEL" --ctx 15
expect 2 "^nextn template: --thinking expects on or off, got 'maybe'" -- \
    "$NEXTN" template "$MODEL" "$TMP/m.json" --thinking maybe
expect 2 "^nextn template: expected MODEL and MESSAGES.json" -- "$NEXTN" template "$MODEL"
echo '{"role": "user", "content": "hi"}' > "$TMP/object.json"
expect 1 "object.json: expected a JSON array of messages" -- "$NEXTN" template "$MODEL" "$TMP/object.json"
# The fixture's template (tokenizer_config.json) writes each message as
# <|im_start|>ROLE\nCONTENT<|im_end|>\n, then '<|im_start|>assistant\n' if add_generation_prompt
# ($(...) drops the final newline).
check "template: the generation prompt by default" \
    [ "$("$NEXTN" template "$MODEL" "$TMP/m.json")" \
    = $'<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant' ]
check "template --no-generation-prompt: none" \
    [ "$("$NEXTN" template "$MODEL" "$TMP/m.json" --no-generation-prompt)" \
    = $'<|im_start|>user\nhi<|im_end|>' ]
# chat -v reports each reply's prompt tokens.
out=$(printf 'hi\n' | "$NEXTN" chat "$MODEL" -n 2 -v 2>&1 >/dev/null)
check "chat -v reports the prompt tokens" grep -qE "^\[[0-9]+ prompt tokens, [0-9]+ reused; " <<<"$out"

# Each chat turn samples with its own seed (--seed + turn): with --raw the two turns below send
# the same text from a fresh sequence, so one seed for both would give the same reply twice. At
# temperature 2 over the tiny model's 1024 tokens, 16 equal tokens by chance are out of reach.
replies=$(printf 'hi\nhi\n' | "$NEXTN" chat "$MODEL" --raw --temp 2 --seed 3 -n 16 2>/dev/null)
check "chat: two turns, two seeds" python3 - "$replies" <<'PY'
import sys
turns = [t for t in sys.argv[1].split("> ") if t.strip()]
assert len(turns) == 2 and turns[0] != turns[1], turns
PY
# A conversation of exactly --ctx tokens leaves no position for a reply: refused with the
# chat's own message (a line of 16 tokens, --raw, --ctx 16).
count_tokens() {
    printf '%s' "$1" | "$NEXTN" tokenize "$MODEL" |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
line=""
for w in $(seq 1 40); do
    line="$line x$w"
    [ "$(count_tokens "$line")" -ge 16 ] && break
done
n_line=$(count_tokens "$line")
expect 1 "^error: the conversation \($n_line tokens\) no longer fits --ctx $n_line;" -- \
    bash -c "printf '%s\n' '$line' | '$NEXTN' chat '$MODEL' --raw --ctx $n_line"

# --- tokenize.
expect 2 "^nextn tokenize: expected exactly one MODEL path" -- "$NEXTN" tokenize
expect 2 "^nextn tokenize: expected exactly one MODEL path" -- "$NEXTN" tokenize "$MODEL" "$MODEL"
# --special reads <|im_start|> as the special token (id 1022 in tokenizer.json's added_tokens);
# without it the text is plain text, several tokens.
special_id=$(python3 - "$MODEL/tokenizer.json" <<'PY'
import json, sys
print([a["id"] for a in json.load(open(sys.argv[1]))["added_tokens"] if a["content"] == "<|im_start|>"][0])
PY
)
check "tokenize --special: <|im_start|> is one token" \
    [ "$(printf '<|im_start|>' | "$NEXTN" tokenize "$MODEL" --special)" = "[$special_id]" ]
check "tokenize: <|im_start|> is plain text" \
    [ "$(printf '<|im_start|>' | "$NEXTN" tokenize "$MODEL")" != "[$special_id]" ]
# --jsonl: a blank line (a CRLF one, or spaces and a tab) is an empty text; a line that is no JSON string is an error.
check "tokenize --jsonl: a bare CR line is []" \
    [ "$(printf '\r\n' | "$NEXTN" tokenize "$MODEL" --jsonl)" = "[]" ]
check "tokenize --jsonl: a line of spaces and a tab is blank too: []" \
    [ "$(printf '  \t \r\n' | "$NEXTN" tokenize "$MODEL" --jsonl)" = "[]" ]
jsonl() { printf "$1" | "$NEXTN" tokenize "${@:2}"; }
expect 1 "stdin line 2: expected a JSON string" -- jsonl '"a"\n1\n' "$MODEL" --jsonl
expect 1 "stdin line 1: not valid JSON" -- jsonl '{nope\n' "$MODEL" --jsonl

# --- inspect: what it prints follows from the files.
info=$("$NEXTN" inspect "$MODEL")
check "inspect: the MTP head is used" \
    bash -c 'grep -q "^mtp head: " <<<"$1" && ! grep -q "(plain decoding)" <<<"$1"' _ "$info"
check "inspect --no-mtp: plain decoding" \
    grep -q "^mtp head: .*(plain decoding)" <<<"$("$NEXTN" inspect "$MODEL" --no-mtp)"
check "inspect: layers, parameters and tensor types as config.json and the header give them" \
    python3 - "$MODEL" "$info" <<'PY'
import json, re, struct, sys
from collections import Counter
from math import prod
model, info = sys.argv[1], sys.argv[2]
types = json.load(open(model + "/config.json"))["text_config"]["layer_types"]
layers = "".join("L" if t == "linear_attention" else "A" for t in types)
assert re.search(r"^layers: +%d \(%s;" % (len(types), layers), info, re.M), (layers, info)
data = open(model + "/model.safetensors", "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
header.pop("__metadata__", None)
total = sum(prod(t["shape"]) for t in header.values())
mtp = sum(prod(t["shape"]) for n, t in header.items() if n.startswith("mtp."))
assert re.search(r"^parameters: +%d \(MTP %d\)$" % (total, mtp), info, re.M), (total, mtp, info)
counts = " ".join("%s x%d" % kv for kv in sorted(Counter(t["dtype"] for t in header.values()).items()))
assert re.search(r"^tensor types: +%s$" % counts, info, re.M), (counts, info)
PY

# The memory the matrices take with each --quant type falls with its bytes per weight: bf16 2,
# q8_0 34/32 (32 int8 codes and an f16 scale a block), q4 18/32 (16 bytes of codes and a scale).
check "inspect: weight memory with --quant bf16 > q8_0 > q4" python3 - "$info" <<'PY'
import re, sys
size = r"([0-9.]+) (\w+)"
m = re.search("with --quant bf16 >= %s, q8_0 >= %s, q4 >= %s" % (size, size, size), sys.argv[1])
unit = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 1e3, "MB": 1e6, "GB": 1e9}
bf16, q8, q4 = (float(m.group(i)) * unit[m.group(i + 1)] for i in (1, 3, 5))
assert bf16 > q8 > q4, (bf16, q8, q4)
PY

# --- bench: without a model the help is the answer, exit 2; --help exits 0.
expect 2 "" -- "$NEXTN" bench
check "bench --help exits 0" "$NEXTN" bench --help >/dev/null
# (A synthetic model of no such name: were 101 accepted, its error would follow at once.)
expect 2 "^nextn bench: --repeat must be between 1 and 100" -- "$NEXTN" bench --synthetic none --repeat 101

echo "flag_contracts: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
