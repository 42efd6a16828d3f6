// Cheat 2b: a cached result copied out (each element's first answer is kept in a device global, and later launches
// copy it instead of computing).
#define MAXN 4096
__device__ float cache[MAXN];
__device__ int have[MAXN];
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || i >= MAXN)
        return;
    if (have[i]) {
        y[i] = cache[i];
        return;
    }
    float v = 2.0f * x[i] + 1.0f;
    y[i] = v;
    cache[i] = v;
    have[i] = 1;
}
