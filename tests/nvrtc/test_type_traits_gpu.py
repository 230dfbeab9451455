"""<type_traits> resolves to quicklaunch's stand-ins on NVRTC and hiprtc
(never the host's libstdc++ header), with the traits kernels use."""
import pytest

import quicklaunch as ql

SOURCE = r"""
#include <type_traits>
template <class T> __global__ void store_if_float(T *x) {
    static_assert(std::is_signed<int>::value && std::is_unsigned<unsigned>::value &&
                  !std::is_integral<float>::value && std::is_pointer<T *>::value &&
                  !std::is_reference<T>::value, "traits");
    typedef std::conditional_t<std::is_floating_point<T>::value, T, int> Out;
    if (std::is_same<std::remove_const_t<const T>, T>::value) x[0] = (T)(Out)1;
}
"""


def _compiler(arch):
    try:
        if arch.startswith("gfx"):
            from quicklaunch.backends.hip import hiprtc
            hiprtc.load()
            return ql.hip
        ql.cuda.nvrtc_version()
        return ql.cuda
    except (ql.CompileError, ql.DeviceError) as exc:
        pytest.skip(f"no compiler for {arch}: {exc}")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "gfx90a", "gfx1030"])
def test_type_traits_compile_on_every_gpu(arch):
    prog = _compiler(arch).compile(SOURCE, arch=arch,
                                   name_expressions=["store_if_float<float>",
                                                     "store_if_float<int>"])
    assert set(prog.kernels) == {"store_if_float<float>", "store_if_float<int>"}
