"""The CPU device's kernel corpus (every ``*SOURCE`` string in
tests/cpu/test_*.py) compiles with NVRTC for sm_80 and sm_90, with every
kernel's reflected parameters agreeing with its PTX entry.

Templates are instantiated with the name expressions the CPU tests use.
Sources that rely on the CPU device's conveniences get the option that
stands in for it (ADAPT); sources that cannot be CUDA are excluded (EXCLUDED),
each with its reason. A new corpus source must be added to one of the lists.
"""
import glob
import importlib
import os
import re

import pytest

import quicklaunch as ql
from quicklaunch.signature import kernel_expressions, parse_kernels

ARCHS = ("sm_80", "sm_90")
HERE = os.path.dirname(__file__)
CPU_TESTS = sorted(glob.glob(os.path.join(HERE, os.pardir, "cpu", "test_*.py")))
INF = "-DINFINITY=__int_as_float(0x7f800000)"

EXCLUDED = {   # source -> (reason, what NVRTC says about it)
    "test_runtime.SOURCE": ("a kernel keeps a static thread_local (it records which CPU "
                            "worker ran a block); device code has no thread_local",
                            "cannot use thread_local"),
    "test_corpus.CARVE_SOURCE": ("`extern __shared__ alignas(16) float4 row4[]`: NVRTC's "
                                 "front end rejects alignas in that position",
                                 "attribute does not apply to any entity"),
    "test_expf.STD_SOURCE": ("std::expf: the CPU shim declares it (as libc++ does); NVRTC's "
                             "<cmath> has no such member", 'namespace "std" has no member "expf"'),
}
ADAPT = {   # source -> (extra options, why the CUDA build needs them, the error without)
    "test_corpus.REDUCE_SOURCE": ([INF], "INFINITY is math.h's; nvcc includes it implicitly, "
                                         "NVRTC has no math.h", '"INFINITY" is undefined'),
    "test_corpus.ROWS_SOURCE": ([INF], "as REDUCE_SOURCE", '"INFINITY" is undefined'),
    "test_faults.SOURCE": (["-D__builtin_trap=__trap"], "__builtin_trap is the host "
                           "compiler's spelling of __trap", '"__builtin_trap" is undefined'),
    "test_module.SOURCE": (["-DOPTION_VALUE=41"], "the CPU test passes the same option",
                           '"OPTION_VALUE" is undefined'),
}


def _cpu(name):
    return importlib.import_module(f"tests.cpu.{name}")


def name_expressions(case: str) -> list[str]:
    """The instantiations the CPU tests ask for (from their own constants)."""
    if case == "test_corpus.TEMPLATE_SOURCE":
        m = _cpu("test_corpus")
        return ([f"block_reduce<{t}, {b}>" for t, b, _ in m.TEMPLATE_CASES]
                + ["block_reduce_op<int, 64, MaxOp<int>>", "reduce_samples<float>",
                   "reduce_samples<double>", "reduce_samples<int>"])
    if case in ("test_warp_semantics.SOURCE", "test_warp_undefined.SOURCE"):  # one source
        m = _cpu("test_warp_semantics")
        return ([f"shuffles<{t}>" for t in m.SHFL_TYPES] + [f"matches<{t}>" for t in m.MATCH_TYPES]
                + ["reduce_arith<int>", "reduce_arith<unsigned>"]
                + [f"tiles<{n}>" for n in m.TILE_SIZES] + ["partial_tile<32>", "partial_tile<16>"])
    if case == "test_scalars.SOURCE":
        return [f"put<{t}>" for t in _cpu("test_scalars").SCALARS]
    if case == "test_module.SOURCE":
        return ["scale<float, 5>", "scale<double, 3>"]
    if case == "test_errors.SOURCE":
        return ["twice<int>", "twice<float>"]
    if case == "test_defaults.SOURCE":
        return ["axpy<float>", "axpy<double>"]
    if case == "test_cg_any_type.SOURCE":
        return ["moves<4>", "moves<32>"]
    if case == "test_limits_cpu.LIMITS_SOURCE":
        return list(_cpu("test_limits_cpu").NAME_EXPRESSIONS)
    if case == "test_bundles.SOURCE":
        return ["fill<float>", "fill<int>"]
    if case == "test_direct_launch.SOURCE":
        return [e for e in _cpu("test_direct_launch").EXPRS if e.startswith("echo<")]
    return []


def corpus() -> dict[str, str]:
    """"module.CONSTANT" -> source, for every *SOURCE string constant."""
    found = {}
    for path in CPU_TESTS:
        name = os.path.basename(path)[:-3]
        for const, value in vars(_cpu(name)).items():
            if const.endswith("SOURCE") and isinstance(value, str):
                found[f"{name}.{const}"] = value
    return found


