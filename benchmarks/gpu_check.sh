#!/usr/bin/env bash
# The one-call check for a machine with an NVIDIA GPU and nothing set up:
#
#     bash benchmarks/gpu_check.sh          # from anywhere; results in $OUT or benchmarks/results/gpu
#
# Sections, in order (each headed "=== ... ===" in the log):
#   1. machine    nvidia-smi (read-only queries), python, gcc, the driver's CUDA version
#   2. venv       python3 -m venv, which also sees the packages python3 already has
#                 (so an image's preinstalled torch or CuPy is used rather than downloaded;
#                 QL_CHECK_BARE_VENV=1 for a venv with nothing in it), then
#                 pip install '.[cuda,test]' from this checkout (offline: from what is there)
#   3. tests      pytest tests/cuda tests/nvrtc -q -rs (whichever exist)
#   4. peers      each peer not importable yet is installed best effort, with a timeout,
#                 binary wheels only, within what is left of the time budget; only when a
#                 package index answers: cuda-core, CuPy, numba-cuda, warp-lang, torch, triton
#   5. freeze     pip freeze
#   6. benchmark  python benchmarks/cuda_launch.py --out DIR (--quick when time is short;
#                 rerun once with --isolated if the process crashed)
#   6b. driver    the null-driver rows (python -m quicklaunch.bench.cuda.null_overhead) twice
#                 on this machine: on the null driver (checked) and on the real driver
#                 (--real), DIR/driver-overhead-{null,real}.json, so the two tables compare
#                 row by row on one CPU (docs/why-latency.md)
#   6c. graphs, then frameworks (python -m quicklaunch.bench.frameworks --device cuda, where
#                 a CUDA build of torch is importable): DIR/graphs.json, DIR/frameworks.json
#   7. summary    DIR/summary.md, also printed last
#
# Files in DIR: gpu_check.log (everything), summary.md, results.json, results.md,
# pytest-junit.xml. The whole run keeps to QL_CHECK_BUDGET seconds (default 460).
# It never changes GPU settings: no nvidia-smi -pm/-lgc/-ac/-r or anything else that writes.
#
# Exit status: 0 when quicklaunch installed, the tests passed (or none were collected) and
# the benchmark measured quicklaunch's own rows; 1 otherwise. Peers never affect it.
#
# Environment: OUT, PYTHON (interpreter to build the venv from), QL_CHECK_BUDGET,
# QL_CHECK_QUICK=1, QL_CHECK_NO_PEERS=1, QL_CHECK_OFFLINE=1, QL_CHECK_BARE_VENV=1,
# QL_CHECK_VENV (venv path), QL_WHEELS (a folder of wheels pip may install from),
# QL_BENCH_ARGS (more options for cuda_launch.py, e.g. "--only quicklaunch,cupy").
CHECK=gpu
. "$(dirname "$0")/check_common.sh" || exit 1

