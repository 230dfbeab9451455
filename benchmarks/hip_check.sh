#!/usr/bin/env bash
# The one-call check for a machine with an AMD GPU:
#
#     bash benchmarks/hip_check.sh          # from anywhere; results in $OUT or benchmarks/results/hip
#
# NEVER RUN ON HARDWARE YET: it was written, and its benchmark and tests were
# exercised against a fake HIP runtime, on machines without an AMD GPU
# (docs/hip-device.md, "Status"). Expect to fix things on its first run.
#
# Sections, in order (each headed "=== ... ===" in the log):
#   1. machine    uname, python, gcc, /dev/kfd, rocminfo / rocm-smi (read-only queries)
#   2. venv       python3 -m venv --system-site-packages (an image's ROCm torch or CuPy is
#                 used, never downloaded), then pip install '.[test]' from this checkout
#                 (offline: from what is there)
#   3. rocm       hiprtc and the HIP runtime as quicklaunch finds them; when hiprtc is
#                 missing, on Debian/Ubuntu as root (and unless QL_CHECK_NO_APT=1):
#                 apt-get install -y libamdhip64-5 libhiprtc-builtins5 libamd-comgr2
#   4. tests      pytest tests/hip -q -rs (the GPU tests run: they skip only without a GPU)
#   5. freeze     pip freeze
#   6. benchmark  python benchmarks/hip_launch.py --out DIR (--quick when time is short):
#                 quicklaunch against a C loop calling hipModuleLaunchKernel, and CuPy-ROCm
#                 and torch-ROCm when they are installed (they are never installed here)
#   7. summary    DIR/summary.md, also printed last
#
# Files in DIR: hip_check.log (everything), summary.md, hip_results.json, hip_results.md,
# pytest-junit.xml. The whole run keeps to QL_CHECK_BUDGET seconds (default 460). It never
# changes GPU settings (no rocm-smi --set*, --reset*, or anything else that writes).
#
# Exit status: 0 when quicklaunch installed, the tests passed and the benchmark measured
# the C baseline and quicklaunch; 1 otherwise.
#
# Environment: OUT, PYTHON, QL_CHECK_BUDGET, QL_CHECK_QUICK=1, QL_CHECK_OFFLINE=1,
# QL_CHECK_NO_APT=1, QL_CHECK_VENV (venv path), QUICKLAUNCH_HIP_TEST_DEVICE (default hip:0).
CHECK=hip
. "$(dirname "$0")/check_common.sh" || exit 1

rocm_status() {   # what quicklaunch finds: hiprtc, the GPUs (public API only)
    "$1" - <<'PYEOF'
import quicklaunch as ql
try:
    major, minor = ql.hip.hiprtc_version()
    print(f"hiprtc: {major}.{minor}; archs up to {ql.hip.supported_archs()[-1]}")
except ql.CompileError as exc:
    print(f"hiprtc: MISSING: {str(exc)[:300]}")
count, why = 0, ""
while True:
    try:
        dev = ql.device(f"hip:{count}")
    except Exception as exc:  # no such device, no runtime, no driver
        why = f"{type(exc).__name__}: {exc}"
        break
    print(f"hip:{count}: {dev.description}")
    count += 1
print(f"AMD GPUs: {count}" + (f" ({why[:300]})" if not count else ""))
PYEOF
}

