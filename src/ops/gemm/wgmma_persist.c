/* cutune — the wgmma GEMM's persistent kernels (issue 21, "epilogue overlap"): knob pp of src/ops/gemm/wgmma.c.
 *
 * The plain kernel launches a block a tile, and a block's epilogue (its accumulators stored to C: 128 KB of fp32 for
 * a 128 x 256 tile) leaves the tensor cores idle until the next block starts on that SM. A persistent kernel
 * launches one block an SM (pblocks = min(tiles, 132)) and walks the launch's tiles (every plane of a batch) in the
 * plain kernel's raster order: block b takes tiles b, b + G, b + 2G, ... (G = gridDim.x, any G is correct).
 *   - The producer loads the block's tiles one after another into one ring of ST stages: step q (the block's q-th k
 *     tile, over all its tiles) sits in stage q % ST, phase (q / ST) & 1, so the next tile's loads start while the
 *     consumers still compute, or store, the last one.
 *   - pp 1, cooperative: the NC consumers share each tile, as in the plain kernel (BM = NC MI 64); the producer's
 *     run-ahead overlaps the loads of tile j + 1 with tile j's epilogue.
 *   - pp 2, ping-pong (NC 2): consumer c takes the block's tiles j = c, c + 2, ... whole (BM = MI 64), so one
 *     consumer's epilogue runs while the other's wgmmas keep the tensor cores busy. Each stage has one reader, so a
 *     stage's EMPTY barrier counts 4 warps (cooperative: 4 NC). The consumers' main loops take turns: consumer c
 *     starts tile j only once the other one has issued its main loop of tile j - 1 (mbarrier TURN(c), one arrival
 *     a turn). The turns are what makes the parity waits sound: when consumer c waits on FULL for step q, every step
 *     before q has been waited for, so the stage's barrier is exactly one phase short of q's, never two.
 * A consumer passes the turn on once its main loop has issued its last wgmma (LOOP_ISSUED), before that group
 * completes, so the other's first wgmmas queue behind it.
 * The main loop is the plain kernel's (cut_wgmma_text_consumer_loop) with QS(kt) = j KT + kt as its step; with
 * WAITD 1 the loop leaves its last stage to be released after it, which a persistent kernel must (the producer
 * waits for it). The epilogue is the plain one on the tile's m0, n0 and plane (C, Cin moved by z matrices). */
#include "ops/gemm/wgmma_persist.h"

void cut_wgmma_persist_defines(cut_buf *b, int pp, unsigned tiles_x)
{
    cut_buf_printf(b, "#define PERSIST %d /* 1 cooperative, 2 ping-pong */\n", pp);
    cut_buf_printf(b, "#define TILES_X %u /* a plane's output tiles */\n", tiles_x);
    if (pp == 2)
        cut_buf_printf(b, "#define USERS 1 /* consumers that read a stage */\n"
                          "#define FIRST_J (wg - 1) /* consumer c: the block's tiles c, c + NC, ... */\n"
                          "#define J_STEP NC\n#define ROW0 0 /* a consumer's tile is its own */\n"
                          "#define TURN(c) (bars + 8u * (2 * ST + (c)))\n"
                          "/* the other consumer's turn as soon as this one's last wgmma is issued: its steps are then all\n"
                          "   waited for, and the stage still read is released only after the wait */\n"
                          "#define LOOP_ISSUED if (lt == 0) mbar_arrive(TURN(wg %% NC));\n");
    else
        cut_buf_printf(b, "#define USERS NC /* consumers that read a stage */\n#define FIRST_J 0\n#define J_STEP 1\n");
    cut_buf_printf(b, "#define QS(kt) (j * KT + (kt)) /* the block's step: k tile kt of its tile j */\n");
}

