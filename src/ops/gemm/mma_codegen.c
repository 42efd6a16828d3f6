/* cutune — code generator of the "mma" GEMM template (src/ops/gemm/mma.c holds the space).
 *
 * C[M][N] (fp32) = A[M][K] · B with B[K][N] (NN) or B[N][K] (NT, C = A·Bᵀ); A and B fp16, bf16 (16-bit storage)
 * or tf32 (float storage, rounded with cvt.rna.tf32.f32 in the kernel); sizes baked in. Needs sm_80+ (plain
 * sm_80/sm_90 PTX; no architecture-specific features).
 *
 * Block: (BM/WM) x (BN/WN) warps; block (bx, by) computes the BM x BN tile of C at the tile coordinates that
 * the rasterisation gives it (GROUP_M > 1: blocks walk GROUP_M tile rows column by column, so that consecutive
 * blocks share A and B tiles in L2). Warp (wm, wn) computes a WM x WN sub-tile as (WM/16) x (WN/8) mma tiles:
 * mma.sync.aligned.m16n8k16 (fp16, bf16) or m16n8k8 (tf32), fp32 accumulate, all accumulators in registers.
 *
 * Pipeline: STAGES shared-memory buffers, each one k tile of A (BM rows of BK elements, k contiguous) and of B
 * (NT: BN rows of BK, k contiguous; NN: BK rows of BN, n contiguous: B's own layout, no transposition on the
 * way). Global -> shared with cp.async (CPW = 16: cp.async.cg, bypassing L1; 8 or 4: cp.async.ca), one commit
 * group per k tile; the prologue issues tiles 0..STAGES-2; iteration kt issues tile kt+STAGES-1 into the buffer
 * that tile kt-1 left, computes tile kt, then waits (cp.async.wait_group STAGES-2) for tile kt+1 and passes the
 * block's one __syncthreads of the iteration. Chunks past M, N or K are copied with src-size 0 (zero-fill), so
 * tails need no branches in the compute loop; the source address is then the matrix base (never read).
 *
 * Shared -> registers per k step of 16 (8 for tf32) elements, i.e. two 16-byte chunks of a row:
 *   A: ldmatrix.x4 per m16 tile (the four 8x8 b16 matrices are rows 0-7/8-15 x chunk 0/1: a0..a3). For tf32 the
 *      same instruction works because an 8x8 b16 matrix is an 8x4 tf32 one and thread t receives element
 *      (t/4, t%4): exactly a0..a3 of m16n8k8.tf32.
 *   B, NT: ldmatrix.x4 per pair of n8 tiles (rows n 0-7 x chunks 0/1, then n 8-15): b0, b1 of both; also tf32.
 *   B, NN, 16-bit: ldmatrix.x4.trans per pair of n8 tiles (rows k 0-7/8-15 x n chunk 0/1).
 *   B, NN, tf32: ldmatrix cannot transpose 32-bit elements, so each thread reads its two elements with plain
 *      32-bit LDS (b0 = B[k0+t][n0+g], b1 = B[k0+t+4][n0+g]); correct, with some bank conflicts.
 * The fragments of k step kk+1 are loaded before the mmas of step kk (two register buffers).
 *
 * Swizzle (SWIZZLE = 1): rows are split into 16-byte chunks; chunk c of row r is stored at chunk
 * c ^ (r % 8) (rows of >= 8 chunks) or c ^ ((r / 2) % 4) (rows of 4 chunks, two per 128-byte line): the eight rows
 * an ldmatrix phase reads at one logical chunk, and the eight chunks eight consecutive loader threads store,
 * fall into eight different 16-byte bank groups (cut_gemm_mma_swz in src/ops/gemm/mma.h; tests/test_gemm_mma.c checks
 * it). SWIZZLE = 0 keeps plain rows (up to 8-way conflicts) so that the model can learn the difference.
 *
 * Epilogue: each thread holds pairs of adjacent columns (c0 c1, c2 c3 of the mma's C fragment): float2 stores
 * when N is even, else guarded scalar stores; rows past M and columns past N are skipped.
 *
 * What the knobs trade. BM, BN: reuse of every loaded element (global traffic ~ 1/BM + 1/BN per FMA) against the
 * number of blocks (waves over 132 SMs) and shared memory. BK: fewer barriers and larger cp.async batches per k
 * tile against shared memory per stage. WM, WN: ldmatrix per mma (A loads scale with WM/16, B with WN/8 per k
 * step) against accumulator registers (WM*WN/32) and warps per block. STAGES: latency hidden by tiles in flight
 * against shared memory (fewer blocks per SM). SWIZZLE: bank conflicts. GROUP_M: L2 hit rate of A and B across
 * concurrently running blocks. CPW: 16-byte copies where the rows allow, narrower ones otherwise. */