main() {
    local INSTALL_OK=0 TEST_RC=0 BENCH_RC=0 ONLINE=0 CUDA_MAJOR=0 PY VPY
    : >"$TMPD/summary-lines"

    # ------------------------------------------------------------------ 1
    section "machine"
    date -u
    uname -a
    if command -v nvidia-smi >/dev/null 2>&1; then
        run_t 30 nvidia-smi
        run_t 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,clocks.max.sm,persistence_mode --format=csv
        note "GPU: $(run_t 30 nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -1)"
    else
        note "nvidia-smi not found"
    fi
    if ! PY=$(pick_python); then
        note "no python3 >= 3.10 found: nothing can be checked"
        return 1
    fi
    "$PY" --version
    command -v gcc >/dev/null 2>&1 && gcc --version | head -1 || echo "gcc not found (quicklaunch's C extension and the C baseline need a C compiler)"
    CUDA_MAJOR=$("$PY" - <<'EOF'
import ctypes
try:
    v = ctypes.c_int()
    ok = ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)) == 0
    print(v.value // 1000 if ok else 0)
except OSError:
    print(0)
EOF
)
    note "driver's CUDA major version: ${CUDA_MAJOR} (0: no CUDA driver found)"

    # ------------------------------------------------------------------ 2
    section "venv and quicklaunch"
    local VENV=${QL_CHECK_VENV:-$TMPD/venv} flag="--system-site-packages"
    [ "${QL_CHECK_BARE_VENV:-0}" = 1 ] && flag=""
    rm -rf "$VENV"
    if "$PY" -m venv $flag "$VENV"; then
        VPY="$VENV/bin/python"
        if [ -n "$flag" ]; then
            # --system-site-packages reaches only the base interpreter's packages; when
            # python3 is itself a venv (as on images that preinstall torch), add its own.
            local parent vsite
            parent=$("$PY" -c 'import site, sys; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
            vsite=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
            if [ -n "$parent" ] && [ -d "$vsite" ]; then
                printf '%s\n' "$parent" >"$vsite/_quicklaunch_check_parent.pth"
                echo "the venv also sees: $parent"
            fi
        fi
    else
        note "python3 -m venv failed; using $PY itself"
        VPY=$PY
        export PIP_BREAK_SYSTEM_PACKAGES=1
    fi
    local -a PIP=("$VPY" -m pip install --retries 1 --timeout 20)
    if [ -n "${QL_WHEELS:-}" ] && [ -d "${QL_WHEELS}" ]; then
        PIP+=(--find-links "$QL_WHEELS")
    fi
    if [ "${QL_CHECK_OFFLINE:-0}" != 1 ] &&
        run_t 30 "$VPY" -m pip download --no-deps --no-cache-dir --retries 0 --timeout 8 \
            -d "$TMPD/probe" pip >/dev/null 2>&1; then
        ONLINE=1
        note "package index: reachable"
    else
        note "package index: not reachable (installing from what is already here; peers are not installed)"
    fi
    if [ "$ONLINE" = 1 ]; then
        local it=$(($(left) - 300))
        [ "$it" -lt 150 ] && it=150
        [ "$it" -gt 240 ] && it=240
        run_t "$it" "${PIP[@]}" ".[cuda,test]" && INSTALL_OK=1
    else
        run_t 240 "${PIP[@]}" --no-index --no-build-isolation ".[cuda,test]" && INSTALL_OK=1
        if [ "$INSTALL_OK" = 0 ]; then
            echo "retrying without the extras' dependencies"
            run_t 240 "${PIP[@]}" --no-index --no-build-isolation --no-deps . && INSTALL_OK=1
        fi
    fi
    if [ "$INSTALL_OK" = 1 ]; then
        note "quicklaunch: installed ($("$VPY" -c 'import quicklaunch; print(quicklaunch.__version__, quicklaunch.__file__)' 2>&1 | tail -1))"
    else
        note "quicklaunch: INSTALL FAILED (see the log)"
    fi
    if [ "$CUDA_MAJOR" -gt 0 ]; then
        # An NVRTC newer than the driver emits code the driver may refuse: use one of
        # the driver's CUDA major version, from a wheel or a toolkit, when there is one.
        if [ "$ONLINE" = 1 ] && [ "$CUDA_MAJOR" = 12 ]; then
            run_t 120 "${PIP[@]}" --only-binary=:all: nvidia-cuda-nvrtc-cu12 || echo "nvidia-cuda-nvrtc-cu12 not installed"
        fi
        local nvrtc
        nvrtc=$("$VPY" - "$CUDA_MAJOR" <<'EOF'
import glob, importlib.util, os, sys
major = sys.argv[1]
roots = []
spec = importlib.util.find_spec("nvidia")
if spec:
    roots += [(r, ("cu*/lib", "cuda_nvrtc/lib")) for r in spec.submodule_search_locations or []]
for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
    if r:
        roots.append((r, ("lib64", "lib")))
for root, subs in roots:
    for sub in subs:
        found = sorted(p for p in glob.glob(os.path.join(root, sub, f"libnvrtc.so.{major}*"))
                       if "builtins" not in os.path.basename(p))
        if found:
            print(found[0])
            sys.exit(0)
EOF
)
        if [ -n "$nvrtc" ]; then
            export QUICKLAUNCH_NVRTC="$nvrtc"
            note "QUICKLAUNCH_NVRTC=$nvrtc (matches the driver's CUDA $CUDA_MAJOR)"
        fi
    fi

    # ------------------------------------------------------------------ 3
    section "tests"
    local -a dirs=()
    local d
    for d in tests/cuda tests/nvrtc; do
        [ -d "$d" ] && dirs+=("$d")
    done
    if [ "$INSTALL_OK" = 0 ]; then
        TEST_RC=1
        note "tests: not run (quicklaunch did not install)"
    elif [ ${#dirs[@]} -eq 0 ]; then
        note "tests: no tests/cuda or tests/nvrtc in this checkout"
    else
        local tt=$(($(left) - 240))
        [ "$tt" -gt 240 ] && tt=240
        [ "$tt" -lt 60 ] && tt=60
        run_t "$tt" "$VPY" -m pytest "${dirs[@]}" -q -rs -p no:cacheprovider \
            --junitxml="$OUT_DIR/pytest-junit.xml" 2>&1 | tee "$TMPD/pytest.out"
        TEST_RC=${PIPESTATUS[0]}
        if [ "$TEST_RC" = 5 ]; then
            TEST_RC=0
            note "tests (${dirs[*]}): none collected"
        else
            note "tests (${dirs[*]}): exit $TEST_RC: $(grep -E '(passed|failed|error|skipped|no tests ran)' "$TMPD/pytest.out" | tail -1)"
            [ "$TEST_RC" = 124 ] && note "tests: stopped after ${tt}s"
        fi
    fi

    # ------------------------------------------------------------------ 4
    section "peers"
    local -a PEERS
    local M=$CUDA_MAJOR
    [ "$M" -ge 13 ] && M=13
    [ "$M" -lt 12 ] && M=12
    # name | distributions that count as installed | pip spec | seconds at most
    PEERS=("cuda.core|cuda-core|cuda-core[cu$M]|90"
        "cuda.bindings|cuda-bindings cuda-python|cuda-bindings|60"
        "CuPy|cupy cupy-cuda12x cupy-cuda13x|cupy-cuda${M}x|120"
        "Numba-CUDA|numba-cuda|numba-cuda[cu$M]|120"
        "Warp|warp-lang|warp-lang|120"
        "torch|torch|torch|240"
        "Triton|triton|triton|120")
    local entry name dists spec cap have t rc
    for entry in "${PEERS[@]}"; do
        IFS='|' read -r name dists spec cap <<<"$entry"
        # shellcheck disable=SC2086  # $dists is a list of names
        have=$("$VPY" - $dists <<'EOF'
import sys
from importlib import metadata
for d in sys.argv[1:]:
    try:
        print(f"{d} {metadata.version(d)}")
        break
    except metadata.PackageNotFoundError:
        pass
EOF
)
        if [ -n "$have" ]; then
            note "peer $name: already installed ($have)"
            continue
        fi
        if [ "${QL_CHECK_NO_PEERS:-0}" = 1 ]; then
            note "peer $name not installed (QL_CHECK_NO_PEERS=1)"
            continue
        fi
        if [ "$ONLINE" = 0 ] || [ "$INSTALL_OK" = 0 ] || [ "$CUDA_MAJOR" = 0 ]; then
            local why="no package index"
            [ "$INSTALL_OK" = 0 ] && why="quicklaunch did not install"
            [ "$CUDA_MAJOR" = 0 ] && why="no CUDA driver"
            note "peer $name not installed ($why)"
            continue
        fi
        t=$(($(left) - 200))
        [ "$t" -gt "$cap" ] && t=$cap
        if [ "$t" -lt 20 ]; then
            note "peer $name not installed (the time budget is spent)"
            continue
        fi
        echo "installing $spec (at most ${t}s)"
        run_t "$t" "${PIP[@]}" --only-binary=:all: "$spec"
        rc=$?
        if [ "$rc" = 0 ]; then
            note "peer $name: installed $spec"
        elif [ "$rc" = 124 ]; then
            note "peer $name not installed (pip install $spec took over ${t}s)"
        else
            note "peer $name not installed (pip install $spec failed with status $rc)"
        fi
    done

    # ------------------------------------------------------------------ 5
    section "pip freeze"
    "$VPY" -m pip freeze 2>&1
    [ -n "${QUICKLAUNCH_NVRTC:-}" ] && echo "QUICKLAUNCH_NVRTC=$QUICKLAUNCH_NVRTC"

    # ------------------------------------------------------------------ 6
    section "benchmark"
    if [ "$INSTALL_OK" = 0 ]; then
        BENCH_RC=1
        note "benchmark: not run (quicklaunch did not install)"
    else
        local bt=$(($(left) - 15)) quick="" budget probe_t
        [ "$bt" -gt 300 ] && bt=300
        [ "$bt" -lt 60 ] && bt=60
        if [ "${QL_CHECK_QUICK:-0}" = 1 ] || [ "$bt" -lt 180 ]; then
            quick="--quick"
        fi
        probe_t=$((bt / 3))
        [ "$probe_t" -gt 90 ] && probe_t=90
        budget=$((bt - probe_t - 60))
        [ "$budget" -gt 110 ] && budget=110
        [ "$budget" -lt 15 ] && budget=15
        rm -f "$OUT_DIR/results.json" "$OUT_DIR/results.md"
        # shellcheck disable=SC2086  # $quick and $QL_BENCH_ARGS are word lists
        run_t "$bt" "$VPY" benchmarks/cuda_launch.py --out "$OUT_DIR" $quick \
            --budget "$budget" --probe-timeout "$probe_t" ${QL_BENCH_ARGS:-}
        BENCH_RC=$?
        if [ "$BENCH_RC" -gt 128 ] && [ "$BENCH_RC" != 137 ] && [ "$(left)" -gt 100 ]; then
            note "benchmark: the process died (status $BENCH_RC); again with each source in its own process"
            # shellcheck disable=SC2086
            run_t $(($(left) - 15)) "$VPY" benchmarks/cuda_launch.py --out "$OUT_DIR" --quick \
                --isolated --budget 20 --probe-timeout 60 ${QL_BENCH_ARGS:-}
            BENCH_RC=$?
        fi
        case "$BENCH_RC" in
        0) note "benchmark: quicklaunch's rows measured (results.md, results.json)" ;;
        124) note "benchmark: stopped after ${bt}s; results.json holds the rounds done so far" ;;
        *) note "benchmark: exit $BENCH_RC (quicklaunch's rows not all measured; see results.md)" ;;
        esac
        if [ "$(left)" -gt 90 ]; then
            section "launch overhead above the driver: null driver, then the real one"
            run_t 60 "$VPY" -m quicklaunch.bench.cuda.null_overhead --quick \
                --out "$OUT_DIR/driver-overhead-null.json" \
                && note "driver overhead: null-driver rows (driver-overhead-null.json)" \
                || note "driver overhead: null-driver run exit $?"
            run_t 60 "$VPY" -m quicklaunch.bench.cuda.null_overhead --quick --real \
                --out "$OUT_DIR/driver-overhead-real.json" \
                && note "driver overhead: the same rows on the real driver (driver-overhead-real.json)" \
                || note "driver overhead: real-driver run exit $?"
        fi
        if [ "$(left)" -gt 75 ]; then
            section "graphs"
            run_t 60 "$VPY" benchmarks/graphs.py --device cuda --repeats 5 \
                --out "$OUT_DIR/graphs.json" \
                && note "graphs: replay against individual launches (graphs.json)" \
                || note "graphs: benchmark exit $?"
        fi
        if [ "$(left)" -gt 75 ] && "$VPY" -c "import torch; assert torch.cuda.is_available()" \
                2>/dev/null; then
            section "frameworks: kernels inside torch (and JAX) programs"
            run_t 60 "$VPY" -m quicklaunch.bench.frameworks --device cuda --quick \
                --out "$OUT_DIR/frameworks.json" \
                && note "frameworks: torch/JAX rows on the GPU (frameworks.json, docs/frameworks.md)" \
                || note "frameworks: benchmark exit $?"
        fi
    fi

    # ------------------------------------------------------------------ 7
    section "summary"
    {
        echo "# gpu_check summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - START))s)"
        echo
        cat "$TMPD/summary-lines"
        echo
        [ -f "$OUT_DIR/results.md" ] && cat "$OUT_DIR/results.md"
    } >"$SUMMARY"
    cat "$SUMMARY"
    [ "$INSTALL_OK" = 1 ] && [ "$TEST_RC" = 0 ] && [ "$BENCH_RC" = 0 ]
}

main 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
echo "gpu_check: exit $status ($((SECONDS - START))s); files in $OUT_DIR"
exit "$status"