main() {
    local INSTALL_OK=0 TEST_RC=0 BENCH_RC=0 PY VPY
    : >"$TMPD/summary-lines"

    # ------------------------------------------------------------------ 1
    section "machine"
    date -u
    uname -a
    if [ -e /dev/kfd ]; then
        note "/dev/kfd: present"
    else
        note "/dev/kfd: MISSING (no amdgpu kernel driver, or not visible here)"
    fi
    if command -v rocminfo >/dev/null 2>&1; then
        run_t 60 rocminfo | grep -E 'Marketing Name|Name: +gfx|Wavefront Size' | head -20
    fi
    if command -v rocm-smi >/dev/null 2>&1; then
        run_t 30 rocm-smi --showproductname || true
    fi
    if ! PY=$(pick_python); then
        note "no python3 >= 3.10 found: nothing can be checked"
        return 1
    fi
    "$PY" --version
    command -v gcc >/dev/null 2>&1 && gcc --version | head -1 || echo "gcc not found (quicklaunch's C extension and the C baseline need a C compiler)"

    # ------------------------------------------------------------------ 2
    section "venv and quicklaunch"
    local VENV=${QL_CHECK_VENV:-$TMPD/venv}
    rm -rf "$VENV"
    if "$PY" -m venv --system-site-packages "$VENV"; then
        VPY="$VENV/bin/python"
    else
        note "python3 -m venv failed; using $PY itself"
        VPY=$PY
        export PIP_BREAK_SYSTEM_PACKAGES=1
    fi
    local -a PIP=("$VPY" -m pip install --retries 1 --timeout 20)
    if [ "${QL_CHECK_OFFLINE:-0}" != 1 ] && run_t 200 "${PIP[@]}" ".[test]"; then
        INSTALL_OK=1
    elif run_t 200 "${PIP[@]}" --no-index --no-build-isolation ".[test]" ||
        run_t 200 "${PIP[@]}" --no-index --no-build-isolation --no-deps .; then
        INSTALL_OK=1
    fi
    if [ "$INSTALL_OK" = 1 ]; then
        note "quicklaunch: installed ($("$VPY" -c 'import quicklaunch; print(quicklaunch.__version__, quicklaunch.__file__)' 2>&1 | tail -1))"
    else
        note "quicklaunch: INSTALL FAILED (see the log)"
        return 1
    fi

    # ------------------------------------------------------------------ 3
    section "rocm"
    rocm_status "$VPY" | tee "$TMPD/rocm.out"
    if grep -q '^hiprtc: MISSING' "$TMPD/rocm.out" && [ "${QL_CHECK_NO_APT:-0}" != 1 ] &&
        [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's ROCm 5.2 hiprtc (a ROCm install in /opt/rocm would be found first)"
        run_t 240 apt-get install -y libamdhip64-5 libhiprtc-builtins5 libamd-comgr2 || true
        rocm_status "$VPY" | tee "$TMPD/rocm.out"
    fi
    while IFS= read -r line; do note "$line"; done <"$TMPD/rocm.out"

    # ------------------------------------------------------------------ 4
    section "tests"
    local tt=$(($(left) - 150))
    [ "$tt" -gt 300 ] && tt=300
    [ "$tt" -lt 60 ] && tt=60
    run_t "$tt" "$VPY" -m pytest tests/hip -q -rs -p no:cacheprovider \
        --junitxml="$OUT_DIR/pytest-junit.xml" 2>&1 | tee "$TMPD/pytest.out"
    TEST_RC=${PIPESTATUS[0]}
    note "tests (tests/hip): exit $TEST_RC: $(grep -E '(passed|failed|error|skipped|no tests ran)' "$TMPD/pytest.out" | tail -1)"
    [ "$TEST_RC" = 124 ] && note "tests: stopped after ${tt}s"

    # ------------------------------------------------------------------ 5
    section "freeze"
    "$VPY" -m pip freeze 2>/dev/null

    # ------------------------------------------------------------------ 6
    section "benchmark"
    local -a BENCH=("$VPY" benchmarks/hip_launch.py --out "$OUT_DIR" --device "${QUICKLAUNCH_HIP_TEST_DEVICE:-hip:0}")
    [ "${QL_CHECK_QUICK:-0}" = 1 ] || [ "$(left)" -lt 120 ] && BENCH+=(--quick)
    run_t "$(($(left) > 60 ? $(left) : 60))" "${BENCH[@]}"
    BENCH_RC=$?
    note "benchmark: exit $BENCH_RC (results in $OUT_DIR/hip_results.md)"

    # ------------------------------------------------------------------ 7
    section "summary"
    {
        echo "# quicklaunch HIP check, $(date -u +%Y-%m-%dT%H:%MZ)"
        echo
        cat "$TMPD/summary-lines"
        echo
        [ -f "$OUT_DIR/hip_results.md" ] && cat "$OUT_DIR/hip_results.md"
    } >"$SUMMARY"
    cat "$SUMMARY"
    [ "$TEST_RC" = 0 ] && [ "$BENCH_RC" = 0 ]
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
