// Cheat 1: the last elements are never written (the output buffer keeps whatever it held).
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 7)
        y[i] = 2.0f * x[i] + 1.0f;
}
