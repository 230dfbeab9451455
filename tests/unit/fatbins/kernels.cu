// The source of the fatbins beside it, built with nvcc 13.0 by make_fatbins.sh.
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void fill(int* out, int n) { int i = threadIdx.x; if (i < n) out[i] = i; }
