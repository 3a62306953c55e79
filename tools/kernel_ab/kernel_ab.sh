#!/usr/bin/env bash
# Times the int8 matrix kernel of git revision REV (a) against the working tree's (b) on a
# synthetic model, alternating token by token in one process (kernel_ab.cpp says why).
#   tools/kernel_ab/kernel_ab.sh REV [MODEL] [QUANT] [WIDTH] [TOKENS]
#   QUANT q8, q4 or q4_k_m (llama.cpp's Q4_K_M mix); defaults: qwen3.5-0.8b q8 1 150;
#   ISA=avx2 or ISA=avxvnni for the 256-bit kernels (NEXTN_ISA is set to match)
# NEXTN_ROW_GROUP_FETCH=streams times the AVX-512 group-stream entry (on AMD the cursor is what
# runs unless the model's chooser picks the streams).
# B_FLAGS (optional): extra compiler flags for the working tree's side only, e.g. -DSOME_VARIANT=1
# to time a variant the working tree guards with a macro against REV.
# Needs a built tree (make build). Both kernels must use the current WeightMatrix /
# QuantizedColumns layout: it refuses when REV's kernels/weight.h or kernels/int8_dot.h differ
# (for q4_k_m also kernels/row_groups.h).
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:?usage: kernel_ab.sh REV [MODEL] [QUANT] [WIDTH] [TOKENS]}
MODEL=${2:-qwen3.5-0.8b}
QUANT=${3:-q8}
WIDTH=${4:-1}
TOKENS=${5:-150}
ISA=${ISA:-avx512}
BUILD=${BUILD_DIR:-build}
[ -f "$BUILD/libnextn_core.a" ] || { echo "kernel_ab: no $BUILD/libnextn_core.a (run make build)" >&2; exit 1; }
# The row groups' layout (kernels/row_groups.h) changed for the K-quants in session 55: a q4_k_m
# run against an earlier revision would time its kernel reading the other layout's bytes.
headers="src/kernels/weight.h src/kernels/int8_dot.h"
[ "$QUANT" = q4_k_m ] && headers="$headers src/kernels/row_groups.h"
for h in $headers; do
    if ! git show "$REV:$h" | cmp -s - "$h"; then
        echo "kernel_ab: $h differs between $REV and the working tree; the two kernels would not share one layout" >&2
        exit 1
    fi
done
case "$ISA" in
    avx512) TU=src/kernels/x86/avx512/gemm_i8_avx512.cpp
            FLAGS="-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni" ;;
    avx2)   TU=src/kernels/x86/avx2/gemm_i8_avx2.cpp; FLAGS="-mavx2 -mfma -mf16c"; export NEXTN_ISA=avx2 ;;
    avxvnni) TU=src/kernels/x86/avxvnni/gemm_i8_avxvnni.cpp; FLAGS="-mavx2 -mfma -mf16c -mavxvnni"
            export NEXTN_ISA=avxvnni ;;
    *) echo "kernel_ab: ISA must be avx512, avx2 or avxvnni" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old"
git archive "$REV" src | tar -x -C "$work/old"
CXX=${CXX:-g++}
# The AVX-512 unit sends the row-group types to their own unit (where the revision has one, under
# either name it has had): both are built.
EXTRAS="src/kernels/x86/avx512/gemm_row_groups_avx512.cpp src/kernels/x86/avx512/gemm_q4_0r_avx512.cpp"
objects=()
for side in a b; do
    root=.; [ $side = a ] && root=$work/old
    side_flags=""; [ $side = b ] && side_flags=${B_FLAGS:-}
    $CXX -O2 -std=c++20 $FLAGS $side_flags -Dnextn=nextn_$side -I"$root/src" -c "$root/$TU" -o "$work/$side.o"
    objects+=("$work/$side.o")
    # The tiles' scratch (a generic unit, where the revision has it) goes into each side's namespace.
    if [ -f "$root/src/kernels/x86/tile_scratch.cpp" ]; then
        $CXX -O2 -std=c++20 -Dnextn=nextn_$side -I"$root/src" -c "$root/src/kernels/x86/tile_scratch.cpp" \
            -o "$work/${side}_scratch.o"
        objects+=("$work/${side}_scratch.o")
    fi
    for extra in $EXTRAS; do
        if [ "$ISA" = avx512 ] && [ -f "$root/$extra" ]; then
            $CXX -O2 -std=c++20 $FLAGS $side_flags -Dnextn=nextn_$side -I"$root/src" -c "$root/$extra" -o "$work/${side}_groups.o"
            objects+=("$work/${side}_groups.o")
            break
        fi
    done
done
AB_DEFS=""; [ "$ISA" = avx512 ] && AB_DEFS=-DKERNEL_AB_GROUP_STREAMS
$CXX -O2 -std=c++20 -Isrc -DKERNEL_AB_ISA=$ISA $AB_DEFS -o "$work/kernel_ab" tools/kernel_ab/kernel_ab.cpp \
    "${objects[@]}" "$BUILD/libnextn_core.a" -lpthread $(pkg-config --libs libpcre2-8) -licuuc
"$work/kernel_ab" "$MODEL" "$QUANT" "$WIDTH" "$TOKENS"
