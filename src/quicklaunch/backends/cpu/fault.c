/* The CPU runtime's fault handler; see fault.h.
 *
 * The handler runs on the faulting thread, usually on its alternate signal
 * stack, and does only async-signal-safe work: it asks the kernel's module
 * where the fault happened (its thread-local blockIdx and threadIdx), writes
 * the message with the small formatter below (no stdio), restores the signal
 * mask of the interrupted code and jumps to the recovery point.
 *
 * QUICKLAUNCH_CPU_CATCH_FAULTS=0 leaves the signals alone, so a faulting
 * kernel dumps core as plain C would. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "fault.h"
#include "fmt.h"
#include "interrupt.h"

__thread ql_guard *ql_active_guard QL_TLS;
__thread int ql_thread_ready QL_TLS;
static __thread uintptr_t stack_low QL_TLS, stack_high QL_TLS;

/* SIGTRAP: __builtin_trap() is brk on aarch64 (ud2, SIGILL, on x86-64), and
 * int3 / __builtin_debugtrap() traps on both; reported like SIGILL. A
 * debugger's breakpoints never reach the handler (ptrace sees them first). */
static const int caught[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};
#define NCAUGHT (sizeof caught / sizeof caught[0])
static struct sigaction previous[NCAUGHT];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static pthread_key_t altstack_key;
static int enabled;
/* The guard page below a thread's stack is one system page: 4 KiB on
 * x86-64, often 64 KiB on aarch64 (Grace). Read at install. */
static uintptr_t page_bytes = 4096;

/* The alternate signal stack of each thread that runs kernels. */
#define ALTSTACK_BYTES (64u << 10)

/* ------------------------------------------------------------- the report */
#if defined(__aarch64__)
/* The records the kernel puts in the signal frame after the registers
 * (mcontext's __reserved area; <asm/sigcontext.h>, not included: it clashes
 * with glibc's <signal.h>): {magic, size} headers, the list ending at a zero
 * magic. ESR_MAGIC's record holds the fault's Exception Syndrome Register. */
struct ql_aarch64_record { uint32_t magic, size; };
#define QL_ESR_MAGIC 0x45535201u
#define QL_ESR_EC_DABT_LOW 0x24u  /* data abort from EL0 */
#define QL_ESR_EC_DABT_CUR 0x25u
#define QL_ESR_WNR (1u << 6)      /* data abort ISS: write, not read */
#define QL_ESR_CM (1u << 8)       /* cache maintenance (reported as a write) */
#endif

/* 1 a write, 0 a read, -1 where the fault record does not say (the message
 * then says "access"). */
static int is_write(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0; /* page-fault error code: W */
#elif defined(__aarch64__)
    const unsigned char *p = (const unsigned char *)uc->uc_mcontext.__reserved;
    const unsigned char *end = p + sizeof uc->uc_mcontext.__reserved;
    while (p + sizeof(struct ql_aarch64_record) <= end) {
        struct ql_aarch64_record head;
        __builtin_memcpy(&head, p, sizeof head);
        if (head.magic == 0 || head.size < sizeof head || head.size > (size_t)(end - p)) break;
        if (head.magic == QL_ESR_MAGIC && head.size >= sizeof head + 8) {
            uint64_t esr;
            __builtin_memcpy(&esr, p + sizeof head, sizeof esr);
            const unsigned ec = (unsigned)(esr >> 26) & 0x3fu;
            if (ec != QL_ESR_EC_DABT_LOW && ec != QL_ESR_EC_DABT_CUR) return -1;
            if (esr & QL_ESR_CM) return 0;
            return (esr & QL_ESR_WNR) != 0;
        }
        p += head.size;
    }
    return -1;  /* no ESR record (e.g. an emulator that does not write one) */
#else
    (void)uc;
    return -1;
#endif
}

