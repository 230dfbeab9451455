/* The CPU device's launch entry, with the shape of cuLaunchKernel: what the
 * C launcher calls for every CPU kernel launch.
 *
 * The runtime library is plain C with no Python dependency: the extension
 * loads it with ctypes and hands `ql_cpu_launch`'s address to the C
 * launcher, and the benchmark's C baseline dlopens the very same file.
 *
 * Calls go one way, from this entry down:
 *   runtime.c  ->  streams.c  ->  work.c  ->  pool.c  ->  fault.c
 *   (events.c and graphs.c, the rest of the stream API, sit beside
 *   streams.c and call it, work.c and pool.c.)
 * A launch on the default stream with nothing queued anywhere runs now
 * (pool.h, inline here); any other goes to the streams. */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "pool.h"
#include "streams.h"

/* The backend entry, with cuLaunchKernel's shape. `stream` is 0 for the
 * default stream or a handle from ql_cpu_stream_create. */
QL_EXPORT int ql_cpu_launch(void *f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz,
                            unsigned shared_bytes, void *stream, void **params,
                            void **extra) {
    const ql_cpu_kernel *k = (const ql_cpu_kernel *)f;
    if (!k || !k->run) return QL_CPU_ERROR_INVALID_HANDLE;
    if (extra) return QL_CPU_ERROR_NOT_SUPPORTED;
    if (__builtin_expect(stream != NULL ||
                             atomic_load_explicit(&ql_async_pending, memory_order_relaxed),
                         0)) {
        const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
        if (!gx || !gy || !gz || !bx || !by || !bz) return QL_CPU_ERROR_INVALID_VALUE;
        return ql_cpu_launch_queued(k, dims, shared_bytes, stream, params);
    }
    return ql_cpu_launch_now(k, gx, gy, gz, bx, by, bz, shared_bytes, params);
}