const char cut_wgmma_persist_head[] =
    "#define NTILES (TILES_X * BATCH) /* the launch's output tiles, plane by plane */\n"
    "/* tile t's first row m0 and column n0 of C and its plane z, in the plain kernel's raster (groups of GM tile\n"
    "   rows) */\n"
    "static __device__ __forceinline__ void tile_of(int t, int &m0, int &n0, int &z)\n"
    "{\n"
    "    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;\n"
    "    z = t / TILES_X;\n"
    "    const int id = t % TILES_X, group = GM * tiles_n, first = (id / group) * GM;\n"
    "    const int gsize = min(tiles_m - first, GM);\n"
    "    m0 = (first + (id % group) % gsize) * BM;\n"
    "    n0 = ((id % group) / gsize) * BN;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(THREADS, 1)\n"
    "cut_gemm(const __grid_constant__ cut_tmap tmA, const __grid_constant__ cut_tmap tmB, float *__restrict__ C\n"
    "         CIN_PARAM)\n"
    "{\n"
    "    extern __shared__ unsigned char smem_raw[];\n"
    "    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u; /* 128-byte swizzle atoms: 1024-aligned */\n"
    "    const unsigned bars = base + ST * STAGE_BYTES; /* full[ST], empty[ST], ping-pong's turn[NC] */\n"
    "    const int wg = threadIdx.x / 128, lt = threadIdx.x % 128;\n"
    "    if (threadIdx.x == 0) {\n"
    "        for (int s = 0; s < ST; s++) {\n"
    "            mbar_init(FULL(s), 1);\n"
    "            mbar_init(EMPTY(s), 4 * USERS); /* a warp of each consumer that reads the stage */\n"
    "        }\n"
    "#if PERSIST == 2\n"
    "        for (int c = 0; c < NC; c++)\n"
    "            mbar_init(TURN(c), 1);\n"
    "#endif\n"
    "        fence_mbarrier_init();\n"
    "    }\n"
    "    __syncthreads();\n"
    "\n"
    "    if (wg == 0) { /* producer: the block's tiles one after another through one ring of stages */\n"
    "        setmaxnreg_dec<40>();\n"
    "        if (lt == 0) {\n"
    "            int q = 0;\n"
    "            for (int t = (int)blockIdx.x; t < NTILES; t += (int)gridDim.x) {\n"
    "                int m0, n0, z;\n"
    "                tile_of(t, m0, n0, z);\n"
    "                (void)z;\n"
    "                for (int kt = 0; kt < KT; kt++, q++) {\n"
    "                    const int s = q % ST;\n"
    "                    if (q >= ST)\n"
    "                        mbar_wait(EMPTY(s), ((q / ST) + 1) & 1);\n"
    "                    mbar_expect_tx(FULL(s), STAGE_BYTES);\n"
    "                    LOAD_A /* rows past M: zeros (bytes still count) */\n"
    "                    LOAD_B\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "        __syncwarp();\n"
    "    } else { /* consumer wg - 1: tiles j = FIRST_J, FIRST_J + J_STEP, ... of the block */\n"
    "        setmaxnreg_inc<REGS_INC>();\n"
    "        float *const C0 = C;\n"
    "#if HAS_BETA\n"
    "        const float *const Cin0 = Cin;\n"
    "#endif\n"
    "        int mine = 0; /* tiles this consumer has taken */\n"
    "        for (int j = FIRST_J; (int)blockIdx.x + j * (int)gridDim.x < NTILES; j += J_STEP, mine++) {\n"
    "            int m0, n0, z;\n"
    "            tile_of((int)blockIdx.x + j * (int)gridDim.x, m0, n0, z);\n"
    "#if BATCH > 1\n"
    "            float *const C = C0 + (size_t)z * STRIDE_C;\n"
    "#if HAS_BETA\n"
    "            const float *const Cin = Cin0 + (size_t)z * STRIDE_C;\n"
    "#endif\n"
    "#else\n"
    "            float *const C = C0;\n"
    "            (void)z;\n"
    "#endif\n"
    "#if PERSIST == 2\n"
    "            if (j > 0) /* the other consumer's main loop of tile j - 1 is over: our waits come after its */\n"
    "                mbar_wait(TURN(wg - 1), (mine - (wg == 1)) & 1);\n"
    "#else\n"
    "            (void)mine;\n"
    "#endif\n";

const char cut_wgmma_persist_mid[] =
    "#if WAITD == 1\n"
    "            if (lane == 0)\n"
    "                RELEASE(QS(KT - 1) % ST); /* the loop's last stage, which the producer waits for */\n"
    "#endif\n";

const char cut_wgmma_persist_end[] =
    "        }\n"
    "    }\n"
    "}\n";
