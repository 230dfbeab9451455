"""Shifts on the CPU device give the GPU's result: the count is an unsigned
32-bit value clamped to the operand's width (PTX shl/shr), so a 32-bit
`x << 32` is 0 and `x >> 40` is 0 or, for a negative signed x, -1; 64-bit
values clamp at 64. x86 takes the count modulo the width; backends/cpu/
shifts.py rewrites run-time counts into ql_shift.h's clamped operators.

Checked against a NumPy model of the clamping, and the bit-packer against
Python's unbounded integers.
"""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import compiler, shift_macros, shifts, toolchain

from .conftest import poisoned

SHIFTS_SOURCE = r"""
// Every shift form with a run-time count (0..64 and beyond).
template <class T>
__device__ void shift_ops(const T *x, const int *n, T *out, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    T v = x[i];
    int c = n[i];
    const int W = 8 * sizeof(T);
    out[7 * i + 0] = v << c;
    out[7 * i + 1] = v >> c;
    T a = v;
    a <<= c;
    out[7 * i + 2] = a;
    T b = v;
    b >>= c;
    out[7 * i + 3] = b;
    // funnel shift right of hi:lo: lo >> c | hi << (W - c), c in 0..W
    T hi = x[(i + 1) % m];
    out[7 * i + 4] = (T)((v >> c) | (hi << (W - c)));
    long long wide = c;   // a 64-bit count: its low 32 bits count
    out[7 * i + 5] = (T)(v << wide);
    out[7 * i + 6] = (T)(v >> 3) + (T)(v << 5);   // constants in range: left alone
}

extern "C" __global__ void shifts_u32(const unsigned *x, const int *n, unsigned *o, int m) {
    shift_ops(x, n, o, m);
}
extern "C" __global__ void shifts_i32(const int *x, const int *n, int *o, int m) {
    shift_ops(x, n, o, m);
}
extern "C" __global__ void shifts_u64(const unsigned long long *x, const int *n,
                                      unsigned long long *o, int m) {
    shift_ops(x, n, o, m);
}
extern "C" __global__ void shifts_i64(const long long *x, const int *n, long long *o, int m) {
    shift_ops(x, n, o, m);
}

// Bit-packing: value i keeps its low w[i] bits (0..32) at bit offset off[i]
// of the packed words; the mask (1u << w) - 1 and the spill val >> (32 - bit)
// rely on the GPU's clamped counts (w == 32, bit == 0).
extern "C" __global__ void pack32(const unsigned *v, const int *w, const int *off,
                                  unsigned *words, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    unsigned val = v[i] & ((1u << w[i]) - 1u);
    int word = off[i] >> 5, bit = off[i] & 31;
    atomicOr(&words[word], val << bit);
    atomicOr(&words[word + 1], val >> (32 - bit));
}

extern "C" __global__ void pack64(const unsigned long long *v, const int *w, const int *off,
                                  unsigned long long *words, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    unsigned long long val = v[i] & ((1ull << w[i]) - 1ull);
    int word = off[i] >> 6, bit = off[i] & 63;
    atomicOr(&words[word], val << bit);
    atomicOr(&words[word + 1], val >> (64 - bit));
}

// Macros with parenthesised counts are clamped in their #define.
#define LOW_BITS(w) ((1u << (w)) - 1u)
#define FUNNEL_RIGHT(lo, hi, n) (((lo) >> (n)) | ((hi) << (32 - (n))))
extern "C" __global__ void macro_shifts(const unsigned *x, const int *n, unsigned *o, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    o[2 * i] = x[i] & LOW_BITS(n[i]);
    o[2 * i + 1] = FUNNEL_RIGHT(x[i], x[(i + 1) % m], n[i]);
}

// A barrier kernel: the clamped shifts compose with region fission.
extern "C" __global__ void block_funnel(const unsigned *x, const int *n, unsigned *o, int m) {
    __shared__ unsigned s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < m ? x[i] : 0u;
    __syncthreads();
    unsigned hi = s[(threadIdx.x + 1) % blockDim.x];
    if (i < m) o[i] = (s[threadIdx.x] >> n[i]) | (hi << (32 - n[i]));
}
"""

