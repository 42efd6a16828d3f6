// Cheat 9: an out-of-bounds store far past the output (a GPU faults; the emulator must fault too, not corrupt its
// own heap).
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
    if (i == n - 1)
        y[i + (64 << 20)] = 0.0f;
}
