"""The CPU device's kernel corpus (every ``*SOURCE`` string in
tests/cpu/test_*.py, collected as tests/nvrtc/test_corpus.py does) compiles
with hiprtc for a wave64 GPU (gfx90a, CDNA2) and wave32 GPUs (gfx1030 RDNA2;
gfx1100 RDNA3 where the installed hiprtc knows it: ROCm 5.2's comgr stops at
gfx1036), with every kernel's reflected parameters agreeing with the code
object's own metadata.

Exclusions are explicit, each with its reason and the compiler's words (a
test checks they are still needed):

* EXCLUDED: sources that cannot be device code on any AMD GPU;
* WAVE64_EXCLUDED: sources written for 32-lane warps (32-bit masks,
  lane = threadIdx.x % 32) that the prelude refuses on a 64-lane wavefront
  rather than compute something else (docs/hip-device.md, "wave64");
* ADAPT: sources that need an option the CPU test passes too.
"""
import pytest

import quicklaunch as ql
from quicklaunch.backends.hip import elf, hiprtc, metadata
from quicklaunch.signature import kernel_expressions, parse_kernels
from tests.nvrtc.test_corpus import SOURCES, name_expressions

WAVE64, WAVE32 = "gfx90a", "gfx1030"
ARCHS = (WAVE64, WAVE32, "gfx1100")
MASK = "quicklaunch HIP, wave64:"   # a 32-bit mask given, or a 64-bit one stored in 32 bits

EXCLUDED = {   # source -> (reason, what the compiler says)
    "test_runtime.SOURCE": ("a kernel keeps a static thread_local (which CPU worker ran a "
                            "block); device code has none, and LLVM aborts on it (in the "
                            "compiler process, not this one)", "the source uses thread_local"),
    "test_corpus.CARVE_SOURCE": ("`extern __shared__ alignas(16) float4 row4[]`: clang's "
                                 "front end rejects alignas in that position, as NVRTC's does",
                                 "'alignas' attribute cannot be applied to types"),
    "test_expf.STD_SOURCE": ("std::expf: the CPU shim declares it (as libc++ does); "
                             "hiprtc's <cmath> has no such member",
                             "no member named 'expf' in namespace 'std'"),
    "test_cg_grid.SOURCE": ("grid.sync(): the HIP device makes no cooperative launch yet",
                            "needs a cooperative launch"),
    "test_cg_grid.FAULT_SOURCE": ("grid.sync(), as above", "needs a cooperative launch"),
    "test_memcheck.SOURCE": ("one of its kernels calls grid.sync(): the HIP device makes no "
                             "cooperative launch yet", "needs a cooperative launch"),
    "test_cg_multiwarp.SOURCE": ("tiles wider than a wavefront (tiled_partition<64..1024>, "
                                 "block_tile_memory, cooperative_groups/scan.h): HIP's "
                                 "cooperative groups stop at one wavefront",
                                 "'cooperative_groups/scan.h' file not found"),
    "test_fission_tiles.SCAN_SOURCE": ("cg::inclusive_scan and exclusive_scan: HIP's "
                                       "cooperative groups have no scan.h",
                                       "'cooperative_groups/scan.h' file not found"),
    "test_fission_tiles.WIDE_SOURCE": ("a tile of 128 threads, wider than a wavefront",
                                       "tiled_partition<N>: N must be a power of two"),
    **{case: ("CUB's collectives: hiprtc has no CUB and quicklaunch does not map it to hipCUB "
              "(docs/cccl.md)", f"quicklaunch HIP: {what} (<cub/{header}>) is not available")
       for case, what, header in (
           ("test_cub.REDUCE_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_fission_cub.CUB_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_fission_cub.REFUSED_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_cub.TYPEDEF_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_cub.DIMS_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_cub.ARGMAX_SOURCE", "cub::BlockReduce", "block/block_reduce.cuh"),
           ("test_cub.SCAN_SOURCE", "cub::BlockScan", "block/block_scan.cuh"),
           ("test_cub_warp.WARP_SOURCE", "cub::WarpReduce", "warp/warp_reduce.cuh"),
           ("test_cub_warp.LOADSTORE_SOURCE", "cub::BlockLoad", "block/block_load.cuh"),
           ("test_cub_warp.EXCHANGE_SOURCE", "cub::BlockExchange", "block/block_exchange.cuh"),
           ("test_cub_sort.SORT_SOURCE", "cub::BlockRadixSort", "block/block_radix_sort.cuh"),
           ("test_cub_sort.RUNS_SOURCE", "cub::BlockHistogram", "block/block_histogram.cuh"))},
}
WAVE64_EXCLUDED = {   # source -> the 32-lane warp code in it
    "test_corpus.REDUCE_SOURCE": "__shfl_down_sync(0xffffffff, ...) warp reductions",
    "test_corpus.COUNTING_SOURCE": "__ballot_sync(0xffffffff, ...) into an unsigned",
    "test_warp_semantics.SOURCE": "the warp functions over 32-bit masks, lane = threadIdx.x % 32",
    "test_warp_semantics.BAD_SOURCE": "__shfl_xor_sync(0xffffffff, ...)",
    "test_warp_undefined.SOURCE": "warp functions over 32-bit masks (0xff, 0xffffffff)",
    "test_warp_undefined.UNDEF_SOURCE": "warp functions over 32-bit masks",
    "test_clang.SOURCE": "unsigned taken[g] = __activemask() (a 32-bit lane mask)",
    "test_fission.SOURCE": "__shfl_down_sync(0xffffffff, ...) in its fallback kernels",
    "test_fission_warps.WARPS_SOURCE": "shuffles and votes over 0xffffffff, lane = "
                                       "threadIdx.x & 31",
    "test_fission_guards.GUARDS_SOURCE": "shuffles and votes over 0xffffffff, warps of "
                                         "threadIdx.x / 32",
    "test_fission_guards.ROWS_SOURCE": "shuffles over 0xffffffff, warps of threadIdx.x / 32",
    "test_fission_writes.WRITES_SOURCE": "__shfl_down_sync(0xffffffff, ...) under "
                                         "threadIdx.x / 32 branches",
    "test_fission_inline.INLINE_SOURCE": "helpers shuffling over 0xffffffff, lane = "
                                         "threadIdx.x % 32",
    "test_fission_inline.REFUSED_SOURCE": "helpers shuffling over 0xffffffff",
    "test_fission_strided.SOURCE": "rows of 32 threads (c += 32) merged by shuffles over "
                                   "0xffffffff",
}
ADAPT = {   # source -> (extra options, why, the error without)
    "test_module.SOURCE": (["-DOPTION_VALUE=41"], "the CPU test passes the same option",
                           "undeclared identifier 'OPTION_VALUE'"),
}


