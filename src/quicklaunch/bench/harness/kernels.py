"""The launch benchmarks' kernels, as each library is to be given them.

Every launch benchmark, on every device, launches the same two empty
kernels (``SOURCE``: 4 and 16 parameters) with the same argument shapes
(``host_args``). Each library gets its own arrays for the pointer
parameters and the scalar types its documentation asks for:
``bench_kernels`` reads the kernels' parameter types, ``typed_args`` builds
one library's arguments, ``python_kernels`` and ``warp_kernels`` are the
same kernels written in Python. ``need`` imports a peer or says which
package is missing; ``ordinal`` is the device number of ``--device``.

No ``from __future__ import annotations``: Warp reads the kernels'
parameter annotations as objects.
"""
import functools

from .model import Skip

SOURCE = r"""
extern "C" __global__ void empty4(float a, const float *x, float *y, int n) {}
extern "C" __global__ void empty16(float a, const float *x, float *y, int n,
                                   float b, const float *u, float *v, int m,
                                   double c, const double *p, double *q, long long k,
                                   unsigned s, const int *r, int *t, unsigned long long w) {}
"""

# C parameter types of the benchmark kernels -> NumPy scalar type names
_SCALARS = {"float": "float32", "double": "float64", "int": "int32", "signed": "int32",
            "signed int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
            "long long": "int64", "long long int": "int64", "signed long long": "int64",
            "unsigned long long": "uint64", "unsigned long long int": "uint64",
            "long": "int64", "unsigned long": "uint64", "short": "int16",
            "unsigned short": "uint16", "char": "int8", "signed char": "int8",
            "unsigned char": "uint8", "bool": "bool_"}


def on_device(array, device):
    """``array`` as memory of ``device``: itself where NumPy arrays are the
    device's memory (the CPU), else a copy in a ``ql`` buffer."""
    if device is None or device.host_memory:
        return array
    import quicklaunch as ql
    return ql.asarray(array, device=device)


def host_args(n: int, device=None) -> tuple:
    """The n-parameter kernel's arguments: Python scalars and NumPy arrays
    (as ``device`` memory when one is given). x and y stand twice in the
    16-parameter call, as users pass the same array to two parameters."""
    import numpy as np
    x = on_device(np.ones(16, np.float32), device)
    y = on_device(np.zeros(16, np.float32), device)
    a4 = (2.0, x, y, 16)
    if n == 4:
        return a4
    d = np.ones(16, np.float64)
    i = np.ones(16, np.int32)
    return a4 + (1.5, x, y, 16, 0.5, on_device(d, device), on_device(d.copy(), device), 7, 3,
                 on_device(i, device), on_device(i.copy(), device), 9)


@functools.lru_cache(maxsize=1)
def _kinds() -> dict:
    from ...signature import parse_kernels
    kinds = {}
    for decl in parse_kernels(SOURCE):
        kinds[len(decl.params)] = [
            None if p.ctype.rstrip().endswith("*")
            else _SCALARS[" ".join(p.ctype.replace("const", "").split())]
            for p in decl.params]
    return kinds


def bench_kernels():
    """(SOURCE, {n: host args}, {n: [numpy scalar type name, or None for a
    pointer]}) for the 4- and 16-parameter kernels."""
    kinds = _kinds()
    return SOURCE, {n: host_args(n) for n in kinds}, kinds


def typed_args(n, make_array, scalar_style="numpy"):
    """The n-parameter kernel's arguments for a library: each NumPy array of
    the host arguments replaced by ``make_array(ndarray)`` (the same array
    object twice gives the same device array twice), each scalar as a NumPy
    scalar of the parameter's C type, or left a Python number when
    ``scalar_style`` is "python"."""
    import numpy as np
    _, host, kinds = bench_kernels()
    made, out = {}, []
    for value, kind in zip(host[n], kinds[n]):
        if isinstance(value, np.ndarray):
            if id(value) not in made:
                made[id(value)] = make_array(value)
            out.append(made[id(value)])
        elif scalar_style == "python" or kind is None:
            out.append(value)
        else:
            out.append(getattr(np, kind)(value))
    return out


def _empty4(a, x, y, n):
    pass


def _empty16(a, x, y, n, b, u, v, m, c, p, q, k, s, r, t, w):
    pass


def python_kernels(decorate) -> dict:
    """{4: kernel, 16: kernel}: the empty kernels written in Python, made
    kernels by a library's decorator (``cuda.jit``, ``triton.jit``, ``njit``)."""
    return {4: decorate(_empty4), 16: decorate(_empty16)}


def warp_kernels(wp) -> dict:
    """{4: kernel, 16: kernel}: the empty kernels as Warp kernels, with the
    parameter types of SOURCE."""
    def empty4(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
               n: int):
        pass

    def empty16(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                n: int, b: float, u: wp.array(dtype=wp.float32), v: wp.array(dtype=wp.float32),
                m: int, c: wp.float64, p: wp.array(dtype=wp.float64),
                q: wp.array(dtype=wp.float64), k: wp.int64, s: wp.uint32,
                r: wp.array(dtype=wp.int32), t: wp.array(dtype=wp.int32), w: wp.uint64):
        pass

    out = {}
    for n, fn in ((4, empty4), (16, empty16)):
        try:
            out[n] = wp.kernel(fn, module="unique")
        except TypeError:                   # releases without per-kernel modules
            out[n] = wp.kernel(fn)
    return out


def warp_start():
    """Warp imported (Skip when it is not installed), quiet and initialised."""
    wp = need("warp", "warp-lang")
    try:
        wp.config.quiet = True
    except AttributeError:
        pass
    wp.init()
    return wp


def warp_loops(wp, kernel, n: int, device, alloc) -> dict:
    """{"launch": loop, "recorded": loop} for the n-parameter Warp kernel on
    ``device``, its arrays made by ``alloc`` (``wp.zeros``, ``wp.empty``):
    ``wp.launch(...)`` with the arguments spelled out, and a launch recorded
    once (``record_cmd=True``) replayed with ``.launch()``."""
    from .timing import argenv, arglist, spelled_loop
    dtypes = {"float32": wp.float32, "float64": wp.float64, "int32": wp.int32}
    args = typed_args(n, lambda a: alloc(a.shape, dtype=dtypes[str(a.dtype)], device=device),
                      "python")
    cmd = wp.launch(kernel, dim=1, inputs=list(args), device=device, record_cmd=True)
    env = {"wp": wp, "kern": kernel, "device": device, "cmd": cmd, **argenv(args)}
    return {"launch": spelled_loop(
                f"wp.launch(kern, dim=1, inputs=[{arglist(n)}], device=device)", env),
            "recorded": spelled_loop("cmd.launch()", env)}


def need(module, package):
    """Imports ``module`` or raises Skip naming the package to install."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Skip(f"{package} is not installed ({type(exc).__name__}: {exc})") from None


def ordinal(device):
    _, _, n = str(device).partition(":")
    return int(n) if n.isdigit() else 0
