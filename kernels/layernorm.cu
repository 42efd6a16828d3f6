// Layer normalisation over the last dimension, naive but correct: one block per row, BLOCK threads (a power of two),
// separate passes for the mean, the variance and the output, each reduced through a shared-memory tree. VEC
// consecutive floats per load (COLS a multiple of VEC).
// y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + 1e-5) * gamma[c] + beta[c].
#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ float block_sum(float v, float *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void layernorm(const float *x, const float *gamma, const float *beta, float *y, int cols)
{
    extern __shared__ float red[];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *out = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        const float *v = reinterpret_cast<const float *>(&t);
        for (int j = 0; j < VEC; j++)
            s += v[j];
    }
    const float mean = block_sum(s, red) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        const float *v = reinterpret_cast<const float *>(&t);
        for (int j = 0; j < VEC; j++)
            q += (v[j] - mean) * (v[j] - mean);
    }
    const float inv = 1.0f / sqrtf(block_sum(q, red) / cols + 1e-5f);
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        vec_t g = *reinterpret_cast<const vec_t *>(gamma + c);
        vec_t b = *reinterpret_cast<const vec_t *>(beta + c);
        float *v = reinterpret_cast<float *>(&t);
        const float *gv = reinterpret_cast<const float *>(&g), *bv = reinterpret_cast<const float *>(&b);
        for (int j = 0; j < VEC; j++)
            v[j] = (v[j] - mean) * inv * gv[j] + bv[j];
        *reinterpret_cast<vec_t *>(out + c) = t;
    }
}
