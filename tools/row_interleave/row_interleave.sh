#!/usr/bin/env bash
# Builds and runs the 16-row-interleaved Q4_0 prototype against the built library's kernel.
#   tools/row_interleave/row_interleave.sh [ROWS] [COLS] [WIDTH] [THREADS]   defaults: 256 1024 4 1
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build}
[ -f "$BUILD/libnextn_core.a" ] || { echo "row_interleave: no $BUILD/libnextn_core.a (run make build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
${CXX:-g++} -O2 -std=c++20 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -Isrc \
    -o "$work/row_interleave" tools/row_interleave/row_interleave.cpp "$BUILD/libnextn_core.a" -lpthread \
    $(pkg-config --libs libpcre2-8) -licuuc
"$work/row_interleave" "${1:-256}" "${2:-1024}" "${3:-4}" "${4:-1}"