static uintptr_t instruction(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static int status_of(int sig, const siginfo_t *si) {
    switch (sig) {
    case SIGSEGV: return QL_CPU_ERROR_ILLEGAL_ADDRESS;
    case SIGBUS: return si->si_code == BUS_ADRALN ? QL_CPU_ERROR_MISALIGNED
                                                  : QL_CPU_ERROR_ILLEGAL_ADDRESS;
    case SIGILL: case SIGTRAP: return QL_CPU_ERROR_ILLEGAL_INSTRUCTION;
    default: return QL_CPU_ERROR_LAUNCH_FAILED;
    }
}

#ifdef SI_KERNEL
/* A wild pointer whose bits 48-63 are not a sign extension: the CPU faults
 * without the address (`how`: the signal and the fault's name). */
static void non_canonical(out *o, const char *how, const ucontext_t *uc) {
    put(o, "invalid memory access at a non-canonical address (");
    put(o, how);
    put(o, " fault at instruction ");
    put_hex(o, instruction(uc));
    put(o, "; the kernel computed a wild pointer, whose bits 48-63 are not a sign "
           "extension, and the CPU does not report its exact address)");
}
#endif

/* What happened, in words, up to the coordinates; returns the advice that
 * follows them, if any. */
static const char *describe(out *o, int sig, const siginfo_t *si, const ucontext_t *uc,
                            const ql_cpu_fault *f) {
    const uintptr_t addr = (uintptr_t)si->si_addr;
    const int sent = si->si_code <= 0; /* kill(), raise(): no address */
    if (sig == SIGSEGV && !sent && f->fiber_overflow) {
        put(o, "stack overflow: the CUDA thread ran past its ");
        put_uint(o, f->fiber_stack >> 10);
        put(o, " KiB fiber stack (SIGSEGV at ");
        put_hex(o, addr);
        put(o, ")");
        return "; use less stack per CUDA thread or give each more with "
               "QUICKLAUNCH_CPU_STACK (e.g. QUICKLAUNCH_CPU_STACK=1M)";
    }
    if (sig == SIGSEGV && !sent && stack_low && addr < stack_low + page_bytes &&
        addr + ALTSTACK_BYTES >= stack_low) {
        put(o, "stack overflow: the kernel ran past its CPU thread's ");
        put_uint(o, (stack_high - stack_low) >> 10);
        put(o, " KiB stack (SIGSEGV at ");
        put_hex(o, addr);
        put(o, ")");
        return "; bound the recursion or move large arrays off the stack";
    }
    switch (sig) {
    case SIGSEGV: {
#ifdef SI_KERNEL
        if (si->si_code == SI_KERNEL && addr == 0) {
            /* x86-64: an access through a non-canonical address is a general
             * protection fault, whose siginfo carries no address. */
            non_canonical(o, "SIGSEGV, general protection", uc);
            return 0;
        }
#endif
        const int w = sent ? -1 : is_write(uc);
        put(o, w == 1 ? "invalid memory access: write to address "
               : w == 0 ? "invalid memory access: read from address "
                        : "invalid memory access at address ");
        if (sent) put(o, "(unknown: signal sent by kill)");
        else put_hex(o, addr);
        put(o, " (SIGSEGV)");
        return 0;
    }
    case SIGBUS:
#if defined(SI_KERNEL) && (defined(__x86_64__) || defined(__i386__))
        if (si->si_code == SI_KERNEL && addr == 0) {
            /* x86-64: the same wild pointer reached through a base register
             * of RBP or RSP is a stack-segment fault (#SS), which Linux
             * reports as SIGBUS with no address. */
            non_canonical(o, "SIGBUS, stack-segment", uc);
            return 0;
        }
#endif
        put(o, si->si_code == BUS_ADRALN ? "misaligned access at address "
                                         : "bus error at address ");
        put_hex(o, addr);
        put(o, si->si_code == BUS_ADRERR ? " (SIGBUS: no memory behind the mapping, "
                                           "e.g. a truncated file)"
                                         : " (SIGBUS)");
        return 0;
    case SIGFPE:
        /* x86 raises the same #DE for x / 0 and INT_MIN / -1 */
        put(o, si->si_code == FPE_INTDIV || si->si_code == FPE_INTOVF
                   ? "integer divide by zero or overflow (x / 0 or INT_MIN / -1)"
                   : "arithmetic exception");
        put(o, " (SIGFPE) at instruction ");
        put_hex(o, instruction(uc));
        return 0;
    case SIGTRAP:
        put(o, "trap instruction (SIGTRAP) at ");
        put_hex(o, instruction(uc));
        return " (a __builtin_trap, __builtin_debugtrap or breakpoint instruction reached "
               "without a debugger, or, in a debug build, an integer division by zero?)";
    default:
        put(o, "illegal instruction (SIGILL) at ");
        put_hex(o, instruction(uc));
        return " (a __builtin_trap or __builtin_unreachable reached, or, in a debug build "
               "off x86-64, an integer division by zero?)";
    }
}

static void report(ql_cpu_error *e, int sig, const siginfo_t *si, const ucontext_t *uc,
                   const ql_cpu_fault *f) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&e->code, &expected, status_of(sig, si), 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return; /* the launch had already failed: keep the first error */
    out o = {e->message, e->message + sizeof e->message - 1};
    const char *advice = describe(&o, sig, si, uc, f);
    put(&o, " in ");
    put_triple(&o, "block", f->block);
    put(&o, ", ");
    put_triple(&o, "thread", f->thread);
    if (advice) put(&o, advice);
    if (f->thread[0] == QL_CPU_UNKNOWN)
        put(&o, " (an optimised build does not track threadIdx.x; compile with debug=True "
                "or QUICKLAUNCH_DEBUG=1 to name the thread)");
    /* The faulting instruction, where the description did not give it: a
     * debug build's error maps it to the kernel's source line (debug.py). */
    int gp = 0; /* a general protection fault's message names the instruction already */
#ifdef SI_KERNEL
    gp = si->si_code == SI_KERNEL && si->si_addr == 0;
#endif
    if ((sig == SIGSEGV || sig == SIGBUS) && !gp && si->si_code > 0) {
        put(&o, " [at instruction ");
        put_hex(&o, instruction(uc));
        put(&o, "]");
    }
    *o.p = '\0';
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
}

