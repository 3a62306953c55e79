# Sourced by the tool scripts (tools/*/*.sh): build_tool NAME SOURCE [FLAGS...] compiles SOURCE
# against the built library ($BUILD_DIR, default build) into a temporary directory removed on
# exit, and sets TOOL_BIN to the binary. Run from the repository root.
build_tool() {
    local name=$1 source=$2
    shift 2
    local build=${BUILD_DIR:-build}
    [ -f "$build/libnextn_core.a" ] || { echo "$name: no $build/libnextn_core.a (run make build)" >&2; exit 1; }
    TOOL_WORK=$(mktemp -d)
    trap 'rm -rf "$TOOL_WORK"' EXIT
    TOOL_BIN=$TOOL_WORK/$name
    ${CXX:-g++} -O2 -std=c++20 "$@" -Isrc -o "$TOOL_BIN" "$source" "$build/libnextn_core.a" -lpthread \
        $(pkg-config --libs libpcre2-8) -licuuc
}
