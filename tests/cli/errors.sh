#!/usr/bin/env bash
# Bad flags, bad files and bad requests give one clear line and the right exit code; nothing
# crashes. Usage: errors.sh NEXTN_BINARY
set -u
NEXTN=$1
MODEL=tests/data/qwen35-dense-tiny
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The adaptive depth is remembered per model under $XDG_CACHE_HOME: keep the tests' runs out of
# the user's cache and independent of earlier runs.
export XDG_CACHE_HOME="$TMP/cache"
source tests/cli_expect.sh

expect 2 "unknown command" -- "$NEXTN" frobnicate
# The usage lists the environment variables; a bad value of one is an error naming it.
expect 2 "NEXTN_ISA=scalar\|avx2\|avxvnni\|avx512" -- "$NEXTN"
expect 2 "NEXTN_ROW_GROUP_FETCH=auto\|cursor\|streams" -- "$NEXTN"
expect 1 "^nextn run: error: NEXTN_ISA=sve9: unknown kernel ISA 'sve9'" -- env NEXTN_ISA=sve9 "$NEXTN" run "$MODEL" -p hi -n 2
expect 1 "^nextn run: error: NEXTN_ROW_GROUP_FETCH=sideways: unknown setting \(known: auto, cursor, streams\)" -- env NEXTN_ROW_GROUP_FETCH=sideways "$NEXTN" run "$MODEL" -p hi -n 2
expect 2 "unknown flag '--bogus'" -- "$NEXTN" run "$MODEL" -p hi --bogus
expect 2 "expects an integer" -- "$NEXTN" run "$MODEL" -p hi -n lots
expect 2 "exactly one of -p" -- "$NEXTN" run "$MODEL"
expect 2 "--bf16-activations and --f32-activations contradict" -- "$NEXTN" run "$MODEL" -p hi --bf16-activations --f32-activations
expect 2 "^nextn inspect: --bf16-activations and --f32-activations contradict" -- "$NEXTN" inspect "$MODEL" --bf16-activations --f32-activations
expect 2 "^nextn inspect: --no-mtp and --draft-model contradict" -- "$NEXTN" inspect "$MODEL" --no-mtp --draft-model "$MODEL"
expect 2 "^nextn run: --temp must be a finite value >= 0" -- "$NEXTN" run "$MODEL" -p hi --temp -1
expect 2 "^nextn run: --top-k must be >= 0 \(0 = off\), got -1" -- "$NEXTN" run "$MODEL" -p hi --top-k -1
expect 2 "^nextn run: --repeat-last-n must be >= -1" -- "$NEXTN" run "$MODEL" -p hi --repeat-last-n -2
expect 2 "^nextn run: --top-k 99999999999 is out of range" -- "$NEXTN" run "$MODEL" -p hi --top-k 99999999999
expect 2 "^nextn run: --logit-bias: expected TOKEN_ID\+BIAS or TOKEN_ID-BIAS" -- "$NEXTN" run "$MODEL" -p hi --logit-bias 12
expect 2 "^nextn run: --logit-bias: \+inf is not a bias" -- "$NEXTN" run "$MODEL" -p hi --logit-bias 12+inf
expect 1 "logit_bias token id 999999 is outside the vocabulary" -- "$NEXTN" run "$MODEL" -p hi --logit-bias 999999+1
expect 2 "^nextn run: --draft-depth must be auto or between 0 and 8" -- "$NEXTN" run "$MODEL" -p hi --draft-depth 99
# -1 is the loader's "auto", not a value the flag takes.
expect 2 "^nextn run: --draft-vocab must be >= 0 \(0 = whole vocabulary\), got -1" -- "$NEXTN" run "$MODEL" -p hi --draft-vocab -1
expect 2 "expects an integer" -- "$NEXTN" run "$MODEL" -p hi --draft-depth deep
expect 2 "^nextn run: --no-mtp and --draft-depth 4 contradict each other" -- "$NEXTN" run "$MODEL" -p hi --no-mtp --draft-depth 4
expect 0 "" -- "$NEXTN" run "$MODEL" -p hi -n 2 -q --no-mtp --draft-depth 0
expect 2 "^nextn run: --quant: unknown type .q3. \(supported: native, f32, bf16, q8_0, q4" -- "$NEXTN" run "$MODEL" -p hi --quant q3
expect 2 "--kv-type: unknown KV cache type .f8." -- "$NEXTN" run "$MODEL" -p hi --kv-type f8
expect 1 "does not exist" -- "$NEXTN" run "$TMP/missing" -p hi
expect 2 "^nextn run: --draft-model: the path is empty" -- "$NEXTN" run "$MODEL" -p hi --draft-model ""
# One prefix, the command's, and bench's counts name their flag.
expect 2 "^nextn run: expected exactly one MODEL path" -- "$NEXTN" run
expect 2 "^nextn inspect: expected exactly one MODEL path" -- "$NEXTN" inspect
expect 2 "^nextn bench: --prompt-tokens must be between 1 and [0-9]+ \(got 0\)" -- "$NEXTN" bench "$MODEL" --prompt-tokens 0
expect 2 "^nextn bench: --decode-tokens must be between 2 and [0-9]+ \(got 1\)" -- "$NEXTN" bench "$MODEL" --decode-tokens 1
# Counts near the integer limit are refused before any sum of them could overflow.
expect 2 "^nextn bench: --decode-tokens must be between 2 and 17592186044416 \(got 9223372036854775807\)" -- "$NEXTN" bench "$MODEL" --decode-tokens 9223372036854775807
expect 2 "^nextn run: --n-predict must be between 1 and 17592186044416" -- "$NEXTN" run "$MODEL" -p hi -n 9223372036854775807
expect 2 "^nextn chat: --n-predict must be between 1 and 17592186044416" -- "$NEXTN" chat "$MODEL" -n 9223372036854775807
expect 2 "^nextn bench: --repeat must be between 1 and 100" -- "$NEXTN" bench "$MODEL" --repeat 0
expect 2 "--threads must be between 0 and 1024" -- "$NEXTN" bench "$MODEL" --threads 5000
# Caches larger than any address space fail at once, naming the lengths.
expect 1 "--prompt-tokens 9999999999999 with --decode-tokens 64: out of memory" -- "$NEXTN" bench "$MODEL" --prompt-tokens 9999999999999
# The model's context length (max_position_embeddings 4096 in the fixture) bounds --ctx; a run
# that reaches the end of its context says so.
expect 2 "^nextn run: --ctx 99999999999 is more than the model's context length \(4096 tokens\)" -- "$NEXTN" run "$MODEL" -p hi --ctx 99999999999
expect 2 "^nextn chat: --ctx 5000 is more than the model's context length \(4096 tokens\)" -- "$NEXTN" chat "$MODEL" --ctx 5000
expect 2 "^nextn chat: --system needs the chat template, and --raw sends each line as-is" -- "$NEXTN" chat "$MODEL" --raw --system "be brief"
expect 2 "^nextn chat: --thinking needs the chat template, and --raw sends each line as-is" -- "$NEXTN" chat "$MODEL" --raw --thinking off
expect 0 "note: stopped after 19 tokens at the end of the context \(20 tokens, --ctx\)" -- "$NEXTN" run "$MODEL" -p hi -n 50 --ctx 20 --ignore-eos -q
expect 2 "^nextn run: --ctx 3 leaves no room after the prompt \(3 tokens\): it must be at least 4" -- "$NEXTN" run "$MODEL" --tokens 1,2,3 --ctx 3
expect 2 "^nextn run: --ctx -5 leaves no room after the prompt \(3 tokens\)" -- "$NEXTN" run "$MODEL" --tokens 1,2,3 --ctx -5
long_prompt=$(python3 -c "print(','.join(str(i % 1000 + 1) for i in range(4100)))")
expect 1 "^nextn run: error: the prompt \(4100 tokens\) does not fit the model's context length \(4096\)" -- "$NEXTN" run "$MODEL" --tokens "$long_prompt" -n 2
# More threads than the machine has: allowed, with a warning.
if [ "$(nproc)" -lt 64 ]; then
    expect 0 "warning: --threads 64 is more than the [0-9]+ hardware threads" -- "$NEXTN" run "$MODEL" -p hi -n 2 --threads 64
