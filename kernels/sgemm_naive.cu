// C = A * B in fp32 (row-major, A is M x K, B is K x N), naive but correct: each thread walks K for TM outputs of one
// column (TM consecutive rows), reading A and B straight from global memory.
extern "C" __global__ void sgemm_naive(const float *a, const float *b, float *c, int m, int n, int k)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * TM;
    if (col >= n)
        return;
    float acc[TM];
    for (int t = 0; t < TM; t++)
        acc[t] = 0.0f;
    for (int p = 0; p < k; p++) {
        const float bv = b[(size_t)p * n + col];
        for (int t = 0; t < TM; t++)
            if (row0 + t < m)
                acc[t] += a[(size_t)(row0 + t) * k + p] * bv;
    }
    for (int t = 0; t < TM; t++)
        if (row0 + t < m)
            c[(size_t)(row0 + t) * n + col] = acc[t];
}
