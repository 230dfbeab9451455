/* A signal-safe formatter (no stdio) for the fault and stop handlers
 * (fault.c, interrupt.c). Internal to the runtime library. */
#ifndef QL_CPU_FMT_H
#define QL_CPU_FMT_H

#include <stdint.h>

#include "include/ql_cpu_abi.h"

typedef struct out {
    char *p, *end;
} out;

static inline void put(out *o, const char *s) {
    while (*s && o->p < o->end) *o->p++ = *s++;
}

static inline void put_uint(out *o, uint64_t v) {
    char digits[20];
    int n = 0;
    do digits[n++] = (char)('0' + v % 10); while (v /= 10);
    while (n && o->p < o->end) *o->p++ = digits[--n];
}

static inline void put_hex(out *o, uint64_t v) {
    char digits[16];
    int n = 0;
    do digits[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
    put(o, "0x");
    while (n && o->p < o->end) *o->p++ = digits[--n];
}

static inline void put_coordinate(out *o, uint32_t v) {
    if (v == QL_CPU_UNKNOWN) put(o, "?");
    else put_uint(o, v);
}

static inline void put_triple(out *o, const char *what, const uint32_t v[3]) {
    put(o, what);
    put(o, " (");
    put_coordinate(o, v[0]);
    put(o, ", ");
    put_coordinate(o, v[1]);
    put(o, ", ");
    put_coordinate(o, v[2]);
    put(o, ")");
}

#endif
