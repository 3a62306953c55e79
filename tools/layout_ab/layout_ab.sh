#!/usr/bin/env bash
# Builds and runs tools/layout_ab/layout_ab.cpp (one synthetic model in the Q4_0X and Q4_0R
# layouts, forwards alternating) against the built library.
#   tools/layout_ab/layout_ab.sh [MODEL] [WIDTH] [TOKENS]   defaults: qwen3.5-0.8b 1 150
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/build_tool.sh
build_tool layout_ab tools/layout_ab/layout_ab.cpp
"$TOOL_BIN" "${1:-qwen3.5-0.8b}" "${2:-1}" "${3:-150}"
