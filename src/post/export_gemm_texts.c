/* cutune — export of tuned GEMMs: the generated texts around the kernels (a launcher per kernel that encodes the TMA
 * maps where the kernel takes them and passes Cin after C when the GEMM reads C, and CMakeLists.txt). The driver is
 * export_gemm_driver.c's. */
#include "cutune/export.h"
#include "cutune/gemm_space.h"

#include <stdio.h>
#include <string.h>

/* CUtensorMapDataType of a TMA map of k (cuda.h values: FLOAT16 6, FLOAT32 7, BFLOAT16 9). */
static const char *tma_dtype(const cut_export_gemm_kernel *k, const cut_tma_desc *t)
{
    if (t->elem_bytes == 4)
        return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    return k->gemm.dtype == CUT_DT_BF16 ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
}

static const char *tma_swizzle(int bytes)
{
    switch (bytes) {
    case 32: return "CU_TENSOR_MAP_SWIZZLE_32B";
    case 64: return "CU_TENSOR_MAP_SWIZZLE_64B";
    case 128: return "CU_TENSOR_MAP_SWIZZLE_128B";
    default: return "CU_TENSOR_MAP_SWIZZLE_NONE";
    }
}

void cut_export_gemm_params(const cut_gemm *g, char *buf, size_t n)
{
    snprintf(buf, n, "const void *A, const void *B, float *C%s", cut_gemm_cin_buf(g) >= 0 ? ", const float *Cin" : "");
}

int cut_export_gemm_module_state(const cut_export_gemm_kernel *k, char *what, size_t n)
{
    const cut_gemm_template *t = cut_gemm_template_get(k->sched.tpl);
    int splitk = 1;
    for (int i = 0; t && i < t->nknobs; i++)
        if (!strcmp(t->knob_name(i), "splitk"))
            splitk = k->sched.k[i];
    if (splitk <= 1)
        return 0;
    if (what)
        snprintf(what, n, "%s",
                 !strcmp(t->name, "mma") ? "a turn counter per output tile (cut_splitk_turn)"
                 : !strcmp(t->name, "gemv") || !strcmp(t->name, "wgmma")
                     ? "partial sums and a counter per output tile (cut_ws, cut_cnt)"
                     : "its split-K state");
    return 1;
}

/* The comment lines of a launcher that say what its arguments hold: layout, storage type, batch, alpha and beta,
 * and the module state of a split-K kernel. */
static void launcher_doc(cut_buf *b, const cut_export_gemm_kernel *k)
{
    const cut_gemm *g = &k->gemm;
    static const char *const store[CUT_DT_COUNT] = {"float", "float", "the bits of __half",
                                                    "the bits of __nv_bfloat16"};
    cut_buf_printf(b,
                   "// layout %s: A is %s, B is %s, C is M x N fp32, all row-major;\n"
                   "// A and B in the dtype's storage type (%s).\n",
                   cut_gemm_layout_name(g->layout), cut_gemm_a_trans(g) ? "K x M (op(A) = A^T)" : "M x K",
                   cut_gemm_b_trans(g) ? "N x K (op(B) = B^T)" : "K x N",
                   g->dtype >= 0 && g->dtype < CUT_DT_COUNT ? store[g->dtype] : "?");
    if (cut_gemm_batch(g) > 1)
        cut_buf_printf(b, "// batch %d: each operand's matrices packed one after the other (strides %zu, %zu and %zu "
                          "elements of A, B and\n// C; Cin as C); the grid's %s.\n",
                       cut_gemm_batch(g), cut_gemm_stride(g, 'A'), cut_gemm_stride(g, 'B'), cut_gemm_stride(g, 'C'),
                       !k->ks.ntma          ? "z runs over the batch (and split-K slices)"
                       : k->ks.grid[1] == 1 ? "blocks walk the tiles of every plane (a persistent kernel; A and B: "
                                              "planes of 3-D TMA maps)"
                                            : "y runs over the batch (A and B: planes of 3-D TMA maps)");
    if (cut_gemm_beta(g) != 0.0)
        cut_buf_printf(b, "// C = %.9g * op(A) op(B) + %.9g * Cin: Cin (fp32, as C) holds C's old contents, an input "
                          "the kernel reads\n// and never writes; it must not overlap C (the kernel's pointers are "
                          "__restrict__).\n",
                       cut_gemm_alpha(g), cut_gemm_beta(g));
    else if (cut_gemm_alpha(g) != 1.0)
        cut_buf_printf(b, "// C = %.9g * op(A) op(B) (beta 0: C's old contents are never read).\n", cut_gemm_alpha(g));
    char what[128];
    if (cut_export_gemm_module_state(k, what, sizeof what))
        cut_buf_printf(b, "// One launch at a time: this split-K kernel keeps %s\n"
                          "// in module variables (each launch leaves them as it found them). Two launches of it in "
                          "flight at once\n// (two streams, two host threads) corrupt each other's results; serialise "
                          "them.\n",
                       what);
}

