#!/usr/bin/env bash
# Builds and runs tools/cost_curve/cost_curve.cpp (the verify cost curve as ratios of medians
# over many alternating rounds) against the built library.
#   tools/cost_curve/cost_curve.sh [MODEL] [QUANT] [ROUNDS]   defaults: qwen3.5-0.8b q4 150
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/build_tool.sh
build_tool cost_curve tools/cost_curve/cost_curve.cpp
"$TOOL_BIN" "${1:-qwen3.5-0.8b}" "${2:-q4}" "${3:-150}"
