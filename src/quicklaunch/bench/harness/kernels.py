"""The CUDA launch benchmark's kernels, as each library is to be given them.

Every library launches the same two empty kernels as the CPU launch
benchmark (quicklaunch.bench.launch.SOURCE: 4 and 16 parameters), with its
own arrays for the pointer parameters and the scalar types its documentation
asks for: ``bench_kernels`` reads the kernels' parameter types,
``typed_args`` builds one library's arguments. ``need`` imports a peer or
says which package is missing; ``ordinal`` is the device number of
``--device``.
"""
from .model import Skip

# C parameter types of the benchmark kernels -> NumPy scalar type names
_SCALARS = {"float": "float32", "double": "float64", "int": "int32", "signed": "int32",
            "signed int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
            "long long": "int64", "long long int": "int64", "signed long long": "int64",
            "unsigned long long": "uint64", "unsigned long long int": "uint64",
            "long": "int64", "unsigned long": "uint64", "short": "int16",
            "unsigned short": "uint16", "char": "int8", "signed char": "int8",
            "unsigned char": "uint8", "bool": "bool_"}


def bench_kernels():
    """(SOURCE, {n: host args}, {n: [numpy scalar type name, or None for a
    pointer]}) for the 4- and 16-parameter kernels of the CPU benchmark."""
    from ...signature import parse_kernels
    from ..launch import SOURCE, _args
    kinds = {}
    for decl in parse_kernels(SOURCE):
        n = len(decl.params)
        kinds[n] = [None if p.ctype.rstrip().endswith("*")
                    else _SCALARS[" ".join(p.ctype.replace("const", "").split())]
                    for p in decl.params]
    return SOURCE, {n: _args(n) for n in kinds}, kinds


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
