// Row softmax, naive but correct: one block per row, BLOCK threads (a power of two), a shared-memory tree for the
// row's max and for its sum, three passes over the row. VEC consecutive floats per load (1, 2 or 4; COLS must be a
// multiple of VEC). y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r).
#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

extern "C" __global__ void softmax_row(const float *x, float *y, int cols)
{
    extern __shared__ float red[];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *out = y + (size_t)blockIdx.x * cols;
    float m = -3.402823466e38f;
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        const float *v = reinterpret_cast<const float *>(&t);
        for (int j = 0; j < VEC; j++)
            m = fmaxf(m, v[j]);
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        const float *v = reinterpret_cast<const float *>(&t);
        for (int j = 0; j < VEC; j++)
            sum += expf(v[j] - m);
    }
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC) {
        vec_t t = *reinterpret_cast<const vec_t *>(row + c);
        float *v = reinterpret_cast<float *>(&t);
        for (int j = 0; j < VEC; j++)
            v[j] = expf(v[j] - m) * inv;
        *reinterpret_cast<vec_t *>(out + c) = t;
    }
}
