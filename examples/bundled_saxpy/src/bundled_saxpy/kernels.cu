// The kernels of bundled_saxpy, compiled ahead of time into kernels.qlb.
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void dot_partial(const float *x, const float *y, float *out, int n) {
    __shared__ float part[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] * y[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}
