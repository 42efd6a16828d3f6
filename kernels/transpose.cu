// Matrix transpose, naive but correct: one thread per element on a BX x BY block; reads of a row are coalesced,
// writes are strided by the number of rows.
extern "C" __global__ void transpose(const float *in, float *out, int rows, int cols)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows)
        out[(size_t)x * rows + y] = in[(size_t)y * cols + x];
}
