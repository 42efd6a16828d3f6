// Plant control: the honest kernel, which every check must pass (a false rejection fails the suite).
extern "C" __global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaf(2.0f, x[i], 1.0f);
}
