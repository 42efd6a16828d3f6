/* cutune — issue 21's workload extras in the SIMT and mma GEMM kernels (src/ops/gemm/extras.h). */
#include "ops/gemm/extras.h"

void cut_gemm_emit_extras(cut_buf *b, const cut_gemm *g, int splitk)
{
    cut_buf_printf(b, "#define LAYOUT_TA %d\n#define BATCH %d\n", cut_gemm_a_trans(g), cut_gemm_batch(g));
    cut_buf_printf(b, "#define STRIDE_A %zuull\n#define STRIDE_B %zuull\n#define STRIDE_C %zuull\n",
                   cut_gemm_stride(g, 'A'), cut_gemm_stride(g, 'B'), cut_gemm_stride(g, 'C'));
    /* %.9e: every float round-trips; alpha and beta are rounded to float as cuBLAS's fp32 scale type does */
    cut_buf_printf(b, "#define HAS_BETA %d\n#define ALPHA %.9ef\n#define BETA %.9ef\n#define SPLITK %d\n",
                   cut_gemm_beta(g) != 0.0, (double)(float)cut_gemm_alpha(g), (double)(float)cut_gemm_beta(g),
                   splitk > 1 ? splitk : 1);
}

const char cut_gemm_extras_text[] =
    "#if HAS_BETA\n"
    "#define CIN_PARAM , const float *__restrict__ Cin\n"
    "#define EPI_FRESH(v, i) (ALPHA * (v) + BETA * __ldg(Cin + (i)))\n"
    "#else\n"
    "#define CIN_PARAM\n"
    "#define EPI_FRESH(v, i) (ALPHA * (v)) /* beta 0: C is never read */\n"
    "#endif\n"
    "#if SPLITK > 1\n"
    "/* serial split-K: a later slice adds its partial sum to what the earlier ones left in C (read past L1) */\n"
    "#define EPI(v, i) (slice > 0 ? ALPHA * (v) + __ldcg(C + (i)) : EPI_FRESH(v, i))\n"
    "#else\n"
    "#define EPI(v, i) EPI_FRESH(v, i)\n"
    "#endif\n"
    "#if BATCH > 1 && HAS_BETA\n"
    "#define BATCH_CIN() Cin += (size_t)z * STRIDE_C;\n"
    "#else\n"
    "#define BATCH_CIN()\n"
    "#endif\n"
    "#if BATCH > 1 || SPLITK > 1\n"
    "#define BATCH_SLICE() const int z = blockIdx.z / SPLITK, slice = blockIdx.z % SPLITK; \\\n"
    "    A += (size_t)z * STRIDE_A; B += (size_t)z * STRIDE_B; C += (size_t)z * STRIDE_C; BATCH_CIN() \\\n"
    "    (void)slice;\n"
    "#else\n"
    "#define BATCH_SLICE() const int z = 0, slice = 0; (void)z; (void)slice;\n"
    "#endif\n"
    "\n";

int cut_gemm_extra_bufs(const cut_gemm *g) { return cut_gemm_cin_buf(g) >= 0 ? 1 : 0; }