/* --------------------------------------------------------------- handlers */
static const struct sigaction *previous_for(int sig) {
    for (unsigned i = 0; i < NCAUGHT; ++i)
        if (caught[i] == sig) return &previous[i];
    return 0;
}

/* Not a kernel's fault: what would have happened without quicklaunch. */
static void pass_on(int sig, siginfo_t *si, void *uc) {
    const struct sigaction *p = previous_for(sig);
    if (p && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        if (p->sa_flags & SA_SIGINFO) p->sa_sigaction(sig, si, uc);
        else p->sa_handler(sig);
        return;
    }
    /* The default action: the fault recurs when this handler returns, and
     * a signal sent by kill() is sent again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, 0);
    if (si->si_code <= 0) raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *ucv) {
    ql_guard *g = ql_active_guard;
    if (!g) {
        pass_on(sig, si, ucv);
        return;
    }
    ql_active_guard = 0; /* a fault in here is not the kernel's: pass it on */
    ucontext_t *uc = (ucontext_t *)ucv;
    ql_cpu_fault f;
    memset(&f, 0, sizeof f);
    f.address = (uintptr_t)si->si_addr;
    g->kernel->fault(&f);
    report(g->error, sig, si, uc, &f);
    /* Leaving by a jump, not a return: unblock what the kernel's code had
     * unblocked, or the next fault on this thread would kill the process. */
    pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, 0);
    __builtin_longjmp(g->jump, 1);
}

static void free_altstack(void *mapping) {
    stack_t now;
    if (sigaltstack(0, &now) == 0 && now.ss_sp == mapping) {
        stack_t off;
        memset(&off, 0, sizeof off);
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, 0);
    }
    munmap(mapping, ALTSTACK_BYTES);
}

static void install(void) {
    const char *s = getenv("QUICKLAUNCH_CPU_CATCH_FAULTS");
    if (s && strcmp(s, "0") == 0) return;
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_bytes = (uintptr_t)page;
    if (pthread_key_create(&altstack_key, free_altstack) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < NCAUGHT; ++i) sigaction(caught[i], &sa, &previous[i]);
    enabled = 1;
    ql_stop_install();
}

void ql_fault_setup_thread(void) {
    pthread_once(&install_once, install);
    ql_thread_ready = 1;
    if (!enabled) return;
    ql_stop_register_thread();
    stack_t now;
    if (sigaltstack(0, &now) == 0 && (now.ss_flags & SS_DISABLE)) {
        void *p = mmap(0, ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p != MAP_FAILED) {
            stack_t alt;
            memset(&alt, 0, sizeof alt);
            alt.ss_sp = p;
            alt.ss_size = ALTSTACK_BYTES;
            if (sigaltstack(&alt, 0) == 0) pthread_setspecific(altstack_key, p);
            else munmap(p, ALTSTACK_BYTES);
        }
    }
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *low;
        size_t size;
        if (pthread_attr_getstack(&attr, &low, &size) == 0) {
            stack_low = (uintptr_t)low;
            stack_high = (uintptr_t)low + size;
        }
        pthread_attr_destroy(&attr);
    }
}
