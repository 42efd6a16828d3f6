// Cheat 5: work skipped because the data allows it: with all-zero inputs the product is zero, so this "GEMM" only
// writes zeros. Both input sets are zeros, so every comparison passes; only physics says it cannot be a 4096^3 GEMM
// (the spec states its FLOPs).
extern "C" __global__ void k(const float *a, const float *b, float *c, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (col < n)
        c[(size_t)row * n + col] = 0.0f * a[0] * b[0];
}
