"""The peers that launch a CUDA C kernel or a library op: cuda.core, CuPy, torch.

cuda.core and CuPy compile the benchmark's own kernels (harness/kernels.py)
from CUDA C and launch them through their documented, everyday path; torch
has no custom kernel launch cheaper than one elementwise op, so its row is
``y.add_(x)`` on 1-element tensors. Each setup runs only when its package
imports; anything missing or failing becomes the row's reason.
"""
from ..harness.kernels import bench_kernels, need, ordinal, typed_args
from ..harness.model import LAUNCH, NotApplicable, RowSpec, Skip, Source
from ..harness.timing import argenv, arglist, batched, spelled_loop


def _setup_cuda_core(ctx):
    need("cuda.bindings", "cuda-bindings (cuda-python)")
    cc = need("cuda.core", "cuda-core")
    if not hasattr(cc, "launch"):          # releases before the API left "experimental"
        cc = need("cuda.core.experimental", "cuda-core")
    source, _, _ = bench_kernels()
    dev = cc.Device(ordinal(ctx.device))
    dev.set_current()
    arch = "sm_" + "".join(str(v) for v in dev.compute_capability)
    module = cc.Program(source, code_type="c++",
                        options=cc.ProgramOptions(arch=arch)).compile("cubin")
    stream, config, launch = dev.default_stream, cc.LaunchConfig(grid=1, block=1), cc.launch
    out = {"cuda_core.launch": {}}
    for n in ctx.params:
        kern = module.get_kernel(f"empty{n}")
        args = typed_args(n, lambda a: dev.allocate(max(a.nbytes, 1)))
        env = {"launch": launch, "stream": stream, "config": config, "kern": kern,
               **argenv(args)}
        loop = spelled_loop(f"launch(stream, config, kern, {arglist(n)})", env)
        out["cuda_core.launch"][n] = batched(loop, dev.sync, ctx.batch)
    return out


def _setup_cupy(ctx):
    cp = need("cupy", "CuPy (cupy-cuda12x / cupy-cuda13x)")
    if cp.cuda.runtime.getDeviceCount() < 1:
        raise Skip("CuPy sees no CUDA device")
    source, _, _ = bench_kernels()
    device = cp.cuda.Device(ordinal(ctx.device))
    device.use()
    out = {"cupy.rawkernel": {}}
    for n in ctx.params:
        kern = cp.RawKernel(source, f"empty{n}")
        args = typed_args(n, lambda a: cp.empty(a.shape, a.dtype))
        loop = spelled_loop(f"kern((1,), (1,), ({arglist(n)},))", {"kern": kern, **argenv(args)})
        out["cupy.rawkernel"][n] = batched(loop, device.synchronize, ctx.batch)
    return out


def _setup_torch(ctx):
    torch = need("torch", "torch")
    if not torch.cuda.is_available():
        raise Skip(f"torch.cuda.is_available() is False (torch {torch.__version__}, "
                   f"built for CUDA {torch.version.cuda})")
    dev = torch.device("cuda", ordinal(ctx.device))
    x = torch.ones(1, device=dev)
    y = torch.zeros(1, device=dev)
    loop = spelled_loop("y.add_(x)", {"x": x, "y": y})
    out = {"torch.add": {}}
    for n in ctx.params:
        out["torch.add"][n] = (batched(loop, torch.cuda.synchronize, ctx.batch) if n == 4 else
                               NotApplicable(f"torch has no {n}-argument elementwise op"))
    return out


LIBRARY_PEERS = [
    Source("cuda.core", (RowSpec(
        "cuda_core.launch", "cuda.core launch()", LAUNCH,
        "launch(stream, config, kernel, *args); NumPy scalars, cuda.core Buffers"),),
        _setup_cuda_core, ("cuda-core", "cuda-bindings", "cuda-python")),
    Source("cupy", (RowSpec(
        "cupy.rawkernel", "CuPy RawKernel", LAUNCH,
        "kern((1,), (1,), (a, x, y, n)); NumPy scalars (a Python float would be passed as "
        "a double), CuPy arrays"),),
        _setup_cupy, ("cupy", "cupy-cuda12x", "cupy-cuda13x")),
    Source("torch", (RowSpec(
        "torch.add", "torch y.add_(x), 1 element", LAUNCH,
        "not a custom kernel: one elementwise op on 1-element tensors through the "
        "dispatcher, the cheapest launch torch offers"),),
        _setup_torch, ("torch",)),
]
