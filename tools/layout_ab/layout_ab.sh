#!/usr/bin/env bash
# Builds and runs tools/layout_ab/layout_ab.cpp (one synthetic model chunked and in 16-row groups,
# Q4_0X / Q4_0R or Q8_0X / Q8_0R, forwards alternating) against the built library.
#   tools/layout_ab/layout_ab.sh [MODEL] [QUANT] [WIDTH] [TOKENS]   defaults: qwen3.5-0.8b q4 1 150
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/build_tool.sh
build_tool layout_ab tools/layout_ab/layout_ab.cpp
"$TOOL_BIN" "${1:-qwen3.5-0.8b}" "${2:-q4}" "${3:-1}" "${4:-150}"
