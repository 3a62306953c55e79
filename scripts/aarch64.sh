#!/usr/bin/env bash
# Builds nextn for 64-bit ARM with Debian's cross compiler and runs its tests under qemu-user, so
# the aarch64 build (its ARM kernel tables and the reference they are held to) is tested on an
# x86-64 machine. qemu gives the correctness of the ARM code, not its speed.
#   scripts/aarch64.sh BUILD_DIR [JOBS] [CTEST_REGEX]
# Installs what is missing first: the cross g++, qemu-user and the arm64 builds of the libraries
# (dpkg --add-architecture arm64), and registers qemu with binfmt_misc, so that the CLI tests can
# start the aarch64 `nextn` as they start the native one.
set -euo pipefail
build_dir=${1:?usage: scripts/aarch64.sh BUILD_DIR [JOBS] [CTEST_REGEX]}
jobs=${2:-$(nproc)}
regex=${3:-}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "adding Debian's arm64 architecture (for the arm64 libraries)"
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
fi
packages=(g++-aarch64-linux-gnu qemu-user qemu-user-binfmt nlohmann-json3-dev libcpp-httplib-dev:arm64
          libpcre2-dev:arm64 libicu-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Without systemd (a container, a VM started bare) nothing has registered qemu with the kernel.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
    { [ -e "$binfmt/register" ] || $SUDO mount -t binfmt_misc binfmt_misc "$binfmt"; } &&
        $SUDO sh -c "cat /usr/lib/binfmt.d/qemu-aarch64.conf > $binfmt/register" ||
        echo "warning: could not register qemu-aarch64 with binfmt_misc (it needs root and" \
             "$binfmt): the CLI tests, which start the aarch64 nextn directly, will fail" >&2
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DNEXTN_WERROR=ON \
    -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake > /dev/null
cmake --build "$build_dir" -j "$jobs"
cd "$build_dir"
# Emulated, a test runs 10-50x slower than natively: a long timeout.
if [ -n "$regex" ]; then
    ctest --output-on-failure -j "$jobs" --timeout 7200 -R "$regex"
else
    ctest --output-on-failure -j "$jobs" --timeout 7200
fi
