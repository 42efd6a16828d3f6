// Sum of a vector, naive but correct: each thread adds ITEMS elements (strided by the block, so loads coalesce), then
// adds its partial sum into *out with one atomicAdd per thread. *out starts at zero (the spec's output accumulates).
// Checked against reduce_sum_ref.cu (the sum in double) with rtol 5e-4: the baseline adds 2^24 floats one by one into
// a float near 8e6, where one ulp is 1, so its own result is off by ~1.4e-4 relative (measured on the H200); variants
// that add in another order (warp or block sums first) are closer to the exact sum.
extern "C" __global__ void reduce_sum(const float *x, float *out, int n)
{
    float acc = 0.0f;
    for (int k = 0; k < ITEMS; k++) {
        const long long i = (long long)blockIdx.x * blockDim.x * ITEMS + (long long)k * blockDim.x + threadIdx.x;
        if (i < n)
            acc += x[i];
    }
    atomicAdd(out, acc);
}
