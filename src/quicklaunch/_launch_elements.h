/* quicklaunch._launch: element types of pointer arguments. A typed pointer
 * parameter (float *, int4 *, __nv_bfloat16 *: quicklaunch/elements.py
 * reads the C type) is checked against what the argument says it holds:
 * a NumPy dtype (arrays and ql buffers), a buffer-protocol format, an
 * (CUDA) array interface typestr, a DLPack dtype, a torch dtype.
 *
 * The rule (docs/arguments.md): accepted are the same kind and size; the
 * other signedness of the same size; for a vector type (float4), arrays of
 * its base type (float32); for __half and bfloat16, their bits as uint16
 * (and __half2 / __nv_bfloat162 as uint32, the bits of a pair);
 * for 1-byte ints, bool; complex for 2-lane float vectors (float2,
 * cuComplex); a structured dtype of the element's exact size; untyped bytes
 * (NumPy void "V", the buffer protocol's "B", ql.reinterpret(x)). Refused:
 * every other kind or size, a non-native byte order. Object arrays (and
 * any dtype holding Python objects) are refused for every pointer, typed
 * or not: their memory is PyObject pointers.
 *
 * The fast path compares an array's dtype pointer with the dtype this
 * parameter accepted last (KernelCore.elem_ok): one compare per pointer
 * argument. Everything here runs only when that misses. Included once, by
 * _launch_pointers.h. */
#ifndef QL_LAUNCH_ELEMENTS_H
#define QL_LAUNCH_ELEMENTS_H

#include "_launch_core.h"

/* What an argument holds: a kind letter as in ql_elem (plus 'V' untyped
 * bytes, 'S' structured, 'O' Python objects, '?' something else), its size
 * in bytes, whether it is byte-swapped, and how to name it in a message. */
typedef struct { char kind; int swapped; Py_ssize_t size; } ql_got;

static int elem_accepts(const ql_elem *e, ql_got g) {
    if (g.kind == 'O') return 0;
    if (!e || !e->kind) return 1;
    if (g.swapped) return 0;
    if (g.kind == 'V') return 1;
    const Py_ssize_t whole = (Py_ssize_t)e->size * e->lanes;
    if (g.kind == 'S') return g.size == whole;
    if (g.size == e->size) {
        if (g.kind == e->kind) return 1;
        if ((g.kind == 'i' || g.kind == 'u') && (e->kind == 'i' || e->kind == 'u')) return 1;
        if (e->size == 2 && (e->kind == 'f' || e->kind == 'B') && g.kind == 'u') return 1;
        if (e->size == 1 && (e->kind == 'i' || e->kind == 'u') && g.kind == 'b') return 1;
    }
    if (g.kind == 'c' && e->kind == 'f' && e->lanes == 2 && g.size == whole) return 1;
    /* __half2 / __nv_bfloat162 as their bits: one uint32 per pair */
    if (e->size == 2 && (e->kind == 'f' || e->kind == 'B') && g.kind == 'u' && g.size == whole)
        return 1;
    return 0;
}

/* The refusal: names the kernel, the parameter, what it expects and what it
 * got, and both ways out (convert, or reinterpret on purpose). */
static __attribute__((cold)) int elem_refuse(KernelCore *k, uint32_t i, ql_got g,
                                             const char *got_text) {
    if (g.kind == 'O')
        return arg_error(k, i, LaunchTypeError, "got %s, which holds Python objects (their "
                         "memory is PyObject pointers, never numbers a kernel can read); "
                         "pass an array of numbers, e.g. np.asarray(x, dtype=np.float32)",
                         got_text);
    PyObject *t = k->elem_texts ? PyTuple_GET_ITEM(k->elem_texts, i) : Py_None;
    PyObject *expect = PyTuple_Check(t) ? PyTuple_GET_ITEM(t, 0) : t;
    PyObject *np = PyTuple_Check(t) ? PyTuple_GET_ITEM(t, 1) : t;
    if (g.swapped)
        return arg_error(k, i, LaunchTypeError, "expects %S, got %s in non-native byte "
                         "order; pass x.astype(x.dtype.newbyteorder('='))", expect, got_text);
    const char *npn = PyUnicode_Check(np) ? PyUnicode_AsUTF8(np) : NULL;
    if (npn && strncmp(got_text, "a tensor of torch.", 18) == 0) { /* torch's spelling */
        char tn[40];
        const char *dot = strrchr(npn, '.');
        PyOS_snprintf(tn, sizeof tn, "%s", dot ? dot + 1 : npn);
        size_t len = strlen(tn);
        if (len && tn[len - 1] == '_') tn[len - 1] = 0; /* np.bool_ */
        return arg_error(k, i, LaunchTypeError, "expects %S, got %s; convert it with "
                         "x.to(torch.%s), or reinterpret the bytes on purpose with "
                         "x.view(torch.%s)", expect, got_text, tn, tn);
    }
    PyErr_Clear();
    return arg_error(k, i, LaunchTypeError, "expects %S, got %s; convert it with "
                     "x.astype(%S), or reinterpret the bytes on purpose with x.view(%S) or "
                     "ql.reinterpret(x)", expect, got_text, np, np);
}

