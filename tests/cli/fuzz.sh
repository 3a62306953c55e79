#!/usr/bin/env bash
# A brief libFuzzer run of every target in fuzz/ (the GGUF, safetensors and config.json readers,
# the chat-template engine and the tokenizer; scripts/fuzz.sh):
# NEXTN_FUZZ_SECONDS per target (default 5) from the committed seeds. The clang build goes beside
# the nextn binary (BUILD/fuzz) so it is reused between runs. `make fuzz` runs longer.
# Exits 77 (SKIPPED) when clang / libFuzzer are missing. Usage: fuzz.sh NEXTN_BINARY
set -u
BUILD=$(dirname "$1")/fuzz
exec bash "$(dirname "$0")/../../scripts/fuzz.sh" "${NEXTN_FUZZ_SECONDS:-5}" "$BUILD"