def _known(arch: str) -> str | None:
    lib = hiprtc.load()
    if lib.arch_error(arch) is None:
        return None
    return (f"{lib.description} does not know {arch} (newer ROCm does); {WAVE32} stands in "
            f"for wave32 RDNA")


def cases():
    out = []
    for arch in ARCHS:
        for case in sorted(SOURCES):
            if case in EXCLUDED or (arch == WAVE64 and case in WAVE64_EXCLUDED):
                continue
            out.append(pytest.param(case, arch, id=f"{arch}-{case}"))
    return out


def test_the_lists_match_the_corpus():
    assert len(SOURCES) >= 20
    assert set(EXCLUDED) | set(WAVE64_EXCLUDED) | set(ADAPT) <= set(SOURCES)
    assert not set(EXCLUDED) & set(WAVE64_EXCLUDED)


@pytest.mark.parametrize("case, arch", [(c, WAVE64) for c in sorted(EXCLUDED)]
                         + [(c, WAVE32) for c in sorted(EXCLUDED)]
                         + [(c, WAVE64) for c in sorted(WAVE64_EXCLUDED)]
                         + [(c, WAVE32) for c in sorted(ADAPT)])
def test_exclusions_and_adaptations_are_still_needed(case, arch):
    # if hiprtc starts accepting one of these as written, the lists above are stale
    expected = (EXCLUDED[case][1] if case in EXCLUDED else ADAPT[case][2] if case in ADAPT
                else MASK)
    with pytest.raises(ql.CompileError) as info:
        ql.hip.compile(SOURCES[case], arch=arch, name_expressions=name_expressions(case))
    assert expected in str(info.value)


def c_offsets(params) -> list[int]:
    """Offsets under C's layout rules (this test's own arithmetic)."""
    out, end = [], 0
    for p in params:
        end = -(-end // p.align) * p.align
        out.append(end)
        end += p.size
    return out


def prefetch_job(item):
    """The (source, arch) pair a selected test compiles (tests/prefetch.py)."""
    p = getattr(getattr(item, "callspec", None), "params", {})
    if getattr(item, "originalname", None) != "test_corpus_source_compiles":
        return None
    try:
        if _known(p["arch"]):
            return None
    except Exception:   # noqa: BLE001  (no hiprtc: the tests say so themselves)
        return None
    return (p["case"], p["arch"])


@pytest.fixture(scope="module", autouse=True)
def _compiled_ahead(request):
    """The selected (source, arch) pairs of the corpus test compiled ahead
    on both cores (tests/prefetch.py); each test then reads the cache."""
    from tests.prefetch import ahead
    ahead(request)


def compile_ahead(job):
    """One prefetch job (in a worker process): hiprtc's compile of a case."""
    case, arch = job
    ql.hip.compile(SOURCES[case], arch=arch, options=ADAPT.get(case, ([],))[0],
                   name_expressions=name_expressions(case))


@pytest.mark.parametrize("case, arch", cases())
def test_corpus_source_compiles(case, arch):
    problem = _known(arch)
    if problem:
        pytest.skip(problem)
    source = SOURCES[case]
    exprs = name_expressions(case)
    prog = ql.hip.compile(source, arch=arch, options=ADAPT.get(case, ([],))[0],
                          name_expressions=exprs)
    assert prog.wave_size == (64 if arch == WAVE64 else 32)
    decls = parse_kernels(source)
    expected = kernel_expressions(decls, exprs)   # defined kernels, then the expressions
    assert list(prog.kernels) == expected
    declared = {d.name: d for d in decls}
    meta = metadata.kernels(elf.CodeObject(prog.code_object))
    for name, k in prog.kernels.items():
        decl = declared[name.split("<")[0]]
        assert [p.name for p in k.params] == [p.name for p in decl.params], name
        assert k.line == decl.line
        args = meta[k.lowered_name].args
        assert [(a.offset, a.size) for a in args] == list(zip(c_offsets(k.params),
                                                              [p.size for p in k.params])), name
        for p, a in zip(k.params, args):
            assert (p.kind in (1, 2)) == (a.value_kind == "global_buffer"), (name, p, a)
        assert meta[k.lowered_name].wavefront_size == prog.wave_size
