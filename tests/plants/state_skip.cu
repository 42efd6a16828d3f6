// Cheat 2a: work skipped after the first launch (a flag per element in a device global says it already ran).
#define MAXN 4096
__device__ int done[MAXN];
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || i >= MAXN || done[i])
        return;
    y[i] = 2.0f * x[i] + 1.0f;
    done[i] = 1;
}
