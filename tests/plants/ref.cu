// The honest reference of every plant: y = 2 x + 1, one element per thread.
extern "C" __global__ void ref(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}
