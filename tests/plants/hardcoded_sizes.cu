// Cheat 7b: right only at the sizes it was timed at: the problem size is hard-coded (the spec's N = 4096) instead of
// read from n. Both input sets at the timed size pass (fresh data, the same size); at the spec's check_sizes
// (N = 5000) the outputs past element 4096 are never written.
#define N_TIMED 4096
extern "C" __global__ void k(const float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N_TIMED)
        y[i] = 2.0f * x[i] + 1.0f;
}
