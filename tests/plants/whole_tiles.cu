// Cheat 7c: right only for sizes that are a multiple of its tile: no bounds check, only whole blocks are written
// (the spec's N = 4096 is a multiple of the block). At the spec's check_sizes (N = 1000) the last 104 outputs, the
// partial block, are never written.
extern "C" __global__ void k(const float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((blockIdx.x + 1) * blockDim.x <= n)
        y[i] = 2.0f * x[i] + 1.0f;
}
