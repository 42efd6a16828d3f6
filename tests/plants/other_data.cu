// Cheat 7: an answer that holds for the data it was shown, not for other data: it assumes x[0] < x[1] (true of
// set 0 with this spec's seed, not of set 1) and otherwise takes a shortcut.
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[0] < x[1] ? 2.0f * x[i] + 1.0f : 1.0f;
}