static ql_got got_from_descr(PyArray_Descr *d) {
    ql_got g = {'?', !PyArray_ISNBO(d->byteorder), (Py_ssize_t)PyDataType_ELSIZE(d)};
    if (d->type_num == NPY_OBJECT || PyDataType_FLAGCHK(d, NPY_ITEM_REFCOUNT)) {
        g.kind = 'O';
    } else if (d->type_num >= NPY_USERDEF) { /* ml_dtypes' bfloat16 and friends */
        const char *name = d->typeobj ? d->typeobj->tp_name : "";
        size_t n = strlen(name);
        if (n >= 8 && strcmp(name + n - 8, "bfloat16") == 0) g.kind = 'B';
    } else if (d->type_num == NPY_VOID) {
        g.kind = PyDataType_HASFIELDS(d) || PyDataType_HASSUBARRAY(d) ? 'S' : 'V';
    } else if (strchr("fiubc", d->kind)) {
        g.kind = d->kind;
        if (d->type_num == NPY_LONGDOUBLE) g.kind = '?';
    }
    return g;
}

/* A NumPy dtype (of an array or a ql buffer): accepted ones are remembered
 * for this parameter, so the next launch with it is one compare. */
static int check_descr(KernelCore *k, uint32_t i, PyArray_Descr *d) {
    ql_got g = got_from_descr(d);
    if (elem_accepts(k->elems ? &k->elems[i] : NULL, g)) {
        PyObject *old = k->elem_ok[i];
        k->elem_ok[i] = Py_NewRef((PyObject *)d);
        Py_XDECREF(old);
        return 0;
    }
    PyObject *s = PyObject_Str((PyObject *)d);
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    PyErr_Clear();
    char buf[160];
    PyOS_snprintf(buf, sizeof buf, g.kind == 'O' ? "an array of dtype %.100s"
                                                 : "an array of %.100s", text ? text : "?");
    Py_XDECREF(s);
    return elem_refuse(k, i, g, buf);
}

/* An array interface typestr ("<f4", "|b1", "|O", "|V16"). */
static int check_typestr(KernelCore *k, uint32_t i, PyObject *typestr, const char *what) {
    const char *ts = typestr && PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
    if (!ts) { PyErr_Clear(); return 0; } /* not knowable */
    if (strlen(ts) < 2) return 0;
    ql_got g = {'?', 0, atoi(ts + 2)};
#if PY_LITTLE_ENDIAN
    g.swapped = ts[0] == '>';
#else
    g.swapped = ts[0] == '<';
#endif
    if (g.size > 1 && ts[0] == '|') g.swapped = 0;
    if (strchr("fiubcVO", ts[1])) g.kind = ts[1];
    if (elem_accepts(k->elems ? &k->elems[i] : NULL, g)) return 0;
    char buf[160];
    PyOS_snprintf(buf, sizeof buf, "%s typestr '%.40s'", what, ts);
    return elem_refuse(k, i, g, buf);
}

/* A buffer-protocol format (the struct module's syntax); "B" (bytes,
 * bytearray, mmap) and anything this does not read are untyped. */
static int check_format(KernelCore *k, uint32_t i, const char *fmt) {
    if (!fmt) return 0;
    const char *f = fmt;
    int standard = 0, swapped = 0;
    if (*f == '@') ++f;
    else if (*f == '=' || *f == '<' || *f == '>' || *f == '!') {
        standard = 1;
#if PY_LITTLE_ENDIAN
        swapped = *f == '>' || *f == '!';
#else
        swapped = *f == '<';
#endif
        ++f;
    }
    ql_got g = {'V', swapped, 1};
    if (f[0] && !f[1]) {
        switch (f[0]) {
        case 'b': g.kind = 'i'; g.size = 1; break;
        case 'h': g.kind = 'i'; g.size = 2; break;
        case 'H': g.kind = 'u'; g.size = 2; break;
        case 'i': g.kind = 'i'; g.size = 4; break;
        case 'I': g.kind = 'u'; g.size = 4; break;
        case 'l': g.kind = 'i'; g.size = standard ? 4 : (Py_ssize_t)sizeof(long); break;
        case 'L': g.kind = 'u'; g.size = standard ? 4 : (Py_ssize_t)sizeof(long); break;
        case 'q': case 'n': g.kind = 'i'; g.size = 8; break;
        case 'Q': case 'N': g.kind = 'u'; g.size = 8; break;
        case 'e': g.kind = 'f'; g.size = 2; break;
        case 'f': g.kind = 'f'; g.size = 4; break;
        case 'd': g.kind = 'f'; g.size = 8; break;
        case '?': g.kind = 'b'; g.size = 1; break;
        case 'O': g.kind = 'O'; g.size = sizeof(void *); break;
        default: break; /* B, c, x, s, P: bytes */
        }
    } else if (f[0] == 'Z' && f[1] && !f[2]) {
        g.kind = 'c';
        g.size = f[1] == 'f' ? 8 : f[1] == 'd' ? 16 : f[1] == 'e' ? 4 : 0;
        if (!g.size) g.kind = 'V';
    }
    if (g.size == 1) g.swapped = 0;
    if (elem_accepts(k->elems ? &k->elems[i] : NULL, g)) return 0;
    char buf[80];
    PyOS_snprintf(buf, sizeof buf, "a buffer of format '%.20s'", fmt);
    return elem_refuse(k, i, g, buf);
}