SOURCES = corpus()
CASES = sorted(set(SOURCES) - set(EXCLUDED))


def test_the_lists_match_the_corpus():
    assert len(SOURCES) >= 20
    assert set(EXCLUDED) | set(ADAPT) <= set(SOURCES)
    for case in CASES:      # every template kernel is instantiated somewhere
        decls = parse_kernels(SOURCES[case])
        templates = {d.name for d in decls if d.template is not None}
        asked = {e.split("<")[0] for e in name_expressions(case)}
        # `template __global__ void k<...>(...);` in the source instantiates it too
        asked |= {d.name.split("<")[0] for d in decls if d.template is None and "<" in d.name}
        assert templates <= asked, f"{case}: add name expressions for {templates - asked}"


@pytest.mark.parametrize("case", sorted(EXCLUDED) + sorted(ADAPT))
def test_exclusions_and_adaptations_are_still_needed(case):
    # if NVRTC starts accepting one of these as written, the lists above are stale
    expected = EXCLUDED[case][1] if case in EXCLUDED else ADAPT[case][2]
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile(SOURCES[case], arch="sm_90", name_expressions=name_expressions(case))
    assert expected in str(info.value)


# PTX parameter types each kind may take (the layout must agree, not only the size)
PTX_TYPES = {1: {"u64", "b64"}, 2: {"u64", "b64"}, 3: {"u8", "s8", "b8"},
             4: {"u16", "s16", "b16"}, 5: {"u32", "s32", "b32"}, 6: {"u64", "s64", "b64"},
             7: {"u8", "b8"}, 8: {"u16", "b16"}, 9: {"u32", "b32"}, 10: {"u64", "b64"},
             11: {"b8", "b16", "f16"}, 12: {"b8", "b16", "bf16"}, 13: {"f32", "b32"},
             14: {"f64", "b64"}, 15: {"u8", "b8", "pred"}, 16: {"b8"}}
SCALAR_BYTES = {"u8": 1, "s8": 1, "b8": 1, "pred": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2,
                "bf16": 2, "u32": 4, "s32": 4, "b32": 4, "f32": 4, "u64": 8, "s64": 8,
                "b64": 8, "f64": 8}
PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*)?"
                   r"[\w$.]+?(?:\[(\d+)\])?$")


def ptx_params(text: str, symbol: str) -> list[tuple[str, int, int | None]]:
    """(type, bytes or array length, declared .align) per parameter of `symbol`'s
    entry, read with a regex of this test's own."""
    body = re.search(r"\.entry\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)", text).group(1)
    out = []
    for decl in filter(None, (" ".join(p.split()) for p in body.split(","))):
        m = PARAM.match(decl)
        assert m, decl
        out.append((m.group(2), int(m.group(3) or 0), int(m.group(1)) if m.group(1) else None))
    return out


def prefetch_job(item):
    """The (source, arch) pair a selected test compiles (tests/prefetch.py)."""
    p = getattr(getattr(item, "callspec", None), "params", {})
    return (p["case"], p["arch"]) if "case" in p and "arch" in p else None


@pytest.fixture(scope="module", autouse=True)
def _compiled_ahead(request):
    """The selected (source, arch) pairs compiled ahead on both cores
    (tests/prefetch.py); each test then reads the compile cache."""
    from tests.prefetch import ahead
    ahead(request)


def compile_ahead(job):
    """One prefetch job (in a worker process): NVRTC's compile of a case."""
    case, arch = job
    ql.cuda.compile(SOURCES[case], arch=arch, options=ADAPT.get(case, ([],))[0],
                    name_expressions=name_expressions(case))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", CASES)
def test_corpus_source_compiles(case, arch):
    source = SOURCES[case]
    options = ADAPT.get(case, ([],))[0]
    exprs = name_expressions(case)
    prog = ql.cuda.compile(source, arch=arch, options=options, name_expressions=exprs)
    assert prog.cubin[:4] == b"\x7fELF" and f".target {arch}" in prog.ptx
    decls = parse_kernels(source)
    expected = kernel_expressions(decls, exprs)   # defined kernels, then the expressions
    assert list(prog.kernels) == expected
    declared = {d.name: d for d in decls}
    for name, k in prog.kernels.items():
        decl = declared[name.split("<")[0]]
        assert [p.name for p in k.params] == [p.name for p in decl.params], name
        assert k.line == decl.line
        got = ptx_params(prog.ptx, k.lowered_name)
        assert len(got) == len(k.params), name
        for p, (ptype, count, align) in zip(k.params, got):
            assert ptype in PTX_TYPES[p.kind], (name, p, ptype)
            if ptype == "b8" and count:       # an aggregate: .align A .b8 name[size]
                assert (count, align) == (p.size, p.align), (name, p)
            else:
                assert SCALAR_BYTES[ptype] == p.size, (name, p)
