/* The host stubs' launch record (host_stub.py), in this extension's static
 * thread-local storage.
 *
 * A kernel's C host stub has the kernel's own parameters, so the launch
 * configuration travels beside them, per thread: the stub library's
 * trampoline writes it, the stub reads it back. Kept in the stub library,
 * each of those accesses is a __tls_get_addr call (a dlopen'ed library gets
 * dynamic TLS), two per launch. Here it is initial-exec: its offset from the
 * thread pointer is one constant for every thread, which each stub library
 * is given at load and adds to the thread pointer it reads (two
 * instructions). One record for all modules: a launch writes it and reads it
 * back before anything else can run on the thread. */
#ifndef QL_LAUNCH_STUB_TLS_H
#define QL_LAUNCH_STUB_TLS_H

typedef struct ql_stub_record {
    void *func;
    unsigned g[3], b[3], shared;
    void *stream;
    void **extra;
} ql_stub_record;

static __thread ql_stub_record ql_stub_tls
    __attribute__((tls_model("initial-exec"), aligned(64)));

/* The record's offset from the thread pointer, as host_stub.py's stubs read
 * the pointer; 0 where this machine has no spelling for it (the stubs then
 * keep a thread-local record of their own). */
static PyObject *stub_tls_offset(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    char *tp = 0;
#if defined(__x86_64__)
    __asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
    if (!tp) return PyLong_FromLong(0);
    return PyLong_FromSsize_t((Py_ssize_t)((char *)&ql_stub_tls - tp));
}

#endif