fi
expect 1 "outside the vocabulary" -- "$NEXTN" run "$MODEL" --tokens 1,2,999999
# A chat reply may use what is left of the context (-n 512 by default, more than --ctx 24); a
# conversation that no longer fits ends the chat with an error.
chat_lines() { printf "$1" | "$NEXTN" chat "${@:2}"; }
expect 0 "note: the reply stopped at the end of the context \(--ctx 24\)" -- chat_lines 'hi\n' "$MODEL" --ctx 24
expect 1 "error: the conversation \([0-9]+ tokens\) no longer fits --ctx 24" -- chat_lines 'hi\nagain\n' "$MODEL" --ctx 24
# Input that is not UTF-8 is read with U+FFFD for each invalid sequence, and said so.
tokenize_bytes() { printf "$1" | "$NEXTN" tokenize "${@:2}"; }
expect 0 "warning: the input is not valid UTF-8; each invalid byte sequence is read as U\+FFFD" -- tokenize_bytes '\xff\xfeabc' "$MODEL"
# --stats-json is checked before the model loads and the text is generated.
expect 1 "--stats-json: the folder '.*/none' does not exist" -- "$NEXTN" run "$MODEL" -p hi --stats-json "$TMP/none/s.json"
expect 1 "--stats-json: '.*' is a directory" -- "$NEXTN" run "$MODEL" -p hi --stats-json "$TMP"
# Output that cannot be written (a full disk) is an error, not a silent exit 0.
if [ -w /dev/full ]; then
    to_full() { "$@" >/dev/full; }
    expect 1 "^nextn run: error: cannot write the output to stdout" -- to_full "$NEXTN" run "$MODEL" -p hi -n 4 -q
    expect 1 "^nextn inspect: error: cannot write the output to stdout" -- to_full "$NEXTN" inspect "$MODEL"
    expect 1 "^nextn: error: cannot write the output to stdout" -- to_full "$NEXTN" --help
    expect 1 "^nextn run: error: --stats-json: error writing '/dev/full'" -- "$NEXTN" run "$MODEL" -p hi -n 4 -q --stats-json /dev/full
