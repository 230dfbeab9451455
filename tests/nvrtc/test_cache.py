"""The on-disk cache of NVRTC compilations: a second compile is a hit (no
NVRTC call), a damaged or missing entry is a miss and a recompile, and
everything that changes the output is in the key."""
import json
import random

import pytest

import quicklaunch as ql
from quicklaunch import cache

TEMPLATE = r"""
struct __align__(8) Coeffs {{ float a, b; }};
template <typename T>
__global__ void axpb(T *y, const T *x, Coeffs c, long long n) {{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = c.a * x[i] + c.b + (T){salt};
}}
extern "C" __global__ void fill(int *x, int v) {{ x[threadIdx.x] = v + {salt}; }}
"""
EXPRS = ["axpb<float>", "axpb<double>"]


def snapshot(prog):
    return (prog.ptx, prog.cubin, prog.log, prog.arch,
            {k: (v.name, v.lowered_name, v.line, v.params) for k, v in prog.kernels.items()})


@pytest.fixture
def source(rng):
    return TEMPLATE.format(salt=int(rng.integers(1, 1 << 30)))


def entries(root, suffix):
    return sorted(p for p in (root / "cuda").glob(f"*/*{suffix}") if p.is_file())


def test_second_compile_is_a_hit(private_cache, count_compiles, source):
    first = ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS)
    assert len(count_compiles) == 1 and not first.from_cache
    again = ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS)
    assert len(count_compiles) == 1 and again.from_cache
    assert snapshot(again) == snapshot(first)
    assert again.kernels["axpb< float >"] is again.kernels["axpb<float>"]
    ptx_only = ql.cuda.compile(source, arch="compute_90", name_expressions=EXPRS)
    assert len(count_compiles) == 2 and ptx_only.cubin is None
    assert ql.cuda.compile(source, arch="compute_90", name_expressions=EXPRS).from_cache
    assert len(count_compiles) == 2
    assert len(entries(private_cache, ".json")) == 2 and len(entries(private_cache, ".cubin")) == 1


def test_everything_that_changes_the_output_is_in_the_key(private_cache, count_compiles,
                                                          source):
    ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS)
    variants = [dict(arch="sm_80", name_expressions=EXPRS),
                dict(arch="sm_90", name_expressions=EXPRS[:1]),
                dict(arch="sm_90", name_expressions=EXPRS, options=["-DUNUSED=1"]),
                dict(arch="sm_90", name_expressions=EXPRS, options=["-G"])]
    for i, kw in enumerate(variants):
        prog = ql.cuda.compile(source, **kw)
        assert not prog.from_cache and len(count_compiles) == i + 2
    prog = ql.cuda.compile(source + "\n// edited\n", arch="sm_90", name_expressions=EXPRS)
    assert not prog.from_cache and len(count_compiles) == len(variants) + 2


def _corrupt_bytes(path, rng):
    data = bytearray(path.read_bytes())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flip json", "flip cubin", "drop cubin", "drop json",
                                    "bad meta", "truncate json"])
def test_damaged_entry_is_a_recompile(private_cache, count_compiles, source, damage):
    rng = random.Random(damage)
    first = ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS)
    [meta] = entries(private_cache, ".json")
    [cubin] = entries(private_cache, ".cubin")
    if damage == "flip json":
        _corrupt_bytes(meta, rng)
    elif damage == "flip cubin":
        _corrupt_bytes(cubin, rng)
    elif damage == "drop cubin":
        cubin.unlink()
    elif damage == "drop json":
        meta.unlink()
    elif damage == "truncate json":
        meta.write_bytes(meta.read_bytes()[:len(meta.read_bytes()) // 2])
    else:   # a well-formed entry (valid checksum) with the wrong shape
        key = meta.name[:-len(".json")]
        bad = json.loads(meta.read_bytes())
        bad["kernels"] = [["axpb<float>", "sym", 1, [["x", "T", "not a size", 4, 1]]]]
        cache.CompileCache(private_cache).put("cuda", key, ".json", json.dumps(bad).encode())
    again = ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS)
    assert not again.from_cache and len(count_compiles) == 2
    assert snapshot(again) == snapshot(first)
    # and the entry was rewritten: the next compile is a hit again
    assert ql.cuda.compile(source, arch="sm_90", name_expressions=EXPRS).from_cache
    assert len(count_compiles) == 2
