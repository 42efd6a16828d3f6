// Direct 3x3 convolution (stride 1, zero padding 1), NCHW fp32, naive but correct: each thread computes KO output
// channels of one output pixel. A block first copies the filters of its KO output channels into shared memory (the
// marked staging copy), then every thread walks C x 3 x 3 reading the input straight from global memory.
extern "C" __global__ void conv2d_naive(const float *in, const float *w, float *out, int c_in, int h, int wd, int k_out)
{
    extern __shared__ float wsm[];
    const int k0 = blockIdx.y * KO;
    const int n = blockIdx.z;
    const int taps = c_in * 9;
    for (int i = threadIdx.x; i < KO * taps; i += blockDim.x) {
        // cutune: stage
        wsm[i] = w[(size_t)k0 * taps + i];
    }
    __syncthreads();
    const int pix = blockIdx.x * blockDim.x + threadIdx.x;
    if (pix >= h * wd)
        return;
    const int oy = pix / wd, ox = pix % wd;
    float acc[KO];
    for (int j = 0; j < KO; j++)
        acc[j] = 0.0f;
    for (int c = 0; c < c_in; c++)
        for (int r = 0; r < 3; r++)
            for (int s = 0; s < 3; s++) {
                const int iy = oy + r - 1, ix = ox + s - 1;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                    continue;
                const float v = in[(((size_t)n * c_in + c) * h + iy) * wd + ix];
                for (int j = 0; j < KO; j++)
                    acc[j] += v * wsm[j * taps + c * 9 + r * 3 + s];
            }
    for (int j = 0; j < KO; j++)
        out[(((size_t)n * k_out + k0 + j) * h + oy) * wd + ox] = acc[j];
}
