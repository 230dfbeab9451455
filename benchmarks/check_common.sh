# What gpu_check.sh and hip_check.sh share; sourced by them with CHECK set
# to "gpu" or "hip". Runs from the repository root; sets OUT_DIR (from $OUT,
# else benchmarks/results/$CHECK), LOG, SUMMARY, BUDGET (QL_CHECK_BUDGET,
# default 460 s), START and TMPD (removed on exit), and defines:
#   section NAME      a "=== NAME (Ns elapsed) ===" heading in the log
#   left              seconds left of the budget
#   note TEXT         a line of the summary (also printed)
#   run_t SECONDS CMD CMD with a time limit (exit 124 when it ran out)
#   pick_python       the first python3 >= 3.10 ($PYTHON first)
set -u

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT_DIR=${OUT:-benchmarks/results/$CHECK}
mkdir -p "$OUT_DIR" || exit 1
OUT_DIR=$(cd "$OUT_DIR" && pwd)
LOG="$OUT_DIR/${CHECK}_check.log"
SUMMARY="$OUT_DIR/summary.md"
BUDGET=${QL_CHECK_BUDGET:-460}
START=$SECONDS
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/quicklaunch-$CHECK-check.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

section() { printf '\n=== %s (%ss elapsed) ===\n' "$*" "$((SECONDS - START))"; }
left() { echo $((BUDGET - (SECONDS - START))); }
note() { echo "- $*" >>"$TMPD/summary-lines"; echo "$*"; }

if command -v timeout >/dev/null 2>&1; then
    run_t() { local t=$1; shift; [ "$t" -lt 1 ] && t=1; timeout -k 10 "$t" "$@"; }
else
    run_t() { shift; "$@"; }
fi

pick_python() {
    local p
    for p in ${PYTHON:-} python3 python3.13 python3.12 python3.11 python3.10; do
        if command -v "$p" >/dev/null 2>&1 &&
            "$p" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$p"
            return 0
        fi
    done
    return 1
}
