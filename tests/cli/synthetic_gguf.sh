#!/usr/bin/env bash
# tools/synthetic_gguf (the file both nextn and llama.cpp's llama-bench time for README Speed's
# same-machine comparison) writes a GGUF that nextn loads with the shapes asked for, and that
# runs a forward. Where Debian's python3-numpy is missing it checks the tool's shapes and flags,
# then says SKIPPED (77): writing weights needs numpy.
# Usage: synthetic_gguf.sh NEXTN_BINARY
set -u
NEXTN=$1
source tests/cli_expect.sh

# Its release shapes are a copy of src/model/synthetic.cpp's: the two must agree. The table and
# the flags' checks need no numpy, so these run everywhere.
expect 0 "synthetic_gguf shapes: [0-9]+ values of 3 releases compared, 0 differ" -- \
    /usr/bin/python3 tests/cli/synthetic_gguf_shapes.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
expect 2 "invalid choice: 'qwen9'" -- tools/synthetic_gguf/synthetic_gguf.py "$dir/x.gguf" --model qwen9
if ! /usr/bin/python3 -c "import numpy" 2>/dev/null; then
    expect 1 "needs numpy to write weights: install Debian's python3-numpy" -- \
        tools/synthetic_gguf/synthetic_gguf.py "$dir/x.gguf" --model tiny
    [ "${failures:-0}" -eq 0 ] || exit 1
    echo "SKIPPED: the shapes and flags were checked; writing a GGUF needs /usr/bin/python3 with numpy (Debian's python3-numpy)"
    exit 77
fi
# The adaptive depth is remembered per model under $XDG_CACHE_HOME: keep this test's out of the
# user's cache.
export XDG_CACHE_HOME="$dir/cache"

expect 1 "cannot write $dir/no/such/dir/x.gguf: No such file or directory" -- \
    tools/synthetic_gguf/synthetic_gguf.py "$dir/no/such/dir/x.gguf" --model tiny
# The comparison script wants a llama-bench binary (none is built here): refused, saying so.
expect 2 "LLAMA_BENCH must be an executable llama-bench" -- tools/synthetic_gguf/compare_llama.sh
expect 2 "LLAMA_BENCH must be an executable llama-bench" -- tools/synthetic_gguf/compare_llama.sh "$dir"

for type in q8_0 q4_0; do
    file="$dir/tiny-$type.gguf"
    if ! tools/synthetic_gguf/synthetic_gguf.py "$file" --model tiny --type "$type" >/dev/null; then
        echo "FAIL: synthetic_gguf.py --model tiny --type $type exited non-zero"
        failures=$((failures + 1))
        continue
    fi
    # The tool's "tiny" shapes, as nextn's GGUF reader finds them.
    info=$("$NEXTN" inspect "$file" 2>/dev/null)
    for want in "vocab: +512" "hidden: +128" "layers: +4 \(LLLA;" \
                "attention: +4 q heads, 2 kv heads, head_dim 64, rotary dims 16" \
                "gated deltanet: +2 k heads x 32, 4 v heads x 32, conv 4" "ffn: +dense SwiGLU, width 256" \
                "lm head: +separate" "mtp head: +inline" "tensor types: +F32 x30 ${type^^} x41"; do
        if grep -qE -- "$want" <<<"$info"; then
            passes=$((passes + 1))
        else
            echo "FAIL: nextn inspect of the $type file lacks /$want/; it printed:"
            echo "$info"
            failures=$((failures + 1))
        fi
    done
    # --f32-activations: the matrices as f32 activations read them, the file's blocks without
    # the int8-dot repacking (inspect's help).
    info=$("$NEXTN" inspect "$file" --f32-activations 2>/dev/null)
    if grep -qE "^weights held as: $type x41 \(matrices" <<<"$info"; then
        passes=$((passes + 1))
    else
        echo "FAIL: nextn inspect --f32-activations of the $type file: $(grep "^weights held" <<<"$info")"
        failures=$((failures + 1))
    fi
    # Forwards over it, the MTP head's (the file's last block) included.
    expect 0 "acceptance by depth: +d1 [0-9]+/[0-9]+" -- "$NEXTN" run "$file" -p "hello" -n 8
done

echo "synthetic_gguf: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
