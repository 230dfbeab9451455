/* Per-worker launch state shared by both tiers: the launch being run, its
 * dynamic shared memory arena, and how a CUDA thread reports a failure
 * (a failed assert, a deadlock) and stops. Part of cuda_shim.h.
 *
 * A failure is claimed once per launch in the runtime's ql_cpu_error (first
 * writer wins); the failing CUDA thread then stops: in tier 1 by a longjmp
 * out of the block loop, in tier 2 by switching away from its fiber for
 * good. The runtime stops handing out blocks and the launch returns the
 * error, which the launcher raises as LaunchError. */
#ifndef QL_LAUNCH_STATE_H
#define QL_LAUNCH_STATE_H

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ql_cpu_abi.h"

static thread_local const ql_cpu_dims *ql_launch_dims __attribute__((unused));
/* Points into this worker's arena for `extern __shared__` arrays (the
 * compiler driver rewrites their declarations to use it). */
static thread_local char *__ql_dyn_shared __attribute__((unused));
static thread_local jmp_buf *ql_tier1_abort __attribute__((unused));
static thread_local void (*ql_tier2_abort)(void) __attribute__((unused));

/* The worker's dynamic shared memory, grown to `bytes` (16-byte aligned). */
struct ql_arena_keeper {   /* frees the arena when its thread exits (cooperative launches) */
    char **arena;
    ~ql_arena_keeper() { if (arena) free(*arena); }
};
QL_FN char *ql_dynamic_shared_arena(size_t bytes) {
    static thread_local char *arena;
    static thread_local size_t size;
    if (bytes > size) {
        static thread_local ql_arena_keeper keeper;
        keeper.arena = &arena;
        free(arena);
        size_t want = bytes < 4096 ? 4096 : bytes;
        arena = (char *)aligned_alloc(64, (want + 63) & ~(size_t)63);
        size = arena ? want : 0;
    }
    return arena;
}

/* Records a launch failure (if it is the first) with the failing thread's
 * coordinates. Returns 1 if this call claimed the error. */
__attribute__((format(printf, 2, 3))) QL_FN int ql_report(int code, const char *fmt, ...) {
    ql_cpu_error *e = ql_launch_dims ? ql_launch_dims->error : 0;
    if (!e) return 0;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&e->code, &expected, code, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
    return 1;
}

/* Stops the calling CUDA thread (and its block). Never returns. */
__attribute__((noreturn)) QL_FN void ql_abort_thread(void) {
    if (ql_tier2_abort) ql_tier2_abort();
    if (ql_tier1_abort) longjmp(*ql_tier1_abort, 1);
    __builtin_trap(); /* unreachable: every block runs under one of the two */
}

QL_FN int ql_launch_failed(void) {
    return ql_launch_dims && __atomic_load_n(&ql_launch_dims->error->code, __ATOMIC_RELAXED);
}

/* assert() in device code: a LaunchError naming the kernel's thread, not
 * an abort() of the whole process. `noexcept` callers (glibc's macro) reach
 * it through __assert_fail below. */
__attribute__((noreturn)) QL_FN void ql_assert_fail(const char *expr, const char *file,
                                                    unsigned line, const char *func) {
    ql_report(QL_CPU_ERROR_ASSERT,
              "device-side assert failed: %s at %s:%u in %s, block (%u, %u, %u), "
              "thread (%u, %u, %u)", expr, file, line, func, blockIdx.x, blockIdx.y,
              blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    ql_abort_thread();
}

/* __trap(): the kernel aborts, as on a GPU; here a LaunchError. */
__attribute__((noreturn)) QL_FN void __trap(void) {
    ql_report(QL_CPU_ERROR_LAUNCH_FAILED, "__trap() called in block (%u, %u, %u), thread "
              "(%u, %u, %u)", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
              threadIdx.z);
    ql_abort_thread();
}

/* abort(), exit(), _Exit() and quick_exit() in device code: the launch
 * fails with a LaunchError naming the CUDA thread, as for __trap(), and the
 * process lives on. The module sends the runtime's stop signal to its own
 * thread with what happened (ql_cpu_device_exit, ql_cpu_abi.h); the runtime
 * recovers as from a fault. With QUICKLAUNCH_CPU_CATCH_FAULTS=0 (nothing
 * handles the signal) they end the process as plain C would. Hidden
 * definitions here take every call in this module, as for __assert_fail. */
__attribute__((noreturn)) QL_FN void ql_device_exit(int status, const char *what) {
    const ql_cpu_device_exit x = {QL_CPU_EXIT_MAGIC, status, what};
    const int sig = SIGRTMAX - QL_CPU_STOP_SIGNAL_FROM_MAX;
    struct sigaction now;
    if (sigaction(sig, 0, &now) == 0 && (now.sa_flags & SA_SIGINFO)) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = sig;
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        si.si_uid = getuid();
        si.si_value.sival_ptr = (void *)&x;
        syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)syscall(SYS_gettid), (long)sig,
                &si);
    }
    if (status < 0) __builtin_trap();
    syscall(SYS_exit_group, (long)status);
    __builtin_unreachable();
}

QL_FN const char *ql_exit_text(const char *fn, int status) {
    static thread_local char text[48];
    snprintf(text, sizeof text, "%s(%d) called", fn, status);
    return text;
}

extern "C" __attribute__((visibility("hidden"), noreturn, always_inline)) inline void abort(void) noexcept {
    ql_device_exit(-1, "abort() called");
}
extern "C" __attribute__((visibility("hidden"), noreturn, always_inline)) inline void exit(int status) noexcept {
    ql_device_exit(status < 0 ? 255 : status, ql_exit_text("exit", status));
}
extern "C" __attribute__((visibility("hidden"), noreturn, always_inline)) inline void _Exit(int status) noexcept {
    ql_device_exit(status < 0 ? 255 : status, ql_exit_text("_Exit", status));
}
extern "C" __attribute__((visibility("hidden"), noreturn, always_inline)) inline void quick_exit(
    int status) noexcept {
    ql_device_exit(status < 0 ? 255 : status, ql_exit_text("quick_exit", status));
}

/* glibc's assert() calls __assert_fail; a hidden definition here catches
 * every call in this module, even after a user's own #include <assert.h>
 * or <cassert> redefines the macro. */
extern "C" __attribute__((visibility("hidden"), noreturn)) inline void __assert_fail(
    const char *expr, const char *file, unsigned line, const char *func) noexcept {
    ql_assert_fail(expr, file, line, func);
}

#endif
