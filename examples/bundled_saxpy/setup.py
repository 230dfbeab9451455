"""Builds kernels.qlb while the wheel is built: ``ql.build`` compiles
src/bundled_saxpy/kernels.cu for the targets in $BUNDLED_SAXPY_TARGETS (by
default a portable x86-64-v2 CPU entry, or this CPU's on other machines,
plus sm_80, sm_90 and compute_90 when NVRTC is installed) into the package
in the build directory. The wheel is marked platform-specific: the bundle
holds native code (the CPU entry is a shared object)."""
import os
import platform

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def default_targets() -> str:
    targets = ["cpu:x86-64-v2" if platform.machine().lower() in ("x86_64", "amd64") else "cpu"]
    try:
        import quicklaunch as ql
        ql.cuda.nvrtc_version()
        targets += ["sm_80", "sm_90", "compute_90"]
    except Exception as exc:  # noqa: BLE001 - no NVRTC: a CPU-only bundle
        print(f"bundled-saxpy: no CUDA entries ({exc})")
    return ",".join(targets)


class BuildWithBundle(build_py):
    def run(self):
        super().run()
        import quicklaunch as ql
        with open(os.path.join(HERE, "src", "bundled_saxpy", "kernels.cu")) as f:
            source = f.read()
        targets = os.environ.get("BUNDLED_SAXPY_TARGETS") or default_targets()
        out = os.path.join(self.build_lib, "bundled_saxpy", "kernels.qlb")
        ql.build(source, targets, out)
        print(f"bundled-saxpy: wrote {out} for {targets}")


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True   # the bundle is native code: a platform wheel, not py3-none-any


setup(cmdclass={"build_py": BuildWithBundle}, distclass=BinaryDistribution)
