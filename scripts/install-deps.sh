#!/usr/bin/env bash
# Installs the Debian packages the build and its tests need, only when some are missing.
# python3-numpy: the offline tool tools/synthetic_gguf, which tests/cli/synthetic_gguf.sh runs.
set -euo pipefail
packages=(build-essential cmake libgtest-dev libbenchmark-dev nlohmann-json3-dev
          libcpp-httplib-dev libpcre2-dev libicu-dev python3-numpy)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"
