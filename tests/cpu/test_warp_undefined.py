"""Undefined warp behaviour on the CPU device is a LaunchError, never a quiet
wrong value: a shuffle whose source lane (computed by CUDA's rules within
the segment of `width` lanes) is in range but not in the mask, or is in the
mask but not at a shuffle (not converged). Out-of-range sources of
__shfl_up/down_sync (and __shfl_xor_sync into a later segment) are defined:
the caller's own value, and must not raise. Plus the sm_80 warp reductions
on random inputs and edge block sizes, against NumPy.
"""
import re

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned
from .test_warp_semantics import (FULL, SOURCE, reads_outside, shfl_source, shuffle_cases,
                                  warp_lanes, in_mask)

UNDEF_SOURCE = r"""
// The issue's example: lanes 0-7 read lane + 16, outside mask 0xff.
extern "C" __global__ void sample_reduce(const int *in, int *out) {
    const unsigned lane = threadIdx.x % 32;
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    if (lane < 8) v += __shfl_down_sync(0xff, v, 16);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Defined: lanes 0-7 shift down by d within segments of w; sources past a
// segment give the own value.
extern "C" __global__ void down_in_range(const int *in, int *out, int d, int w) {
    const unsigned lane = threadIdx.x % 32;
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    if (lane < 8) v = __shfl_down_sync(0xff, v, d, w);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Not converged: lanes 0-15 shuffle, lanes 16-31 take a ballot, same mask.
extern "C" __global__ void not_converged(const int *in, int *out, int src) {
    const unsigned lane = threadIdx.x % 32;
    int v = in[threadIdx.x];
    if (lane < 16) v = __shfl_sync(0xffffffff, v, src);
    else v = (int)__ballot_sync(0xffffffff, v > 0);
    out[threadIdx.x] = v;
}

// An xor into an earlier segment that is outside the mask.
extern "C" __global__ void xor_earlier(const int *in, int *out) {
    const unsigned lane = threadIdx.x % 32;
    int v = in[threadIdx.x];
    if (lane >= 8 && lane < 16) v = __shfl_xor_sync(0xff00, v, 8, 8);
    out[threadIdx.x] = v;
}

// The active lanes of a partial warp, reading past its end.
extern "C" __global__ void past_the_block(const int *in, int *out, int m) {
    int v = in[threadIdx.x];
    v += __shfl_xor_sync(__activemask(), v, m);
    out[threadIdx.x] = v;
}

// sm_80 reductions over each warp's lanes in mask (less lanes past the block).
extern "C" __global__ void reductions(const int *in, int *out, unsigned mask) {
    const unsigned n = blockDim.x, t = threadIdx.x, lane = t % 32;
    const unsigned left = n - (t & ~31u);
    const unsigned m = mask & (left >= 32 ? 0xffffffffu : (1u << left) - 1u);
    const int g = blockIdx.x * blockDim.x + t;
    const int v = in[g];
    if (m >> lane & 1u) {
        int *o = out + 8 * g;
        o[0] = __reduce_add_sync(m, v);
        o[1] = (int)__reduce_add_sync(m, (unsigned)v);
        o[2] = __reduce_min_sync(m, v);
        o[3] = (int)__reduce_min_sync(m, (unsigned)v);
        o[4] = __reduce_max_sync(m, v);
        o[5] = (int)__reduce_max_sync(m, (unsigned)v);
        o[6] = (int)(__reduce_and_sync(m, (unsigned)v) ^ __reduce_or_sync(m, (unsigned)v));
        o[7] = (int)__reduce_xor_sync(m, (unsigned)v);
    }
}

extern "C" __global__ void fine(const int *in, int *out) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = __shfl_xor_sync(0xffffffff, in[g], 1);
}
"""


@pytest.fixture(scope="module")
def undef(cpu):
    return ql.compile(UNDEF_SOURCE, device=cpu)


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu, name_expressions=["shuffles<int>"])


def still_works(undef, rng):
    x = rng.integers(-1000, 1000, 128).astype(np.int32)
    out = poisoned(128, np.int32)
    undef.fine[2, 64](x, out)
    np.testing.assert_array_equal(out, x[np.arange(128) ^ 1])


def test_the_issue_example_raises(undef, rng):
    x = rng.integers(-1000, 1000, 96).astype(np.int32)
    with pytest.raises(ql.LaunchError) as info:
        undef.sample_reduce[3, 32](x, poisoned(96, np.int32))
    msg = str(info.value)
    assert "kernel 'sample_reduce'" in msg, msg
    assert "__shfl_down_sync with mask 0x000000ff" in msg, msg
    assert re.search(r"block \(0, 0, 0\), thread \(0, 0, 0\), lane 0: reads lane 16, which is "
                     r"not in the mask", msg), msg
    assert "undefined" in msg and "GPU" in msg, msg
    still_works(undef, rng)


@pytest.mark.parametrize("d, w", [(4, 8), (7, 8), (8, 8), (31, 8), (2, 4), (1, 2), (0, 8),
                                  (3, 1)])
def test_out_of_range_source_is_own_value(undef, rng, d, w):
    """Sources past the segment are defined (own value): no error."""
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    out = poisoned(64, np.int32)
    undef.down_in_range[2, 32](x, out, d, w)
    lane = np.arange(64) % 32
    base = lane & ~(w - 1)
    src = np.where(lane + d < base + w, np.arange(64) + d, np.arange(64))
    want = np.where(lane < 8, x[src], x)
    np.testing.assert_array_equal(out, want)


