# Sourced by the shell tests in tests/cli/ (run from the repository root): counts of passed and
# failed checks, and `expect CODE PATTERN -- command...`, which runs the command and requires
# its exit code and a match of PATTERN (extended regex) in its stderr.
failures=0
passes=0

expect() {
    local code=$1 pattern=$2
    shift 3
    local out rc
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -ne "$code" ] || ! grep -qE -- "$pattern" <<<"$out"; then
        echo "FAIL: $* -> rc=$rc (want $code), stderr: $out (want /$pattern/)"
        failures=$((failures + 1))
    else
        passes=$((passes + 1))
    fi
}