/* A DLPack dtype: code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLOpaqueHandle 3,
 * kDLBfloat 4, kDLComplex 5, kDLBool 6), bits, lanes (a vector of lanes
 * base elements is read as its base type). */
static int check_dlpack(KernelCore *k, uint32_t i, int code, int bits, int lanes) {
    static const char kinds[] = {'i', 'u', 'f', 'V', 'B', 'c', 'b'};
    ql_got g = {code >= 0 && code < 7 && bits % 8 == 0 ? kinds[code] : '?', 0, bits / 8};
    if (elem_accepts(k->elems ? &k->elems[i] : NULL, g)) return 0;
    char buf[80];
    PyOS_snprintf(buf, sizeof buf, "DLPack dtype (code %d, %d bits, %d lanes)", code, bits,
                  lanes);
    return elem_refuse(k, i, g, buf);
}

/* A torch-style `dtype` attribute ("torch.float32"): read by name; the
 * last few dtype objects seen are remembered with their reading (torch's
 * dtypes are singletons), so a loop of launches reads each name once. */
#define QL_NAMED_CACHE 8
static struct { PyObject *dtype; ql_got got; } named_cache[QL_NAMED_CACHE];
static int named_cache_next;

static int check_named_dtype(KernelCore *k, uint32_t i, PyObject *o) {
    if (!k->elems || !k->elems[i].kind) return 0;
    PyObject *dt = PyObject_GetAttrString(o, "dtype");
    if (!dt) { PyErr_Clear(); return 0; }
    for (int j = 0; j < QL_NAMED_CACHE; ++j)
        if (named_cache[j].dtype == dt) {
            ql_got g = named_cache[j].got;
            if (g.kind == '?' || elem_accepts(&k->elems[i], g)) { Py_DECREF(dt); return 0; }
            break; /* refused: the message below reads the name again */
        }
    PyObject *s = PyObject_Str(dt);
    const char *name = s ? PyUnicode_AsUTF8(s) : NULL;
    if (!name) { Py_DECREF(dt); Py_XDECREF(s); PyErr_Clear(); return 0; }
    const char *dot = strrchr(name, '.');
    const char *n = dot ? dot + 1 : name;
    static const struct { const char *name; char kind; int size; } table[] = {
        {"float16", 'f', 2}, {"half", 'f', 2}, {"bfloat16", 'B', 2}, {"float32", 'f', 4},
        {"float", 'f', 4}, {"float64", 'f', 8}, {"double", 'f', 8}, {"int8", 'i', 1},
        {"uint8", 'u', 1}, {"int16", 'i', 2}, {"short", 'i', 2}, {"uint16", 'u', 2},
        {"int32", 'i', 4}, {"int", 'i', 4}, {"uint32", 'u', 4}, {"int64", 'i', 8},
        {"long", 'i', 8}, {"uint64", 'u', 8}, {"bool", 'b', 1}, {"complex64", 'c', 8},
        {"complex128", 'c', 16}};
    ql_got g = {'?', 0, 0};
    for (size_t j = 0; j < sizeof table / sizeof table[0]; ++j)
        if (strcmp(n, table[j].name) == 0) { g.kind = table[j].kind; g.size = table[j].size; }
    int known = 0;
    for (int j = 0; j < QL_NAMED_CACHE; ++j) known |= named_cache[j].dtype == dt;
    if (!known) { /* remember it (the entry keeps the dtype object alive) */
        int j = named_cache_next++ % QL_NAMED_CACHE;
        PyObject *old = named_cache[j].dtype;
        named_cache[j].dtype = Py_NewRef(dt);
        named_cache[j].got = g;
        Py_XDECREF(old);
    }
    int rc = 0;
    if (g.kind != '?' && !elem_accepts(&k->elems[i], g)) {
        char buf[80];
        PyOS_snprintf(buf, sizeof buf, "a tensor of %.40s", name);
        rc = elem_refuse(k, i, g, buf);
    }
    Py_DECREF(s);
    Py_DECREF(dt);
    return rc;
}

#endif /* QL_LAUNCH_ELEMENTS_H */