KERNELS = {"shifts_u32": np.uint32, "shifts_i32": np.int32, "shifts_u64": np.uint64,
           "shifts_i64": np.int64}


# ------------------------------------------------------------ NumPy model
def _unsigned(dtype):
    return np.dtype(np.dtype(dtype).str.replace("i", "u"))


def shl(x, c, dtype):
    """x << c as PTX shl: the count as u32, clamped to the width."""
    dtype = np.dtype(dtype)
    w, u = 8 * dtype.itemsize, _unsigned(dtype)
    c = np.asarray(c).astype(np.int64) & 0xFFFFFFFF
    r = np.left_shift(x.astype(u), np.minimum(c, w - 1).astype(u))
    return np.where(c < w, r, 0).astype(u).view(dtype)


def shr(x, c, dtype):
    """x >> c as PTX shr.u / shr.s: clamped, a signed value keeps its sign."""
    dtype = np.dtype(dtype)
    w = 8 * dtype.itemsize
    c = np.asarray(c).astype(np.int64) & 0xFFFFFFFF
    r = np.right_shift(x.astype(dtype), np.minimum(c, w - 1).astype(dtype))
    if dtype.kind == "i":
        return r.astype(dtype)
    return np.where(c < w, r, 0).astype(dtype)


def expected_ops(x, n, dtype):
    w = 8 * np.dtype(dtype).itemsize
    hi = np.roll(x, -1)
    funnel = shr(x, n, dtype).view(_unsigned(dtype)) | shl(hi, w - n, dtype).view(
        _unsigned(dtype))
    const = (x >> 3).astype(dtype) + shl(x, 5, dtype)
    return np.stack([shl(x, n, dtype), shr(x, n, dtype), shl(x, n, dtype), shr(x, n, dtype),
                     funnel.view(dtype), shl(x, n, dtype), const], axis=1)


def random_values(rng, m, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, m, dtype=dtype, endpoint=True)
    x[::3] |= np.array(1, dtype) << (8 * np.dtype(dtype).itemsize - 1)  # negatives, top bits
    return x


def counts(rng, m):
    """0..64 in turn, then random, with a few negative and huge counts."""
    n = np.arange(m, dtype=np.int64) % 65
    extra = rng.integers(-3, 200, m)
    n = np.where(np.arange(m) >= 65, extra, n)
    if m > 70:
        n[66], n[67], n[68] = -1, 2**31 - 1, -2**31
    return n.astype(np.int32)


