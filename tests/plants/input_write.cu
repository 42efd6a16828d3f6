// Cheat 3: the kernel writes its input (zeroing it, so that later launches could take a fast path).
extern "C" __global__ void k(float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    y[i] = v == 0.0f ? 1.0f : 2.0f * v + 1.0f;
    x[i] = 0.0f;
}