/* The template that launches a kernel of the mma or SIMT element type T (deduced from its signature) through the
 * launcher's void pointers. */
static void launcher_typed_text(cut_buf *b, int cin)
{
    cut_buf_printf(b,
                   "template <typename T>\n"
                   "static void launch_typed(void (*f)(const T *, const T *, float *%s), dim3 grid, dim3 block, "
                   "size_t smem,\n"
                   "                         cudaStream_t s, const void *A, const void *B, float *C%s)\n"
                   "{\n"
                   "    f<<<grid, block, smem, s>>>(static_cast<const T *>(A), static_cast<const T *>(B), C%s);\n"
                   "}\n\n",
                   cin ? ", const float *" : "", cin ? ", const float *Cin" : "", cin ? ", Cin" : "");
}

/* The launch of a kernel that reads A and B through TMA maps (wgmma). A strided batch makes each map 3-D, one plane
 * a matrix (planes, plane_bytes), as cutune's worker encodes it (src/measure/tma.c); Cin follows C when the kernel
 * reads it (beta != 0). */
static void launcher_tma_text(cut_buf *b, const cut_export_gemm_kernel *k, const char *ns, const char *qualified,
                              int cin)
{
    cut_buf_printf(b, "    // The kernel reads A and B through TMA maps, encoded for these pointers on every call (a "
                      "few\n    // microseconds on the host): cutune's worker encodes them the same way%s.\n"
                      "    %s::cut_tmap maps[2];\n",
                   k->ks.tma[0].planes ? " (3-D: the\n    // batch as the outer dimension, one plane a matrix)" : "",
                   ns);
    for (int i = 0; i < 2; i++) {
        const cut_tma_desc *d = &k->ks.tma[i];
        cut_buf_printf(b, "    {\n        CUtensorMap m;\n");
        if (d->planes)
            cut_buf_printf(b,
                           "        const cuuint64_t dims[3] = {%lluull, %lluull, %lluull}, strides[2] = {%lluull, "
                           "%lluull};\n"
                           "        const cuuint32_t box[3] = {%uu, %uu, 1u}, estr[3] = {1, 1, 1};\n",
                           d->dims[0], d->dims[1], d->planes, d->row_bytes, d->plane_bytes, d->box[0], d->box[1]);
        else
            cut_buf_printf(b,
                           "        const cuuint64_t dims[2] = {%lluull, %lluull}, strides[1] = {%lluull};\n"
                           "        const cuuint32_t box[2] = {%uu, %uu}, estr[2] = {1, 1};\n",
                           d->dims[0], d->dims[1], d->row_bytes, d->box[0], d->box[1]);
        cut_buf_printf(b,
                       "        if (cuTensorMapEncodeTiled(&m, %s, %d, const_cast<void *>(%s), dims, strides, box, "
                       "estr,\n"
                       "                                   CU_TENSOR_MAP_INTERLEAVE_NONE, %s, "
                       "CU_TENSOR_MAP_L2_PROMOTION_L2_128B,\n"
                       "                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)\n"
                       "            return (int)cudaErrorInvalidValue;\n"
                       "        static_assert(sizeof m == sizeof maps[%d], \"a TMA map is 128 bytes\");\n"
                       "        std::memcpy(&maps[%d], &m, sizeof m);\n"
                       "    }\n",
                       tma_dtype(k, d), d->planes ? 3 : 2, d->operand == 0 ? "A" : "B", tma_swizzle(d->swizzle), i, i);
    }
    cut_buf_printf(b, "    %s<<<grid, block, smem, s>>>(maps[0], maps[1], C%s);\n", qualified, cin ? ", Cin" : "");
}