@pytest.fixture(scope="module")
def mod():
    return ql.compile(SHIFTS_SOURCE, device="cpu")


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("m", [1, 31, 65, 200, 1000])
def test_runtime_counts_clamp_as_the_gpu(mod, kernel, m):
    dtype = KERNELS[kernel]
    rng = np.random.default_rng(m * 7 + len(kernel))
    x, n = random_values(rng, m, dtype), counts(rng, m)
    out = poisoned((m, 7), dtype)
    mod[kernel][(m + 63) // 64, 64](x, n, out, m)
    want = expected_ops(x, n, dtype)
    for col, what in enumerate(["<<", ">>", "<<=", ">>=", "funnel", "<< (64-bit count)",
                                "constant"]):
        bad = np.nonzero(out[:, col] != want[:, col])[0]
        assert bad.size == 0, (f"{kernel} {what}: count {n[bad[0]]}, x {x[bad[0]]:#x}: "
                               f"{out[bad[0], col]:#x} != {want[bad[0], col]:#x}")


def test_model_is_the_clamp():
    # the model against the definition, element by element with Python ints
    x = np.array([0xFFFFFFFF, 0x80000001, 5], np.uint32)
    for c in (0, 1, 31, 32, 33, 64, -1):
        for v in x:
            cu = c & 0xFFFFFFFF
            assert shl(np.array([v]), c, np.uint32)[0] == ((int(v) << cu) & 0xFFFFFFFF
                                                          if cu < 32 else 0)
            s = np.array([v]).view(np.int32)
            want = (int(s[0]) >> min(cu, 31))
            assert shr(s, c, np.int32)[0] == want


def _pack_reference(values, widths, word_bits):
    total = 0
    off = 0
    for v, w in zip(values, widths):
        total |= (int(v) & ((1 << int(w)) - 1)) << off
        off += int(w)
    nwords = off // word_bits + 2
    mask = (1 << word_bits) - 1
    return [(total >> (word_bits * k)) & mask for k in range(nwords)]


@pytest.mark.parametrize("bits, kernel, dtype", [(32, "pack32", np.uint32),
                                                 (64, "pack64", np.uint64)])
@pytest.mark.parametrize("m", [1, 31, 257])
def test_bit_packing(mod, bits, kernel, dtype, m):
    rng = np.random.default_rng(bits + m)
    v = rng.integers(0, np.iinfo(dtype).max, m, dtype=dtype, endpoint=True)
    w = rng.integers(0, bits + 1, m).astype(np.int32)
    w[0] = bits                        # a whole word: the mask needs 1 << bits == 0
    if m > 2:
        w[1], w[2] = 0, bits           # nothing, then a word-aligned whole word
    off = np.concatenate([[0], np.cumsum(w)[:-1]]).astype(np.int32)
    nwords = int(w.sum()) // bits + 2
    words = np.zeros(nwords, dtype)    # atomicOr accumulates: zero is the start
    mod[kernel][(m + 31) // 32, 32](v, w, off, words, m)
    want = np.array(_pack_reference(v, w, bits), dtype=dtype)
    bad = np.nonzero(words != want)[0]
    assert bad.size == 0, f"{kernel}: word {bad[0]} {words[bad[0]]:#x} != {want[bad[0]]:#x}"


@pytest.mark.parametrize("m", [1, 33, 130])
def test_macros_with_parenthesised_counts(mod, m):
    rng = np.random.default_rng(m + 5)
    x = rng.integers(0, 2**32, m, dtype=np.uint64).astype(np.uint32)
    n = counts(rng, m)
    out = poisoned((m, 2), np.uint32)
    mod.macro_shifts[(m + 63) // 64, 64](x, n, out, m)
    low = x & (shl(np.ones(m, np.uint32), n, np.uint32) - np.uint32(1))
    funnel = shr(x, n, np.uint32) | shl(np.roll(x, -1), 32 - n, np.uint32)
    assert np.array_equal(out[:, 0], low)
    assert np.array_equal(out[:, 1], funnel)


@pytest.mark.parametrize("m", [1, 40, 64, 100])
def test_barrier_kernel_keeps_fission(mod, m):
    rng = np.random.default_rng(m)
    x = rng.integers(0, 2**32, m, dtype=np.uint64).astype(np.uint32)
    n = (np.arange(m) % 34).astype(np.int32)     # 0..33: 32 - n from 32 down to -1
    out = poisoned(m, np.uint32)
    mod.block_funnel[(m + 63) // 64, 64](x, n, out, m)
    blocks = np.zeros((m + 63) // 64 * 64, np.uint32)
    blocks[:m] = x
    s = blocks.reshape(-1, 64)
    hi = np.roll(s, -1, axis=1).reshape(-1)[:m]
    want = shr(x, n, np.uint32) | shl(hi, 32 - n, np.uint32)
    assert np.array_equal(out, want)
    assert mod.block_funnel.tier == "fission", mod.block_funnel.attributes["tier_reason"]


def test_debug_build_clamps_too():
    mod = ql.compile(SHIFTS_SOURCE, device="cpu", debug=True)
    rng = np.random.default_rng(3)
    m = 70
    x, n = random_values(rng, m, np.int32), counts(rng, m)
    out = poisoned((m, 7), np.int32)
    mod.shifts_i32[2, 64](x, n, out, m)
    assert np.array_equal(out, expected_ops(x, n, np.int32))


# ---------------------------------------------------------- the rewrite
def _rewrite(src):
    return shifts.rewrite(src, ("-D__CUDA_ARCH__=900",), toolchain.find_compiler().path,
                          compiler._cache)


def test_rewrite_wraps_only_what_needs_it():
    src = ("#define SH(x, n) ((x) << (n))\n"
           "#define LOW a | b\n"
           "__device__ unsigned f(unsigned x, int n, int a, int b, unsigned char c) {\n"
           "    x <<= n;\n"
           "    return (x >> 3) + (c << 7) + (x << 33) + SH(x, n) + (x << LOW)\n"
           "        + (x >> n + 1) + (x << sizeof(int));\n"
           "}\n")
    r = _rewrite(src)
    lines = r.text.splitlines()
    assert len(lines) == len(src.splitlines())
    assert lines[0] == "#define SH(x, n) ((x) << __ql_clamp((n)))"   # in its definition
    assert lines[1] == "#define LOW a | b"
    assert lines[3] == "    x <<= __ql_clamp(n);"
    assert lines[4] == ("    return (x >> 3) + (c << 7) + (x << __ql_clamp(33)) + SH(x, n)"
                        " + (x << LOW)")
    assert lines[5] == "        + (x >> __ql_clamp(n + 1)) + (x << sizeof(int));"
    assert (r.wrapped, r.lines, r.in_macros) == (3, [4, 5, 6], 1)
    assert r.macro == 2     # SH's use (its #define is wrapped) and LOW's spread count


def test_macro_rewrite_leaves_what_it_cannot_wrap_exactly():
    src = ("#define BARE(x, n) ((x) << n)\n"              # n = a | b would change meaning
           "#define LONGER(x, n) ((x) << (n) + 1)\n"      # the count is (n) + 1
           "#define TEMPLATE(x) cast<vec<int>>(x)\n"      # closes template arguments
           "#define IN_IF(w) (1 << (w))\n#if IN_IF(2) == 4\n#endif\n"
           "#define SPLIT(x, n) \\\n    ((x) >> (n))\n")
    out, n = shift_macros.rewrite(src)
    assert n == 1
    assert out == src.replace("    ((x) >> (n))", "    ((x) >> __ql_clamp((n)))")


def test_rewrite_skips_sources_without_runtime_shifts():
    assert not shifts.candidates("x = (a >> 1) | (b << 8); y <<= 4; // z << n\n"
                                 'const char *s = "<< n";')
    assert shifts.candidates("x = a >> 1 + n;")
    assert shifts.candidates("x = a << 32;")
    assert shifts.candidates("x = a << n;")
    src = "__device__ unsigned f(unsigned x) { return x << 3; }\n"
    r = _rewrite(src)
    assert r.text == src and r.wrapped == 0 and r.why


def test_rewritten_template_with_class_operand():
    # a dependent operand that is a class keeps its own operator<<
    src = r"""
struct Acc { int v; __device__ Acc operator<<(int n) const { return {v * 100 + n}; } };
template <class T> __device__ T sh(T x, int n) { return x << n; }
extern "C" __global__ void k(int *o, int n) {
    o[0] = sh(Acc{3}, n).v;
    o[1] = sh(1, n);
    o[2] = sh(-1, n + 40) >> n;
}
"""
    assert "x << __ql_clamp(n)" in _rewrite(src).text
    mod = ql.compile(src, device="cpu")
    out = poisoned(3, np.int32)
    mod.k[1, 1](out, 32)
    assert list(out) == [332, 0, 0]