fi

# A truncated safetensors file.
mkdir "$TMP/trunc"
cp "$MODEL/config.json" "$TMP/trunc/"
head -c 5000 "$MODEL/model.safetensors" > "$TMP/trunc/model.safetensors"
expect 1 "model.safetensors: safetensors header length .* runs past the end" -- "$NEXTN" inspect "$TMP/trunc"
head -c 200000 "$MODEL/model.safetensors" > "$TMP/trunc/model.safetensors"
expect 1 "model.safetensors: tensor '.*' data_offsets .* run past the end of the data" -- "$NEXTN" inspect "$TMP/trunc"

# A header whose offsets overlap.
mkdir "$TMP/overlap"
cp "$MODEL/config.json" "$TMP/overlap/"
python3 - "$TMP/overlap/model.safetensors" <<'PY'
import json, struct, sys
h = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}
hb = json.dumps(h).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hb)) + hb + b"\0" * 12)
PY
expect 1 "overlap" -- "$NEXTN" inspect "$TMP/overlap"

# A config missing a required field.
mkdir "$TMP/noconf"
python3 -c "import json,sys; c=json.load(open('$MODEL/config.json')); del c['text_config']['hidden_size']; json.dump(c, open('$TMP/noconf/config.json','w'))"
cp "$MODEL/model.safetensors" "$TMP/noconf/"
expect 1 "missing required field 'hidden_size'" -- "$NEXTN" inspect "$TMP/noconf"