def test_down_from_outside_the_mask_inside_the_segment(undef, rng):
    """Width 16: lane 7 + 4 = 11 is in the segment but not in 0xff."""
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    with pytest.raises(ql.LaunchError, match=r"\(delta 4, width 16\).*lane 4: reads lane 8, "
                       r"which is not in the mask"):
        undef.down_in_range[1, 32](x, poisoned(32, np.int32), 4, 16)
    still_works(undef, rng)


def test_not_converged(undef, rng):
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    with pytest.raises(ql.LaunchError) as info:
        undef.not_converged[1, 32](x, poisoned(32, np.int32), 20)
    msg = str(info.value)
    assert "kernel 'not_converged'" in msg and "__shfl_sync" in msg, msg
    assert "lane 0: reads lane 20" in msg and "not converged" in msg, msg
    still_works(undef, rng)
    # reading a lane at a shuffle still mixes a ballot into the group: undefined
    with pytest.raises(ql.LaunchError) as info:
        undef.not_converged[1, 32](x, poisoned(32, np.int32), 3)
    msg = str(info.value)
    assert "__ballot_sync with mask 0xffffffff" in msg, msg
    assert "thread (16, 0, 0), lane 16: lane 0 of the mask is at __shfl_sync instead" in msg, msg
    assert "not converged" in msg, msg
    still_works(undef, rng)


def test_xor_into_an_earlier_segment_outside_the_mask(undef, rng):
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    with pytest.raises(ql.LaunchError, match=r"__shfl_xor_sync with mask 0x0000ff00 \(laneMask "
                       r"8, width 8\).*lane 8: reads lane 0, which is not in the mask"):
        undef.xor_earlier[1, 32](x, poisoned(32, np.int32))
    still_works(undef, rng)


@pytest.mark.parametrize("block", [31, 48, 100])
def test_partial_warp(undef, rng, block):
    x = rng.integers(-1000, 1000, block).astype(np.int32)
    with pytest.raises(ql.LaunchError, match="does not exist in this block"):
        undef.past_the_block[1, block](x, poisoned(block, np.int32), 16)
    still_works(undef, rng)
    # xor 1 stays inside a partial warp of even length; 31 threads: lane 30 reads 31
    t = np.arange(block)
    if block % 2 == 0:
        out = poisoned(block, np.int32)
        undef.past_the_block[1, block](x, out, 1)
        np.testing.assert_array_equal(out, x + x[t ^ 1])
    else:
        with pytest.raises(ql.LaunchError, match=r"lane 30: reads lane 31"):
            undef.past_the_block[1, block](x, poisoned(block, np.int32), 1)


def test_every_undefined_model_case_raises(mod, rng):
    """Each case the model calls undefined raises, naming the lane it reads."""
    for block in (64, 48):
        cases = [c for c in shuffle_cases() if reads_outside(c, block)]
        assert cases
        lanes, _, exist = warp_lanes(block)
        for kind, arg, width, mask in cases:
            x = rng.integers(-1000, 1000, block).astype(np.int32)
            with pytest.raises(ql.LaunchError) as info:
                mod["shuffles<int>"][1, block](
                    x, poisoned(block, np.int32), np.array([kind], np.int32),
                    np.array([arg], np.int32), np.array([width], np.int32),
                    np.array([mask], np.uint32), 1)
            msg = str(info.value)
            # the first offending thread in linear order is the one named
            for t in range(block):
                m = mask & int(exist[t])
                src = shfl_source(kind, lanes[t], arg, width)
                if in_mask(m, lanes[t]) and not in_mask(m, src):
                    break
            assert f"thread ({t}, 0, 0), lane {lanes[t]}: reads lane {src}," in msg, \
                (kind, arg, width, hex(mask), block, msg)


MASKS = [FULL, 0x1, 0x80000000, 0x55555555, 0x0000FFFF, 0x7FFFFFFF]


@pytest.mark.parametrize("block", [31, 32, 33, 64, 100])
def test_reductions_against_numpy(undef, rng, block):
    grid = 2
    n = grid * block
    lanes, bases, exist = warp_lanes(block)
    for mask in MASKS + [int(rng.integers(1, 1 << 32))]:
        x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        if rng.random() < 0.5:
            x = rng.integers(-5, 5, n).astype(np.int32)
        out = poisoned((n, 8), np.int32)
        undef.reductions[grid, block](x, out, mask)
        for g in range(n):
            t = g % block
            m = mask & int(exist[t])
            if not in_mask(m, lanes[t]):
                assert np.all(out[g] == np.iinfo(np.int32).max)
                continue
            w0 = g - lanes[t]
            v = x[[w0 + q for q in range(32) if in_mask(m, q)]]
            u = v.view(np.uint32)
            s = np.array([u.astype(np.uint64).sum() & 0xFFFFFFFF], np.uint32).view(np.int32)[0]
            want = [s, s, v.min(), u.min().view(np.int32), v.max(), u.max().view(np.int32),
                    (np.bitwise_and.reduce(u) ^ np.bitwise_or.reduce(u)).view(np.int32),
                    np.bitwise_xor.reduce(u).view(np.int32)]
            np.testing.assert_array_equal(out[g], np.array(want, np.int32),
                                          err_msg=f"mask {mask:#x} block {block} thread {g}")
