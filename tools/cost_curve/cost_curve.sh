#!/usr/bin/env bash
# Builds and runs tools/cost_curve/cost_curve.cpp (the verify cost curve as ratios of medians
# over many alternating rounds) against the built library.
#   tools/cost_curve/cost_curve.sh [MODEL] [QUANT] [ROUNDS]   defaults: qwen3.5-0.8b q4 150
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build}
[ -f "$BUILD/libnextn_core.a" ] || { echo "cost_curve: no $BUILD/libnextn_core.a (run make build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
${CXX:-g++} -O2 -std=c++20 -Isrc -o "$work/cost_curve" tools/cost_curve/cost_curve.cpp \
    "$BUILD/libnextn_core.a" -lpthread $(pkg-config --libs libpcre2-8) -licuuc
"$work/cost_curve" "${1:-qwen3.5-0.8b}" "${2:-q4}" "${3:-150}"