# An unsupported architecture.
mkdir "$TMP/arch"
python3 -c "import json; c=json.load(open('$MODEL/config.json')); c['model_type']='llama'; json.dump(c, open('$TMP/arch/config.json','w'))"
cp "$MODEL/model.safetensors" "$TMP/arch/"
expect 1 "unsupported architecture 'llama' \(supported: qwen3_5, qwen3_5_moe\)" -- "$NEXTN" inspect "$TMP/arch"

# An MLX quantization section that is no object is refused, not read as "not quantized".
mkdir "$TMP/mlxquant"
python3 -c "import json; c=json.load(open('$MODEL/config.json')); c['quantization']='4bit'; json.dump(c, open('$TMP/mlxquant/config.json','w'))"
cp "$MODEL/model.safetensors" "$TMP/mlxquant/"
expect 1 "mlxquant/config.json: 'quantization' must be a JSON object" -- "$NEXTN" inspect "$TMP/mlxquant"

# A tensor with the wrong shape (config says a wider MLP than the file holds).
mkdir "$TMP/shape"
python3 -c "import json; c=json.load(open('$MODEL/config.json')); c['text_config']['intermediate_size']=512; json.dump(c, open('$TMP/shape/config.json','w'))"
cp "$MODEL/model.safetensors" "$TMP/shape/"
expect 1 "mlp.gate_proj.weight' has shape \[256, 128\], expected \[512, 128\]" -- "$NEXTN" inspect "$TMP/shape"

# A tensor the files lack is named as the files would name it (its canonical name beside it).
mkdir "$TMP/missing"
cp "$MODEL/config.json" "$TMP/missing/"
python3 - "$MODEL/model.safetensors" "$TMP/missing/model.safetensors" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old = b'"model.language_model.layers.0.mlp.up_proj.weight"'
assert data.count(old) == 1
open(sys.argv[2], "wb").write(data.replace(old, old.replace(b"up_proj", b"up_prxj")))
PY
expect 1 "missing tensor 'model.language_model.layers.0.mlp.up_proj.weight' \(layers.0.mlp.up_proj.weight\)" -- "$NEXTN" run "$TMP/missing" -p hi

# Paths that are no model: a device, a text file named .gguf, an index that names no shard.
expect 1 "model path '/dev/null' is neither a file nor a directory" -- "$NEXTN" inspect /dev/null
echo "not a model" > "$TMP/text.gguf"
expect 1 "text.gguf: not a GGUF file \(it does not start with the bytes 'GGUF'\)" -- "$NEXTN" inspect "$TMP/text.gguf"
expect 1 "text.gguf: not a GGUF file" -- "$NEXTN" tokenize "$TMP/text.gguf"
mkdir "$TMP/noshards"
cp "$MODEL/config.json" "$MODEL/model.safetensors" "$TMP/noshards/"
echo '{"weight_map": {}}' > "$TMP/noshards/model.safetensors.index.json"
expect 1 "model.safetensors.index.json: weight_map is empty" -- "$NEXTN" inspect "$TMP/noshards"
# Flags that belong elsewhere: q4_k_m is for synthetic models; bench takes one model.
expect 2 "^nextn run: --quant q4_k_m builds synthetic models" -- "$NEXTN" run "$MODEL" -p hi --quant q4_k_m
expect 2 "^nextn run: --quant q2_k builds synthetic models" -- "$NEXTN" run "$MODEL" -p hi --quant q2_k
expect 2 "^nextn bench: give either MODEL or --synthetic NAME" -- "$NEXTN" bench "$MODEL" "$MODEL"

mkdir -p "$TMP/confdir/config.json"
expect 1 "confdir: config.json is a directory, not a file" -- "$NEXTN" inspect "$TMP/confdir"

# Not JSON.
mkdir "$TMP/badjson"
echo "{nope" > "$TMP/badjson/config.json"
expect 1 "not valid JSON" -- "$NEXTN" inspect "$TMP/badjson"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
