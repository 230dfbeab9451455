"""A fused RMSNorm kernel in a small torch model: eager, torch.compile'd,
and (on a CUDA GPU) captured in a CUDA graph. docs/frameworks.md walks
through it; tests/frameworks/test_example.py runs it.

    python docs/examples/rmsnorm_torch.py [--device cpu|cuda]
"""
import argparse
import time

import torch

import quicklaunch as ql

SOURCE = r"""
// One block per row: each thread sums the squares of a strided slice, a
// shared-memory tree adds the partial sums, then every thread scales its slice.
extern "C" __global__ void rmsnorm(const float *x, const float *w, float *y, int d, float eps) {
    extern __shared__ float part[];
    const float *row = x + (size_t)blockIdx.x * d;
    float *out = y + (size_t)blockIdx.x * d;
    float s = 0.f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) s += row[i] * row[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    const float r = rsqrtf(part[0] / d + eps);
    for (int i = threadIdx.x; i < d; i += blockDim.x) out[i] = row[i] * r * w[i];
}
"""
THREADS = 128


def make_rmsnorm(device):
    k = ql.compile(SOURCE, device=device).rmsnorm
    # torch.ops.ql.rmsnorm(Tensor x, Tensor w, SymInt d, float eps) -> Tensor:
    # y is allocated by the op (its shape rule: like x), one block per row.
    return ql.torch.op(k, grid=lambda x, d, **_: x.numel() // d, block=THREADS,
                       shared_mem=THREADS * 4,
                       outputs={"y": lambda x, **_: (x.shape, x.dtype)})


class Block(torch.nn.Module):
    def __init__(self, d, rmsnorm=None):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.lin = torch.nn.Linear(d, d)
        self.rmsnorm = rmsnorm

    def forward(self, x):
        d = x.shape[-1]
        if self.rmsnorm is None:   # the same in plain torch operators, for reference
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        else:
            h = self.rmsnorm(x, self.w, d, 1e-6)
        return x + torch.nn.functional.gelu(self.lin(h))


def per_call_us(f, x, n=200):
    f(x)
    t = time.perf_counter()
    for _ in range(n):
        f(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main(device="cpu", n=200, compiled_reference=True):
    torch.manual_seed(0)
    tdev = "cuda" if device.startswith("cuda") else "cpu"
    x = torch.randn(8, 256, device=tdev)
    ours = Block(256, make_rmsnorm(device)).to(tdev)
    ref = Block(256).to(tdev)
    ref.load_state_dict(ours.state_dict())
    with torch.no_grad():
        want = ref(x)
        eager = ours(x)
        compiled = torch.compile(ours, fullgraph=True)
        got = compiled(x)
        torch.testing.assert_close(eager, want, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        rows = {"torch operators, eager": per_call_us(ref, x, n),
                "quicklaunch RMSNorm, eager": per_call_us(ours, x, n),
                "quicklaunch RMSNorm, compiled": per_call_us(compiled, x, n)}
        if compiled_reference:
            rows["torch operators, compiled"] = per_call_us(torch.compile(ref, fullgraph=True),
                                                            x, n)
        if tdev == "cuda":   # captured: the op launches on torch's current stream
            static_x = x.clone()
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                ours(static_x)   # warm-up: launchers built outside the capture
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g), ql.torch.capture_guard():
                static_y = ours(static_x)   # a stray legacy-stream launch would raise
            g.replay()
            torch.cuda.synchronize()
            torch.testing.assert_close(static_y, want, rtol=1e-4, atol=1e-4)
            rows["quicklaunch RMSNorm, CUDA graph replay"] = per_call_us(lambda _: g.replay(), x, n)
    for name, us in rows.items():
        print(f"{name:40} {us:8.1f} us per forward")
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    main(p.parse_args().device)
