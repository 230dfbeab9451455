"""Builds the C parts at install time; everything else is in pyproject.toml.

* quicklaunch._launch: the fast launch path (a CPython extension, NumPy C API).
* quicklaunch.backends.cpu._runtime: the CPU device runtime, plain C with no
  Python dependency (loaded with ctypes; the benchmarks' C baseline dlopens it).
* quicklaunch.bench._floor: the do-nothing extension function that is the
  floor of any Python launcher, for the launch benchmark.
"""
import numpy
from setuptools import Extension, setup

C_FLAGS = ["-O3", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension(
            "quicklaunch._launch",
            sources=["src/quicklaunch/_launch.c"],
            depends=["src/quicklaunch/_launch_core.h", "src/quicklaunch/_launch_stub_tls.h", "src/quicklaunch/_launch_buffer.h",
                     "src/quicklaunch/_launch_interop.h",
                     "src/quicklaunch/_launch_pointers.h", "src/quicklaunch/_launch_elements.h",
                     "src/quicklaunch/_launch_launcher.h", "src/quicklaunch/_launch_config.h",
                     "src/quicklaunch/_launch_types.h",
                     "src/quicklaunch/_launch_hooks.h", "src/quicklaunch/_launch_general.h",
                     "src/quicklaunch/_launch_texture.h", "src/quicklaunch/_launch_torch.h",
                     "src/quicklaunch/_convert.h", "src/quicklaunch/kinds.h",
                     "src/quicklaunch/ql_pyargs.h"],
            include_dirs=[numpy.get_include(), "src/quicklaunch"],
            extra_compile_args=C_FLAGS,
        ),
        Extension(
            "quicklaunch.backends.cpu._runtime",
            # calls go one way: runtime.c (the launch entry) -> streams.c
            # (events.c, graphs.c beside it) -> work.c -> pool.c -> fault.c;
            # cooperative.c (cooperative launches) calls pool.c
            sources=["src/quicklaunch/backends/cpu/runtime.c",
                     "src/quicklaunch/backends/cpu/cooperative.c",
                     "src/quicklaunch/backends/cpu/streams.c",
                     "src/quicklaunch/backends/cpu/events.c",
                     "src/quicklaunch/backends/cpu/graphs.c",
                     "src/quicklaunch/backends/cpu/work.c",
                     "src/quicklaunch/backends/cpu/pool.c",
                     "src/quicklaunch/backends/cpu/fault.c",
                     "src/quicklaunch/backends/cpu/interrupt.c",
                     "src/quicklaunch/backends/cpu/watchdog.c"],
            depends=["src/quicklaunch/backends/cpu/streams.h",
                     "src/quicklaunch/backends/cpu/work.h",
                     "src/quicklaunch/backends/cpu/pool.h",
                     "src/quicklaunch/backends/cpu/fault.h",
                     "src/quicklaunch/backends/cpu/interrupt.h",
                     "src/quicklaunch/backends/cpu/fmt.h",
                     "src/quicklaunch/backends/cpu/include/ql_cpu_abi.h",
                     "src/quicklaunch/ql_pyargs.h",
                     "src/quicklaunch/kinds.h"],
            extra_compile_args=C_FLAGS,
            libraries=["pthread"],
        ),
        Extension(
            "quicklaunch.bench._floor",
            sources=["src/quicklaunch/bench/_floor.c"],
            extra_compile_args=C_FLAGS,
        ),
    ],
)
