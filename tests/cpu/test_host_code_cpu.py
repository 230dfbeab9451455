"""A .cu file with host code compiles on the CPU device: main, launch
wrappers and host prototypes are dropped with one CompileWarning (on a cache
hit too), and its kernels run. Standard names resolve as on the GPUs."""
import warnings

import numpy as np

import quicklaunch as ql

HOST_SOURCE = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void axpb(float *y, const float *x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
extern "C" void launch_axpb(float *y, const float *x, float a, float b, int n);
void launch_axpb(float *y, const float *x, float a, float b, int n) {
    axpb<<<(n + 127) / 128, 128>>>(y, x, a, b, n);
    cudaDeviceSynchronize();
}
int main() {
    float *d = NULL;
    cudaMalloc((void **)&d, 64 * sizeof(float));
    launch_axpb(d, d, 2.0f, 1.0f, 64);
    cudaFree(d);
    printf("done\n");
    return 0;
}
"""

STD_SOURCE = r"""
#include <cmath>
#include <cfloat>
#include <cstdio>
#include <algorithm>
#include <type_traits>
#include <cassert>
__global__ void std_names(const float *x, float *out, uint n) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    ushort s = 2; ulong l = 3;
    const float *p = NULL;
    static_assert(std::is_same<uint, unsigned int>::value, "uint");
    if (i < n) {
        assert(p == NULL);
        float v = x[i];
        float m = std::max(v, -FLT_MAX);
        out[i] = m * (float)M_PI + (float)(s + l) + (isinf(INFINITY) ? 1.0f : 0.0f)
                 + (isnan(NAN) ? 1.0f : 0.0f);
    }
}
"""


def _compile(source):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = ql.compile(source, device="cpu")
    return mod, [w for w in caught if issubclass(w.category, ql.CompileWarning)]


def test_host_code_dropped_with_one_warning_and_kernel_runs():
    for _ in range(2):   # the second compile is a cache hit: the note again
        mod, notes = _compile(HOST_SOURCE)
        assert len(notes) == 1
        text = str(notes[0].message)
        # the prototype and the definition of launch_axpb: one name
        assert text.endswith("compiled): launch_axpb, main"), text
        assert notes[0].filename == __file__
    assert mod.kernels == ["axpb"]
    rng = np.random.default_rng(7)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    mod.axpb[(n + 127) // 128, 128](y, x, 1.5, -0.25, n)
    ql.device("cpu").synchronize()
    np.testing.assert_allclose(y, np.float32(1.5) * x - np.float32(0.25), rtol=1e-6, atol=1e-6)  # FMA


def test_standard_names_and_headers():
    mod, notes = _compile(STD_SOURCE)
    assert notes == []
    rng = np.random.default_rng(11)
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    mod.std_names[(n + 63) // 64, 64](x, out, n)
    ql.device("cpu").synchronize()
    np.testing.assert_allclose(out, x * np.float32(np.pi) + 7.0, rtol=1e-5)