#include "codegen/emit.h"
#include "ops/gemm/simt.h"
#include "ops/gemm/mma.h"

#include "cutune/util.h"

#include <stdio.h>
#include <string.h>

static const char mma_head[] =
    "#if DT == 2\n"
    "typedef float T;            /* tf32: fp32 storage, rounded to tf32 in registers */\n"
    "#else\n"
    "typedef unsigned short T;   /* the bits of __half (DT 0) or __nv_bfloat16 (DT 1): moved, never computed on */\n"
    "#endif\n"
    "#define E ((int)sizeof(T))\n"
    "#define KSTEP (DT == 2 ? 8 : 16)\n"
    "#define KSTEPS (BK / KSTEP)\n"
    "#define WARPS_M (BM / WM)\n"
    "#define WARPS_N (BN / WN)\n"
    "#define NTHR (WARPS_M * WARPS_N * 32)\n"
    "#define MI (WM / 16)\n"
    "#define NI (WN / 8)\n"
    "#define TILES_M ((M + BM - 1) / BM)\n"
    "#define TILES_N ((N + BN - 1) / BN)\n"
    "#define KT ((K + BK - 1) / BK)\n"
    "#define A_ROWB (BK * E)\n"
    "#define A_CPR (A_ROWB / 16)\n"
    "#define A_BYTES (BM * A_ROWB)\n"
    "#if LAYOUT_NT\n"
    "#define B_ROWS BN\n"
    "#define B_ROWB (BK * E)\n"
    "#else\n"
    "#define B_ROWS BK\n"
    "#define B_ROWB (BN * E)\n"
    "#endif\n"
    "#define B_CPR (B_ROWB / 16)\n"
    "#define STAGE_BYTES (A_BYTES + B_ROWS * B_ROWB)\n"
    "#define A_UPR (A_ROWB / CPW)            /* cp.async units per row of A */\n"
    "#define A_UNITS (BM * A_UPR)\n"
    "#define A_ITERS ((A_UNITS + NTHR - 1) / NTHR)\n"
    "#define B_UPR (B_ROWB / CPW)\n"
    "#define B_UNITS (B_ROWS * B_UPR)\n"
    "#define B_ITERS ((B_UNITS + NTHR - 1) / NTHR)\n"
    "\n"
    "/* physical 16-byte chunk of logical chunk c in row r of a tile with CPR chunks per row (cut_gemm_mma_swz) */\n"
    "__device__ __forceinline__ int swz(int r, int c, int cpr)\n"
    "{\n"
    "#if SWIZZLE\n"
    "    return cpr >= 8 ? (c ^ (r & 7)) : (c ^ ((r >> 1) & 3));\n"
    "#else\n"
    "    return c;\n"
    "#endif\n"
    "}\n"
    "\n"
    "#ifdef CUT_EMU\n"
    "/* Host emulation (tests/test_gemm_mma.c): shared memory is a static array addressed by offsets, and each PTX\n"
    " * instruction is replaced by its documented semantics, lanes exchanging operands through per-thread slots\n"
    " * between two __syncwarp()s. cp.async is a synchronous copy, so the pipeline's ordering is not exercised. */\n"
    "__shared__ __align__(128) unsigned char smem[STAGES * STAGE_BYTES];\n"
    "__shared__ unsigned emu_x[NTHR][6];\n"
    "__device__ __forceinline__ void cp_async(unsigned dst, const void *src, int bytes)\n"
    "{\n"
    "    for (int i = 0; i < CPW; i++)\n"
    "        smem[dst + i] = bytes ? ((const unsigned char *)src)[i] : 0;\n"
    "}\n"
    "__device__ __forceinline__ void cp_async_commit() {}\n"
    "template <int n> __device__ __forceinline__ void cp_async_wait() {}\n"
    "__device__ __forceinline__ unsigned emu_u32(unsigned addr) { unsigned v; __builtin_memcpy(&v, smem + addr, 4); return v; }\n"
    "__device__ __forceinline__ unsigned emu_u16(unsigned addr) { unsigned short v; __builtin_memcpy(&v, smem + addr, 2); return (unsigned)v; }\n"
    "/* lanes 8j..8j+7 give the row addresses of matrix j; lane l gets row l/4, bytes 4*(l%4).. of each (trans: the\n"
    " * 16-bit elements (2*(l%4), l/4) and (2*(l%4)+1, l/4)) */\n"
    "__device__ __forceinline__ void emu_ldsm(unsigned *r, unsigned addr, bool trans)\n"
    "{\n"
    "    const int tid = threadIdx.x, l = tid & 31, w0 = tid - l;\n"
    "    emu_x[tid][0] = addr;\n"
    "    __syncwarp();\n"
    "    for (int j = 0; j < 4; j++) {\n"
    "        if (!trans)\n"
    "            r[j] = emu_u32(emu_x[w0 + 8 * j + l / 4][0] + 4 * (l % 4));\n"
    "        else\n"
    "            r[j] = emu_u16(emu_x[w0 + 8 * j + 2 * (l % 4)][0] + 2 * (l / 4)) |\n"
    "                   emu_u16(emu_x[w0 + 8 * j + 2 * (l % 4) + 1][0] + 2 * (l / 4)) << 16u;\n"
    "    }\n"
    "    __syncwarp();\n"
    "}\n"
    "__device__ __forceinline__ void ldsm_x4(unsigned *r, unsigned addr) { emu_ldsm(r, addr, false); }\n"
    "__device__ __forceinline__ void ldsm_x4_trans(unsigned *r, unsigned addr) { emu_ldsm(r, addr, true); }\n"
    "__device__ __forceinline__ unsigned lds32(unsigned addr) { return emu_u32(addr); }\n"
    "__device__ __forceinline__ unsigned to_tf32(unsigned x) /* cvt.rna: nearest, ties away from zero */\n"
    "{\n"
    "    return ((x & 0x7f800000u) == 0x7f800000u) ? x : (x + 0x1000u) & 0xffffe000u;\n"
    "}\n"
    "__device__ __forceinline__ float emu_val(unsigned reg, int half)\n"
    "{\n"
    "#if DT == 2\n"
    "    return __uint_as_float(reg);\n"
    "#else\n"
    "    const unsigned h = half ? reg >> 16 : reg & 0xffffu;\n"
    "#if DT == 1\n"
    "    return __uint_as_float(h << 16);\n"
    "#else\n"
    "    const unsigned sg = h >> 15, ex = (h >> 10) & 31, mt = h & 1023;\n"
    "    float v = ex == 0 ? __builtin_ldexpf((float)mt, -24)\n"
    "              : ex == 31 ? (mt ? __builtin_nanf(\"\") : __builtin_inff()) : __builtin_ldexpf((float)(mt | 1024), (int)ex - 25);\n"
    "    return sg ? -v : v;\n"
    "#endif\n"
    "#endif\n"
    "}\n"
    "/* d (rows g, g+8; columns 2t, 2t+1) += A(16 x KSTEP) B(KSTEP x 8) from the warp's fragments */\n"
    "__device__ __forceinline__ void mma(float *d, const unsigned *a, const unsigned *b)\n"
    "{\n"
    "    const int tid = threadIdx.x, l = tid & 31, w0 = tid - l;\n"
    "    for (int j = 0; j < 4; j++)\n"
    "        emu_x[tid][j] = a[j];\n"
    "    emu_x[tid][4] = b[0], emu_x[tid][5] = b[1];\n"
    "    __syncwarp();\n"
    "    for (int v = 0; v < 4; v++) {\n"
    "        const int row = l / 4 + (v >= 2 ? 8 : 0), col = 2 * (l % 4) + (v & 1);\n"
    "        float sum = 0.0f;\n"
    "        for (int k = 0; k < KSTEP; k++) {\n"
    "#if DT == 2\n"
    "            const float x = emu_val(emu_x[w0 + (row % 8) * 4 + k % 4][(row >= 8) + 2 * (k >= 4)], 0);\n"
    "            const float y = emu_val(emu_x[w0 + col * 4 + k % 4][4 + (k >= 4)], 0);\n"
    "#else\n"
    "            const float x = emu_val(emu_x[w0 + (row % 8) * 4 + (k % 8) / 2][(row >= 8) + 2 * (k >= 8)], k % 2);\n"
    "            const float y = emu_val(emu_x[w0 + col * 4 + (k % 8) / 2][4 + (k >= 8)], k % 2);\n"
    "#endif\n"
    "            sum += x * y;\n"
    "        }\n"
    "        d[v] += sum;\n"
    "    }\n"
    "    __syncwarp();\n"
    "}\n"
    "#else\n"
    "/* copies CPW bytes (bytes == CPW) or zero-fills them (bytes == 0) */\n"
    "__device__ __forceinline__ void cp_async(unsigned dst, const void *src, int bytes)\n"
    "{\n"
    "#if CPW == 16\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(dst), \"l\"(src), \"r\"(bytes) : \"memory\");\n"
    "#else\n"
    "    asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2, %3;\\n\" :: \"r\"(dst), \"l\"(src), \"n\"(CPW), \"r\"(bytes) : \"memory\");\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void cp_async_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n"
    "template <int n> __device__ __forceinline__ void cp_async_wait()\n"
    "{\n"
    "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(n) : \"memory\");\n"
    "}\n"
    "\n"
    "__device__ __forceinline__ void ldsm_x4(unsigned *r, unsigned addr)\n"
    "{\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(addr) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void ldsm_x4_trans(unsigned *r, unsigned addr)\n"
    "{\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(addr) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ unsigned lds32(unsigned addr)\n"
    "{\n"
    "    unsigned v;\n"
    "    asm volatile(\"ld.shared.b32 %0, [%1];\\n\" : \"=r\"(v) : \"r\"(addr) : \"memory\");\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ unsigned to_tf32(unsigned x)\n"
    "{\n"
    "    unsigned y;\n"
    "    asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : \"=r\"(y) : \"f\"(__uint_as_float(x)));\n"
    "    return y;\n"
    "}\n"
    "\n"
    "__device__ __forceinline__ void mma(float *d, const unsigned *a, const unsigned *b)\n"
    "{\n"
    "#if DT == 2\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 \"\n"
    "#elif DT == 1\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "#else\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "#endif\n"
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "\n"
    "#endif /* CUT_EMU */\n"
    "\n"
    "/* issues the cp.async copies of k tile kt into the stage at shared address st */\n"
    "__device__ __forceinline__ void load_tile(unsigned st, const T *__restrict__ A, const T *__restrict__ B,\n"
    "                                          int m0, int n0, int kt, int tid)\n"
    "{\n"
    "    const int k0 = kt * BK;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < A_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (A_UNITS % NTHR == 0 || u < A_UNITS) {\n"
    "            const int r = u / A_UPR, cb = (u % A_UPR) * CPW; /* row, byte column */\n"
    "            const int m = m0 + r, k = k0 + cb / E;\n"
    "            const bool ok = (M % BM == 0 || m < M) && (K % BK == 0 || k < K);\n"
    "            const T *src = ok ? A + (size_t)m * K + k : A;\n"
    "            cp_async(st + r * A_ROWB + swz(r, cb >> 4, A_CPR) * 16 + (cb & 15), src, ok ? CPW : 0);\n"
    "        }\n"
    "    }\n"
    "    st += A_BYTES;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < B_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (B_UNITS % NTHR == 0 || u < B_UNITS) {\n"
    "            const int r = u / B_UPR, cb = (u % B_UPR) * CPW;\n"
    "#if LAYOUT_NT\n"
    "            const int n = n0 + r, k = k0 + cb / E;\n"
    "            const bool ok = (N % BN == 0 || n < N) && (K % BK == 0 || k < K);\n"
    "            const T *src = ok ? B + (size_t)n * K + k : B;\n"
    "#else\n"
    "            const int k = k0 + r, n = n0 + cb / E;\n"
    "            const bool ok = (K % BK == 0 || k < K) && (N % BN == 0 || n < N);\n"
    "            const T *src = ok ? B + (size_t)k * N + n : B;\n"
    "#endif\n"
    "            cp_async(st + r * B_ROWB + swz(r, cb >> 4, B_CPR) * 16 + (cb & 15), src, ok ? CPW : 0);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "/* fragments of k step kk of the stage at sa (A) / sb (B) for warp (wm, wn) */\n"
    "__device__ __forceinline__ void load_frags(unsigned (*af)[4], unsigned (*bf)[2], unsigned sa, unsigned sb,\n"
    "                                           int kk, int wm, int wn, int lane)\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int mi = 0; mi < MI; mi++) {\n"
    "        const int r = wm * WM + mi * 16 + (lane & 15), c = kk * 2 + (lane >> 4);\n"
    "        ldsm_x4(af[mi], sa + r * A_ROWB + swz(r, c, A_CPR) * 16);\n"
    "#if DT == 2\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 4; j++)\n"
    "            af[mi][j] = to_tf32(af[mi][j]);\n"
    "#endif\n"
    "    }\n"
    "#if LAYOUT_NT\n"
    "#pragma unroll\n"
    "    for (int nj = 0; nj < NI / 2; nj++) {\n"
    "        const int r = wn * WN + nj * 16 + (lane & 7) + ((lane >> 4) << 3), c = kk * 2 + ((lane >> 3) & 1);\n"
    "        unsigned t[4];\n"
    "        ldsm_x4(t, sb + r * B_ROWB + swz(r, c, B_CPR) * 16);\n"
    "        bf[2 * nj][0] = t[0], bf[2 * nj][1] = t[1], bf[2 * nj + 1][0] = t[2], bf[2 * nj + 1][1] = t[3];\n"
    "    }\n"
    "#elif DT != 2\n"
    "#pragma unroll\n"
    "    for (int nj = 0; nj < NI / 2; nj++) {\n"
    "        const int r = kk * 16 + (lane & 15), c = (wn * WN + nj * 16) / 8 + (lane >> 4);\n"
    "        unsigned t[4];\n"
    "        ldsm_x4_trans(t, sb + r * B_ROWB + swz(r, c, B_CPR) * 16);\n"
    "        bf[2 * nj][0] = t[0], bf[2 * nj][1] = t[1], bf[2 * nj + 1][0] = t[2], bf[2 * nj + 1][1] = t[3];\n"
    "    }\n"
    "#else\n"
    "    /* NN tf32: b0 = B[kk*8 + t][n], b1 = B[kk*8 + t + 4][n] with n = wn*WN + ni*8 + g */\n"
    "#pragma unroll\n"
    "    for (int ni = 0; ni < NI; ni++) {\n"
    "        const int n = wn * WN + ni * 8 + (lane >> 2), r = kk * 8 + (lane & 3);\n"
    "        bf[ni][0] = lds32(sb + r * B_ROWB + swz(r, n >> 2, B_CPR) * 16 + (n & 3) * 4);\n"
    "        bf[ni][1] = lds32(sb + (r + 4) * B_ROWB + swz(r + 4, n >> 2, B_CPR) * 16 + (n & 3) * 4);\n"
    "    }\n"
    "#endif\n"
    "#if DT == 2\n"
    "#pragma unroll\n"
    "    for (int ni = 0; ni < NI; ni++)\n"
    "        bf[ni][0] = to_tf32(bf[ni][0]), bf[ni][1] = to_tf32(bf[ni][1]);\n"
    "#endif\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NTHR, 1)\n"
    "cut_gemm(const T *__restrict__ A, const T *__restrict__ B, float *__restrict__ C)\n"
    "{\n"
    "#ifdef CUT_EMU\n"
    "    const unsigned sbase = 0;\n"
    "#else\n"
    "    extern __shared__ __align__(128) unsigned char smem[];\n"
    "    const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);\n"
    "#endif\n"
    "    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    "    const int wm = warp / WARPS_N, wn = warp % WARPS_N;\n"
    "#if GROUP_M > 1\n"
    "    /* GROUP_M tile rows at a time, walked column by column */\n"
    "    const int pid = blockIdx.y * TILES_N + blockIdx.x;\n"
    "    const int first = pid / (GROUP_M * TILES_N) * GROUP_M, in_group = pid % (GROUP_M * TILES_N);\n"
    "    const int gsize = TILES_M - first < GROUP_M ? TILES_M - first : GROUP_M;\n"
    "    const int tm = first + in_group % gsize, tn = in_group / gsize;\n"
    "#else\n"
    "    const int tm = blockIdx.y, tn = blockIdx.x;\n"
    "#endif\n"
    "    const int m0 = tm * BM, n0 = tn * BN;\n"
    "\n"
    "    float acc[MI][NI][4];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < NI; j++)\n"
    "#pragma unroll\n"
    "            for (int v = 0; v < 4; v++)\n"
    "                acc[i][j][v] = 0.0f;\n"
    "    unsigned af[2][MI][4], bf[2][NI][2];\n"
    "\n"
    "    /* prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past KT) */\n"
    "#pragma unroll\n"
    "    for (int s = 0; s < STAGES - 1; s++) {\n"
    "        if (s < KT)\n"
    "            load_tile(sbase + s * STAGE_BYTES, A, B, m0, n0, s, tid);\n"
    "        cp_async_commit();\n"
    "    }\n"
    "    cp_async_wait<STAGES - 2>();\n"
    "    __syncthreads();\n"
    "\n"
    "    int rs = 0, ws = STAGES - 1; /* stage holding tile kt; stage to fill with tile kt + STAGES - 1 */\n"
    "    for (int kt = 0; kt < KT; kt++) {\n"
    "        /* ws held tile kt-1, which every thread finished before the barrier that ended the last iteration */\n"
    "        if (kt + STAGES - 1 < KT)\n"
    "            load_tile(sbase + ws * STAGE_BYTES, A, B, m0, n0, kt + STAGES - 1, tid);\n"
    "        cp_async_commit();\n"
    "        const unsigned sa = sbase + rs * STAGE_BYTES, sb = sa + A_BYTES;\n"
    "        load_frags(af[0], bf[0], sa, sb, 0, wm, wn, lane);\n"
    "#pragma unroll\n"
    "        for (int kk = 0; kk < KSTEPS; kk++) {\n"
    "            if (kk + 1 < KSTEPS)\n"
    "                load_frags(af[(kk + 1) & 1], bf[(kk + 1) & 1], sa, sb, kk + 1, wm, wn, lane);\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < NI; j++)\n"
    "                    mma(acc[i][j], af[kk & 1][i], bf[kk & 1][j]);\n"
    "        }\n"
    "        /* tile kt+1 has landed (this thread's copies); the barrier publishes it and frees stage rs */\n"
    "        cp_async_wait<STAGES - 2>();\n"
    "        __syncthreads();\n"
    "        rs = rs + 1 == STAGES ? 0 : rs + 1;\n"
    "        ws = ws + 1 == STAGES ? 0 : ws + 1;\n"
    "    }\n"
    "\n"
    "    /* accumulators -> C: c0 c1 at (g, 2t), (g, 2t+1); c2 c3 eight rows below */\n"
    "    const int g = lane >> 2, t = lane & 3;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "        for (int h = 0; h < 2; h++) {\n"
    "            const int m = m0 + wm * WM + i * 16 + h * 8 + g;\n"
    "            if (M % BM != 0 && m >= M)\n"
    "                continue;\n"
    "            float *__restrict__ c_row = C + (size_t)m * N;\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < NI; j++) {\n"
    "                const int n = n0 + wn * WN + j * 8 + 2 * t;\n"
    "#if N % 2 == 0\n"
    "                if (N % BN == 0 || n < N)\n"
    "                    *reinterpret_cast<float2 *>(c_row + n) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);\n"
    "#else\n"
    "                if (n < N)\n"
    "                    c_row[n] = acc[i][j][2 * h];\n"
    "                if (n + 1 < N)\n"
    "                    c_row[n + 1] = acc[i][j][2 * h + 1];\n"
    "#endif\n"
    "            }\n"
    "        }\n"
    "}\n";

static void emit_defines(cut_buf *b, const cut_gemm *g, const cut_sched *s)
{
    const int *k = s->k;
    const int dt = g->dtype == CUT_DT_TF32 ? 2 : g->dtype == CUT_DT_BF16 ? 1 : 0;
    cut_buf_printf(b, "#define M %d\n#define N %d\n#define K %d\n#define LAYOUT_NT %d\n", g->m, g->n, g->k,
                   g->layout == CUT_GEMM_NT);
    cut_buf_printf(b, "#define DT %d /* 0 fp16, 1 bf16, 2 tf32 */\n", dt);
    cut_buf_printf(b, "#define BM %d\n#define BN %d\n#define BK %d\n#define WM %d\n#define WN %d\n", k[CUT_GM_BM],
                   k[CUT_GM_BN], k[CUT_GM_BK], k[CUT_GM_WM], k[CUT_GM_WN]);
    cut_buf_printf(b, "#define STAGES %d\n#define SWIZZLE %d\n#define GROUP_M %d\n#define CPW %d\n",
                   k[CUT_GM_STAGES], k[CUT_GM_SWIZZLE], k[CUT_GM_GROUP_M], k[CUT_GM_CPW]);
}

int cut_codegen_gemm_mma(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (cut_gemm_mma_check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm mma");
    cut_gemm_mma_geom gm;
    cut_gemm_mma_geometry(g, s, &gm);
    cut_buf b;
    cut_buf_init(&b);
    cut_emit_gemm_banner(&b, g, s, "cp.async pipeline -> ldmatrix -> mma.sync tensor cores (sm_80+)");
    emit_defines(&b, g, s);
    cut_buf_append(&b, mma_head, strlen(mma_head));
    out->src = b.data; /* ownership moves to out */
    snprintf(out->entry, sizeof out->entry, "cut_gemm");
    memcpy(out->grid, gm.grid, sizeof out->grid);
    out->block[0] = (unsigned)gm.threads;
    out->block[1] = out->block[2] = 1;
    out->smem_dynamic = (unsigned)gm.smem_bytes;
    out->uses_inline_ptx = 1;
    out->tol_scale = 1.0;
    out->arch_a = 0;
    out->ntma = 0;
    return 0;
}
