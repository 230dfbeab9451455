"""The aarch64 fiber switch (issue 24 item 4): ql_fibers.h's hand-written
switch, taken from the header as it is, built with an aarch64 cross compiler
and run under qemu user-mode emulation: it keeps every callee-saved register
(integer and d8-d15) across switches, starts fibers on their own stacks, and
makes no system call per switch (swapcontext made one, rt_sigprocmask).
Skipped, saying which, without aarch64-linux-gnu-g++ or qemu-aarch64(-static)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

HEADER = Path(__file__).parents[2] / "src/quicklaunch/backends/cpu/include/ql_fibers.h"
CXX = shutil.which("aarch64-linux-gnu-g++")
QEMU = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
pytestmark = [
    pytest.mark.skipif(CXX is None, reason="no aarch64 cross compiler "
                       "(Debian: apt-get install g++-aarch64-linux-gnu)"),
    pytest.mark.skipif(QEMU is None, reason="no qemu-aarch64 (Debian: apt-get install "
                       "qemu-user-static)"),
]

PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/syscall.h>
#define QL_FN static inline
namespace ql_fiber {
@SWITCH@
}
using namespace ql_fiber;
static context main_ctx, fib_ctx;
static volatile long seen;
static void body(void *arg) {
    long step = (long)arg;
    double f = 0.25;
    for (long i = 0;; ++i) {
        seen = i * step;
        f = f * 1.0000001 + 0.5;            /* clobbers FP registers */
        register long a asm("x19") = i, b asm("x28") = ~i;
        asm volatile("" : "+r"(a), "+r"(b)); /* and callee-saved ones */
        jump(&fib_ctx, &main_ctx);
        if (f < 0) abort();
    }
}
int main(void) {
    const size_t bytes = 256 * 1024;
    char *stack = (char *)mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    prepare(&fib_ctx, stack + bytes, body, (void *)3);
    double d1 = 1.5, d2 = 2.5, d3 = 3.5, d4 = 4.5, d5 = 5.5, d6 = 6.5, d7 = 7.5, d8 = 8.5;
    long k1 = 11, k2 = 12, k3 = 13, k4 = 14, k5 = 15, k6 = 16, k7 = 17, k8 = 18, k9 = 19;
    const int n = 20000;
    syscall(SYS_getpid);                    /* marker: the switches start */
    for (int i = 0; i < n; ++i) {
        jump(&main_ctx, &fib_ctx);
        if (seen != 3L * i) { printf("BAD seen %ld at %d\n", seen, i); return 1; }
        d1 += 1; d2 += 1; d3 += 1; d4 += 1; d5 += 1; d6 += 1; d7 += 1; d8 += 1;
        k1 += 1; k2 += 1; k3 += 1; k4 += 1; k5 += 1; k6 += 1; k7 += 1; k8 += 1; k9 += 1;
    }
    syscall(SYS_getppid);                   /* marker: they end */
    double ds = d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8;
    long ks = k1 + k2 + k3 + k4 + k5 + k6 + k7 + k8 + k9;
    if (ds != 40.0 + 8.0 * n || ks != 135 + 9L * n) {
        printf("BAD registers %f %ld\n", ds, ks);
        return 1;
    }
    printf("OK %d switches\n", 2 * n);
    return 0;
}
"""


def _switch_code() -> str:
    text = HEADER.read_text()
    m = re.search(r"#elif defined\(__aarch64__\)\n(.*?)\n#else\n", text, re.S)
    assert m, "no aarch64 switch in ql_fibers.h"
    return m.group(1)


def test_aarch64_switch_keeps_registers_and_makes_no_system_call(tmp_path):
    src = tmp_path / "switch.cpp"
    src.write_text(PROGRAM.replace("@SWITCH@", _switch_code()))
    exe = tmp_path / "switch"
    out = subprocess.run([CXX, "-O2", "-static", "-o", str(exe), str(src)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    run = subprocess.run([QEMU, "-strace", str(exe)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and "OK 40000 switches" in run.stdout, run.stdout + run.stderr
    calls = [ln for ln in run.stderr.splitlines() if re.match(r"^\d+ \w+\(", ln)]
    names = [re.match(r"^\d+ (\w+)\(", ln).group(1) for ln in calls]
    start, end = names.index("getpid"), names.index("getppid")
    assert names[start + 1:end] == [], f"system calls during 40000 switches: {names[start + 1:end][:10]}"
