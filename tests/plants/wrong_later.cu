// Cheat 4: correct first, corrupt later: right only while the output still holds the first check's poison (NaN);
// the check after timing poisons with another value and sees garbage, on either input set.
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = y[i] != y[i] ? 2.0f * x[i] + 1.0f : 0.0f;
}
