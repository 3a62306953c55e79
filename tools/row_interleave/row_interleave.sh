#!/usr/bin/env bash
# Builds and runs the 16-row-interleaved Q4_0 prototype against the built library's kernel.
#   tools/row_interleave/row_interleave.sh [ROWS] [COLS] [WIDTH] [THREADS]   defaults: 256 1024 4 1
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/build_tool.sh
build_tool row_interleave tools/row_interleave/row_interleave.cpp \
    -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
"$TOOL_BIN" "${1:-256}" "${2:-1024}" "${3:-4}" "${4:-1}"
