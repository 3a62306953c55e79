# Cross-compiles for 64-bit ARM Linux with Debian's cross toolchain (g++-aarch64-linux-gnu) and
# the arm64 libraries installed beside the host's (dpkg --add-architecture arm64). The tests then
# run under qemu-user: make aarch64 (scripts/aarch64.sh sets it all up).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# gtest_discover_tests and ctest run the test binaries through this. No -L: the binaries load the
# arm64 libraries they were linked with (/lib/ld-linux-aarch64.so.1 and /usr/lib/aarch64-linux-gnu,
# Debian's multiarch). With -L /usr/aarch64-linux-gnu, qemu 7.2 gave them the cross toolchain's
# older libc instead, and there a single-threaded test spun forever in user code.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