void cut_export_gemm_launcher_text(cut_buf *b, const cut_export_gemm_kernel *k)
{
    char name[128], desc[512], params[128];
    cut_gemm_name(&k->gemm, name, sizeof name);
    cut_gemm_sched_describe(&k->sched, desc, sizeof desc);
    cut_export_gemm_params(&k->gemm, params, sizeof params);
    const int cin = cut_gemm_cin_buf(&k->gemm) >= 0;
    const unsigned *g = k->ks.grid, *t = k->ks.block;
    cut_buf_printf(b,
                   "// Generated by cutune %s — do not edit.\n"
                   "// Host launcher of kernel%d.cuh: %s (GEMM %d), kernel %d.\n"
                   "// schedule: %s\n",
                   CUTUNE_VERSION, k->kernel_id, name, k->gemm_id, k->kernel_id, desc);
    launcher_doc(b, k);
    cut_buf_printf(b,
                   "#include <cuda.h>\n#include <cuda_runtime.h>\n#include <cstring>\n\n"
                   "#include \"../../cutune_kernels.h\"\n"
                   "#include \"kernel%d.cuh\"\n\n",
                   k->kernel_id);
    if (k->ks.ntma != 2)
        launcher_typed_text(b, cin);
    cut_buf_printf(b,
                   "// Returns 0, or the cudaError_t of the launch (a TMA map the driver refuses: "
                   "cudaErrorInvalidValue).\n"
                   "int launch_gemm%d_k%d(%s, cudaStream_t s)\n"
                   "{\n"
                   "    const dim3 grid(%uu, %uu, %uu), block(%uu, %uu, %uu);\n"
                   "    const size_t smem = %uu;\n",
                   k->gemm_id, k->kernel_id, params, g[0], g[1], g[2], t[0], t[1], t[2], k->ks.smem_dynamic);
    char ns[64], qualified[160];
    snprintf(ns, sizeof ns, "cut_gemm%d_k%d", k->gemm_id, k->kernel_id);
    snprintf(qualified, sizeof qualified, "%s::%s", ns, k->ks.entry);
    cut_export_smem_optin_text(b, &k->ks, qualified);
    if (k->ks.ntma == 2)
        launcher_tma_text(b, k, ns, qualified, cin);
    else /* the element type is the kernel's own (float, or the 16-bit pattern type of the mma and gemv templates):
          * deduced from the kernel's signature, so the launcher never names it */
        cut_buf_printf(b, "    launch_typed(%s, grid, block, smem, s, A, B, C%s);\n", qualified, cin ? ", Cin" : "");
    cut_buf_printf(b, "    return (int)cudaGetLastError();\n}\n");
}

void cut_export_gemm_cmake_text(cut_buf *b, const cut_export_gemm_set *set, const char *arch)
{
    int need_a = 0;
    for (int i = 0; i < set->n; i++)
        need_a |= set->k[i].ks.arch_a;
    /* wgmma and setmaxnreg exist only on the architecture-specific target (sm_90a). */
    const size_t al = strlen(arch);
    const char *suffix = need_a && al > 0 && arch[al - 1] != 'a' ? "a" : "";
    cut_buf_printf(b,
                   "# Generated by cutune %s — do not edit. Builds the measurement driver of the exported GEMMs with\n"
                   "# nvcc alone (no cutune headers or libraries; the CUDA driver library for the TMA maps):\n"
                   "#   cmake -S kernels/gemm -B build-gemm && cmake --build build-gemm -j && build-gemm/gemm_driver\n"
                   "cmake_minimum_required(VERSION 3.18)\n"
                   "# The architecture the kernels were tuned for (a target property, so that it also holds when this\n"
                   "# folder is added to a parent project); override with -DCUTUNE_GEMM_ARCH=...\n"
                   "set(CUTUNE_GEMM_ARCH %s%s CACHE STRING \"CUDA architecture of the exported GEMMs\")\n"
                   "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
                   "  set(CMAKE_CUDA_ARCHITECTURES ${CUTUNE_GEMM_ARCH})\n"
                   "endif()\n"
                   "project(cutune_gemm_kernels LANGUAGES CUDA CXX)\n"
                   "if(NOT CMAKE_BUILD_TYPE)\n"
                   "  set(CMAKE_BUILD_TYPE Release)\n"
                   "endif()\n"
                   "set(CMAKE_CUDA_STANDARD 17)\n"
                   "set(CMAKE_CUDA_STANDARD_REQUIRED ON)\n"
                   "find_package(CUDAToolkit REQUIRED)\n"
                   "# Every GEMM's launcher as one library (declared in ../cutune_kernels.h).\n"
                   "add_library(cutune_gemm_kernels STATIC\n",
                   CUTUNE_VERSION, arch, suffix);
    for (int i = 0; i < set->n; i++) {
        char name[128];
        cut_gemm_name(&set->k[i].gemm, name, sizeof name);
        cut_buf_printf(b, "  %s/kernel%d.cu\n", name, set->k[i].kernel_id);
    }
    cut_buf_printf(b, ")\nset_target_properties(cutune_gemm_kernels PROPERTIES CUDA_ARCHITECTURES ${CUTUNE_GEMM_ARCH}\n"
                      "                      POSITION_INDEPENDENT_CODE ON)\n"
                      "target_include_directories(cutune_gemm_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/..)\n"
                      "target_compile_definitions(cutune_gemm_kernels PRIVATE NDEBUG)\n"
                      "target_link_libraries(cutune_gemm_kernels PUBLIC CUDA::cuda_driver)\n"
                      "add_executable(gemm_driver driver.cu)\n"
                      "set_target_properties(gemm_driver PROPERTIES CUDA_ARCHITECTURES ${CUTUNE_GEMM_ARCH})\n"
                      "target_compile_definitions(gemm_driver PRIVATE NDEBUG)\n"
                      "target_link_libraries(gemm_driver PRIVATE cutune_gemm_kernels)\n");
}
