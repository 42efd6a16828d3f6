/* Hopper wgmma GEMM template (issue 6): where it applies, the refusals (alignment, registers, shared memory), the
 * TMA maps it asks the worker for, tf32 NN's fragment loads (issue 21: conflict-free, where the TMA put each
 * element) and tf32 TN's copy of B (every element once, conflict-free, K-major where wgmma reads it), tf32 TN/TT's
 * maps and refusals, and random schedules compiled with NVRTC for sm_90a (and refused by plain sm_90, which has no
 * wgmma),
 * none spilling or serialized by ptxas. The kernels run on an H200 (test_gpu_gemm_tc and bench/) and, their PTX
 * emulated, on the host (test_gemm_wgmma_emu). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "ops/gemm/wgmma_text.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bn mi nc st waitd gm cl */
static cut_sched mks(int bn, int mi, int nc, int st, int waitd, int gm, int cl)
{
    cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {bn, mi, nc, st, waitd, gm, cl}};
    return s;
}

static cut_gemm mkg(int m, int n, int k, cut_gemm_layout l, cut_dtype dt)
{
    return (cut_gemm){.m = m, .n = n, .k = k, .layout = l, .dtype = dt};
}

static void test_applies(void **state)
{
    (void)state;
    const cut_gemm_template *t = cut_gemm_template_get(CUT_GEMM_TPL_WGMMA);
    assert_non_null(t);
    assert_string_equal(t->name, "wgmma");
    assert_int_equal(cut_gemm_template_find("wgmma"), CUT_GEMM_TPL_WGMMA);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e;
    cut_gemm g = mkg(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16);
    assert_int_equal(t->applies(&g, &d, &e), 1);
    g.dtype = CUT_DT_BF16;
    assert_int_equal(t->applies(&g, &d, &e), 1);
    g.dtype = CUT_DT_TF32; /* tf32 NN: computed as C^T = B^T A^T, wgmma's A from registers */
    assert_int_equal(t->applies(&g, &d, &e), 1);
    g.layout = CUT_GEMM_NT;
    assert_int_equal(t->applies(&g, &d, &e), 1);
    g.dtype = CUT_DT_FP32;
    assert_int_equal(t->applies(&g, &d, &e), 0);
    assert_non_null(strstr(e.msg, "fp32"));
    /* A stored KxM (TN, TT): MN-major in shared memory for fp16/bf16; tf32 (no MN-major wgmma operand) with A's
     * fragments from registers, TN's B copied K-major by the consumers */
    for (int l = CUT_GEMM_TN; l <= CUT_GEMM_TT; l++) {
        const cut_gemm a = mkg(512, 512, 512, (cut_gemm_layout)l, CUT_DT_FP16);
        assert_int_equal(t->applies(&a, &d, &e), 1);
        const cut_gemm b = mkg(512, 512, 512, (cut_gemm_layout)l, CUT_DT_BF16);
        assert_int_equal(t->applies(&b, &d, &e), 1);
        const cut_gemm f = mkg(512, 512, 512, (cut_gemm_layout)l, CUT_DT_TF32);
        assert_int_equal(t->applies(&f, &d, &e), 1);
    }
    g.dtype = CUT_DT_FP16;
    d.sm_major = 8;
    assert_int_equal(t->applies(&g, &d, &e), 0);
    assert_non_null(strstr(e.msg, "sm_80"));
}

/* check() refuses s naming words; codegen too unless the rule is only about speed (gen_ok). */
static void expect_refusal_x(const cut_gemm *g, cut_sched s, const char *words, int gen_ok)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e;
    if (cut_gemm_sched_check(g, &s, &d, &e) == 0)
        fail_msg("expected a refusal naming \"%s\"", words);
    if (!strstr(e.msg, words))
        fail_msg("refusal \"%s\" does not name \"%s\"", e.msg, words);
    cut_kernel_src ks;
    assert_int_equal(cut_codegen_gemm(g, &s, &ks, &e), gen_ok ? 0 : -1);
    cut_kernel_src_free(&ks);
}
static void expect_refusal(const cut_gemm *g, cut_sched s, const char *words) { expect_refusal_x(g, s, words, 0); }

static void test_refusals(void **state)
{
    (void)state;
    const cut_gemm g = mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e;
    assert_int_equal(cut_gemm_sched_check(&g, &(cut_sched){0}, &d, &e), -1); /* tpl 0 is simt: fp32 only */
    const cut_sched ok = mks(256, 1, 2, 4, 1, 8, 1);
    assert_int_equal(cut_gemm_sched_check(&g, &ok, &d, &e), 0);
    expect_refusal(&g, mks(256, 2, 2, 4, 1, 8, 1), "accumulators");
    expect_refusal(&g, mks(192, 1, 2, 6, 1, 8, 1), "shared memory");
    expect_refusal(&g, mks(96, 1, 2, 4, 1, 8, 1), "off its list");
    expect_refusal(&g, mks(256, 1, 2, 4, 1, 8, 4), "off its list");
    /* TMA rows must be 16-byte aligned: K = 1001 halves is not; an NN B row of N = 1001 halves neither */
    expect_refusal(&(cut_gemm){1000, 1000, 1001, CUT_GEMM_NT, CUT_DT_FP16}, ok, "K=1001");
    expect_refusal(&(cut_gemm){1000, 1001, 1000, CUT_GEMM_NN, CUT_DT_FP16}, ok, "N=1001");
    /* A stored KxM (TN): its rows are M long; TN's B rows are N long as NN's */
    expect_refusal(&(cut_gemm){1001, 1000, 1000, CUT_GEMM_TN, CUT_DT_FP16}, ok, "M=1001");
    expect_refusal(&(cut_gemm){1000, 1001, 1000, CUT_GEMM_TN, CUT_DT_FP16}, ok, "N=1001");
    /* tails themselves are fine: 1000 is not a multiple of any tile */
    assert_int_equal(cut_gemm_sched_check(&(cut_gemm){1000, 1000, 1000, CUT_GEMM_NN, CUT_DT_FP16}, &ok, &d, &e), 0);
    expect_refusal_x(&(cut_gemm){40, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16}, ok, "M=40", 1);
    /* tf32 NN keeps its A fragments in registers too: 128 accumulators and two sets of 32 are over the budget */
    const cut_gemm tn = mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_TF32);
    expect_refusal(&tn, mks(128, 2, 1, 4, 1, 8, 1), "A fragments");
    assert_int_equal(cut_gemm_sched_check(&tn, &(cut_sched){CUT_GEMM_TPL_WGMMA, {128, 2, 1, 4, 0, 8, 1}}, &d, &e), 0);
    /* so do tf32 TT and TN; TN's consumers keep WAITD + 2 K-major copies of B each in shared memory: 4 stages of
     * (128 + 256) rows and 2 x 3 copies of 256 rows are over the budget, 2 stages and one consumer are not; TN's and
     * TT's A rows are M long: M = 1002 x 4 bytes is not a multiple of 16 */
    expect_refusal(&(cut_gemm){4096, 4096, 4096, CUT_GEMM_TT, CUT_DT_TF32}, mks(128, 2, 1, 4, 1, 8, 1), "A fragments");
    const cut_gemm tfn = mkg(4096, 4096, 4096, CUT_GEMM_TN, CUT_DT_TF32);
    expect_refusal(&tfn, mks(256, 1, 2, 4, 1, 8, 1), "copies of B");
    assert_int_equal(cut_gemm_sched_check(&tfn, &(cut_sched){CUT_GEMM_TPL_WGMMA, {256, 1, 1, 2, 1, 8, 1}}, &d, &e), 0);
    for (int l = CUT_GEMM_TN; l <= CUT_GEMM_TT; l++)
        expect_refusal(&(cut_gemm){1002, 1000, 1000, (cut_gemm_layout)l, CUT_DT_TF32}, ok, "M=1002");
}

/* The maps: A as K x M boxes of 128 bytes x BM rows; B K-major (NT) or MN-major in 64-column boxes (NN). */
static void test_tma_maps(void **state)
{
    (void)state;
    cut_err e;
    cut_kernel_src ks;
    const cut_gemm nn = mkg(1000, 2048, 3072, CUT_GEMM_NN, CUT_DT_BF16);
    assert_int_equal(cut_codegen_gemm(&nn, &(cut_sched){CUT_GEMM_TPL_WGMMA, {128, 2, 1, 4, 1, 8, 1}}, &ks, &e), 0);
    assert_int_equal(ks.ntma, 2);
    assert_int_equal(ks.arch_a, 1);
    assert_int_equal(ks.uses_inline_ptx, 0); /* its PTX has a host version under CUT_EMU */
    assert_int_equal(ks.block[0], 256);
    assert_int_equal(ks.grid[0], 8 * 16); /* ceil(1000/128) x 2048/128 */
    assert_true(ks.tma[0].operand == 0 && ks.tma[0].elem_bytes == 2 && ks.tma[0].dims[0] == 3072 &&
                ks.tma[0].dims[1] == 1000 && ks.tma[0].row_bytes == 6144 && ks.tma[0].box[0] == 64 &&
                ks.tma[0].box[1] == 128 && ks.tma[0].swizzle == 128);
    assert_true(ks.tma[1].operand == 1 && ks.tma[1].dims[0] == 2048 && ks.tma[1].dims[1] == 3072 &&
                ks.tma[1].row_bytes == 4096 && ks.tma[1].box[0] == 64 && ks.tma[1].box[1] == 64);
    /* 4 stages of (128 + 128) rows of 128 bytes, 1024 bytes of alignment slack, 8 barriers */
    assert_int_equal(ks.smem_dynamic, 1024 + 4 * 256 * 128 + 64);
    assert_non_null(strstr(ks.src, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
    cut_kernel_src_free(&ks);
    const cut_gemm nt = mkg(7384, 7384, 7384, CUT_GEMM_NT, CUT_DT_TF32);
    assert_int_equal(cut_codegen_gemm(&nt, &(cut_sched){CUT_GEMM_TPL_WGMMA, {256, 1, 2, 4, 1, 8, 2}}, &ks, &e), 0);
    assert_true(ks.tma[0].elem_bytes == 4 && ks.tma[0].box[0] == 32 && ks.tma[1].dims[0] == 7384 &&
                ks.tma[1].dims[1] == 7384 && ks.tma[1].box[0] == 32 && ks.tma[1].box[1] == 128 /* half: multicast */);
    assert_int_equal(ks.grid[0] % 2, 0); /* whole clusters */
    assert_true(ks.tma[0].planes == 0 && ks.tma[1].planes == 0 && ks.grid[1] == 1 && ks.extra_bufs == 0);
    assert_non_null(strstr(ks.src, "__cluster_dims__(2, 1, 1)"));
    assert_non_null(strstr(ks.src, "m64n256k8.f32.tf32.tf32"));
    cut_kernel_src_free(&ks);
    /* tf32 NN as C^T = B^T A^T: bn=192 is wgmma's n along M, 64 x mi x nc = 128 columns of N; B in boxes of 32 */
    const cut_gemm tn = mkg(1000, 520, 264, CUT_GEMM_NN, CUT_DT_TF32);
    assert_int_equal(cut_codegen_gemm(&tn, &(cut_sched){CUT_GEMM_TPL_WGMMA, {192, 1, 2, 3, 0, 8, 1}}, &ks, &e), 0);
    assert_int_equal(ks.grid[0], 6 * 5); /* ceil(1000/192) x ceil(520/128) */
    assert_int_equal(ks.block[0], 384);
    assert_true(ks.tma[0].dims[0] == 264 && ks.tma[0].dims[1] == 1000 && ks.tma[0].box[0] == 32 &&
                ks.tma[0].box[1] == 192);
    assert_true(ks.tma[1].dims[0] == 520 && ks.tma[1].dims[1] == 264 && ks.tma[1].row_bytes == 2080 &&
                ks.tma[1].box[0] == 32 && ks.tma[1].box[1] == 32);
    assert_int_equal(ks.smem_dynamic, 1024 + 3 * (192 + 128) * 128 + 48);
    assert_non_null(strstr(ks.src, "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {"));
    assert_non_null(strstr(ks.src, "}, {%96, %97, %98, %99}, %100, p, 1, 1;")); /* A: four registers */
    assert_non_null(strstr(ks.src, "#define SWAP 1"));
    cut_kernel_src_free(&ks);
    /* issue 21's batched TN: 3-D maps, a plane a matrix (A stored K x M: MN-major boxes of 64 M-columns x BK rows),
     * blockIdx.y the batch, Cin (beta != 0) after C */
    cut_gemm bt = mkg(512, 512, 512, CUT_GEMM_TN, CUT_DT_FP16);
    cut_gemm_set_extras(&bt, 32, 0.5, 0.25);
    assert_int_equal(cut_codegen_gemm(&bt, &(cut_sched){CUT_GEMM_TPL_WGMMA, {128, 1, 2, 4, 1, 8, 1}}, &ks, &e), 0);
    assert_true(ks.tma[0].dims[0] == 512 && ks.tma[0].dims[1] == 512 && ks.tma[0].row_bytes == 1024 &&
                ks.tma[0].box[0] == 64 && ks.tma[0].box[1] == 64 && ks.tma[0].planes == 32 &&
                ks.tma[0].plane_bytes == 512 * 512 * 2);
    assert_true(ks.tma[1].box[0] == 64 && ks.tma[1].box[1] == 64 && ks.tma[1].planes == 32 &&
                ks.tma[1].plane_bytes == 512 * 512 * 2);
    assert_int_equal(ks.grid[0], 4 * 4);
    assert_int_equal(ks.grid[1], 32);
    assert_int_equal(ks.extra_bufs, 1);
    assert_non_null(strstr(ks.src, "tma_load3(SA(s) + j * BK * 128, &tmA, m0 + 64 * j, kt * BK, z, FULL(s))"));
    assert_non_null(strstr(ks.src, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
    assert_non_null(strstr(ks.src, "p, 1, 1, 1, 1;")); /* A and B both MN-major: both transpose flags */
    cut_kernel_src_free(&ks);
    /* tf32 TT: A (stored K x M) in MN-major boxes of 32 M-columns x 32 k rows, its fragments from registers; B NT's.
     * tf32 TN: B in MN-major boxes of 32 columns too (NN's), copied K-major by each of the 2 consumers into WAITD + 2
     * = 3 buffers of BN rows of 128 bytes, one more barrier each */
    for (int l = CUT_GEMM_TN; l <= CUT_GEMM_TT; l++) {
        const cut_gemm ta = mkg(1000, 520, 264, (cut_gemm_layout)l, CUT_DT_TF32);
        assert_int_equal(cut_codegen_gemm(&ta, &(cut_sched){CUT_GEMM_TPL_WGMMA, {64, 1, 2, 2, 1, 8, 1}}, &ks, &e), 0);
        assert_int_equal(ks.grid[0], 8 * 9); /* ceil(1000/128) x ceil(520/64): no swap */
        assert_true(ks.tma[0].dims[0] == 1000 && ks.tma[0].dims[1] == 264 && ks.tma[0].row_bytes == 4000 &&
                    ks.tma[0].box[0] == 32 && ks.tma[0].box[1] == 32);
        assert_non_null(strstr(ks.src, "for (int j = 0; j < BM / 32; j++) tma_load(SA(s) + j * BK * 128, &tmA, m0 + "
                                       "32 * j, kt * BK, FULL(s));"));
        assert_non_null(strstr(ks.src, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"));
        assert_non_null(strstr(ks.src, "}, {%32, %33, %34, %35}, %36, p, 1, 1;")); /* A: four registers */
        assert_null(strstr(ks.src, "#define SWAP 1"));
        if (l == CUT_GEMM_TT) {
            assert_true(ks.tma[1].dims[0] == 264 && ks.tma[1].box[0] == 32 && ks.tma[1].box[1] == 64);
            assert_int_equal(ks.smem_dynamic, 1024 + 2 * (128 + 64) * 128 + 32);
            assert_null(strstr(ks.src, "#define BCOPY 1"));
        } else {
            assert_true(ks.tma[1].dims[0] == 520 && ks.tma[1].box[0] == 32 && ks.tma[1].box[1] == 32);
            assert_int_equal(ks.smem_dynamic, 1024 + 2 * (128 + 64) * 128 + 2 * 3 * 64 * 128 + 32 + 16);
            assert_non_null(strstr(ks.src, "#define BCOPY 1"));
        }
        cut_kernel_src_free(&ks);
    }
}

/* tf32 NN's A fragments, loaded by each consumer thread from B's MN-major boxes: the row permutation covers the m64
 * block once, each address is where the TMA unit's 128-byte swizzle put element (k, n), and each ld.shared of a
 * warp (one register of one k step) touches all 32 banks once: no bank conflict. */
static void test_swap_fragments_conflict_free(void **state)
{
    (void)state;
    int seen[64] = {0};
    for (int w = 0; w < 4; w++)
        for (int g = 0; g < 8; g++)
            for (int h = 0; h < 2; h++) {
                const int n = CUT_WGMMA_NROW(w, g, h);
                assert_true(n >= 0 && n < 64);
                seen[n]++;
            }
    for (int n = 0; n < 64; n++)
        assert_int_equal(seen[n], 1);
    for (int blk = 0; blk < 4; blk++) /* the consumer's m64 blocks: columns 64 blk .. */
        for (int w = 0; w < 4; w++)
            for (int kk = 0; kk < 4; kk++)
                for (int r = 0; r < 4; r++) {
                    unsigned banks = 0;
                    for (int lane = 0; lane < 32; lane++) {
                        const int n = 64 * blk + CUT_WGMMA_NROW(w, lane / 4, r & 1);
                        const int k = kk * 8 + lane % 4 + 4 * (r >> 1);
                        const unsigned a = (unsigned)CUT_WGMMA_SWAP_LDS(n, k);
                        const unsigned logical = (unsigned)((n / 32) * 4096 + k * 128 + (n % 32) * 4);
                        assert_int_equal(a, logical ^ (((logical >> 7) & 7u) << 4)); /* the TMA's swizzle */
                        banks |= 1u << (a / 4 % 32);
                    }
                    if (banks != 0xffffffffu)
                        fail_msg("warp %d k step %d register %d: banks %08x", w, kk, r, banks);
                }
}

/* tf32 TN's copy of B's MN-major tile into a consumer's K-major buffer: over a warp's 4 steps every element of its
 * 32 columns x 4 rows once, each load where the TMA's swizzle put element (k, n), each store where wgmma's
 * K-major descriptor with the 128-byte swizzle reads it, and each step's 32 loads and 32 stores on 32 banks. */
static void test_tn_copy_conflict_free(void **state)
{
    (void)state;
    for (int n0 = 0; n0 < 256; n0 += 32)
        for (int k0 = 0; k0 < 32; k0 += 4) {
            int seen[32][4] = {{0}};
            for (int q = 0; q < 4; q++) {
                unsigned lbanks = 0, sbanks = 0;
                for (int lane = 0; lane < 32; lane++) {
                    const int n = n0 + lane, k = k0 + CUT_WGMMA_TRANS_K(lane, q);
                    assert_true(k >= k0 && k < k0 + 4);
                    seen[lane][k - k0]++;
                    const unsigned a = (unsigned)CUT_WGMMA_SWAP_LDS(n, k), st = (unsigned)CUT_WGMMA_TRANS_STS(n, k);
                    const unsigned la = (unsigned)((n / 32) * 4096 + k * 128 + (n % 32) * 4);
                    const unsigned ls = (unsigned)(n * 128 + k * 4); /* row n of 128 bytes, k along it */
                    assert_int_equal(a, la ^ (((la >> 7) & 7u) << 4));
                    assert_int_equal(st, ls ^ (((ls >> 7) & 7u) << 4));
                    lbanks |= 1u << (a / 4 % 32), sbanks |= 1u << (st / 4 % 32);
                }
                if (lbanks != 0xffffffffu || sbanks != 0xffffffffu)
                    fail_msg("n0 %d k0 %d step %d: load banks %08x, store banks %08x", n0, k0, q, lbanks, sbanks);
            }
            for (int lane = 0; lane < 32; lane++)
                for (int k = 0; k < 4; k++)
                    assert_int_equal(seen[lane][k], 1);
        }
}

/* Schedules ss[i] of gs[i] compiled for sm_90a in one batch: all compile, none spills or has its wgmmas serialized
 * by ptxas, each holds the TMA, mbarrier and wgmma instructions (want too, when not NULL). Prints the register range
 * under name; with check_plain, plain sm_90 (no wgmma, no setmaxnreg) refuses the first one and NVRTC says why. */
static void compile_scheds(const char *name, const cut_gemm *gs, const cut_sched *ss, int count, const char *want,
                           int check_plain)
{
    cut_err e;
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    cut_compiled *bins = calloc((size_t)count, sizeof *bins);
    const char **srcs = calloc((size_t)count, sizeof *srcs);
    for (int i = 0; i < count; i++) {
        assert_int_equal(cut_codegen_gemm(&gs[i], &ss[i], &ks[i], &e), 0);
        assert_int_equal(ks[i].arch_a, 1);
        for (int t = 0; t < 2; t++)
            assert_true(ks[i].tma[t].box[0] * (unsigned)ks[i].tma[t].elem_bytes <= 128 && ks[i].tma[t].box[1] <= 256 &&
                        ks[i].tma[t].row_bytes % 16 == 0);
        assert_non_null(strstr(ks[i].src, "cp.async.bulk.tensor.2d"));
        assert_non_null(strstr(ks[i].src, "mbarrier.try_wait.parity"));
        assert_non_null(strstr(ks[i].src, "setmaxnreg.inc"));
        if (want)
            assert_non_null(strstr(ks[i].src, want));
        srcs[i] = ks[i].src;
    }
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    co.arch_suffix_a = 1;
    assert_int_equal(cut_compile_batch(srcs, count, &co, bins, &e), 0);
    int failed = 0, rmin = 1 << 30, rmax = 0;
    for (int i = 0; i < count; i++) {
        if (!bins[i].ok) {
            fprintf(stderr, "NVRTC failed:\n%.400s\n%s\n", ks[i].src, bins[i].log);
            failed++;
            continue;
        }
        assert_int_equal(bins[i].spill_stores, 0);
        assert_int_equal(bins[i].spill_loads, 0);
        if (strstr(bins[i].log, "serialized")) /* ptxas put waits in: registers of a wgmma in flight written */
            fail_msg("wgmma serialized:\n%.400s\n%s", ks[i].src, bins[i].log);
        rmin = bins[i].regs < rmin ? bins[i].regs : rmin;
        rmax = bins[i].regs > rmax ? bins[i].regs : rmax;
    }
    printf("  %d %s schedules compiled for sm_90a, %d failed; registers %d..%d, no spills, none serialized\n", count,
           name, failed, rmin, rmax);
    assert_int_equal(failed, 0);
    if (check_plain) { /* plain sm_90 has no wgmma/setmaxnreg: the template must ask for sm_90a */
        cut_compiled plain;
        co.arch_suffix_a = 0;
        assert_int_equal(cut_compile_one(srcs[0], "wgmma.cu", &co, &plain, &e), 0);
        assert_int_equal(plain.ok, 0);
        assert_true(strstr(plain.log, "sm_90a") || strstr(plain.log, "wgmma") || strstr(plain.log, "setmaxnreg"));
        cut_compiled_free(&plain);
    }
    for (int i = 0; i < count; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    free(srcs), free(bins), free(ks);
}

/* count random valid schedules over shapes (in turn), through compile_scheds. */
static void compile_random(const char *name, const cut_gemm *shapes, int nshapes, int count, uint64_t seed,
                           const char *want, int check_plain)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e;
    cut_gemm *gs = calloc((size_t)count, sizeof *gs);
    cut_sched *ss = calloc((size_t)count, sizeof *ss);
    for (int i = 0; i < count; i++) {
        gs[i] = shapes[i % nshapes];
        if (cut_gemm_sched_sample_valid(&gs[i], &d, CUT_GEMM_TPL_WGMMA, &r, &ss[i], 1000, &e) != 0)
            fail_msg("%s", e.msg);
    }
    char what[64];
    snprintf(what, sizeof what, "random %s", name);
    compile_scheds(what, gs, ss, count, want, check_plain);
    free(gs), free(ss);
}

/* Random valid schedules of every dtype/layout the template computes, over shapes with tails. */
static void test_nvrtc_random(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16), mkg(1000, 1000, 1000, CUT_GEMM_NT, CUT_DT_FP16),
        mkg(1024, 2048, 3072, CUT_GEMM_NN, CUT_DT_BF16), mkg(7384, 7384, 7384, CUT_GEMM_NT, CUT_DT_BF16),
        mkg(512, 512, 512, CUT_GEMM_NT, CUT_DT_TF32),    mkg(1024, 1024, 2048, CUT_GEMM_NT, CUT_DT_TF32),
        mkg(4096, 4096, 4096, CUT_GEMM_TN, CUT_DT_FP16), mkg(1000, 1000, 1000, CUT_GEMM_TT, CUT_DT_BF16),
        mkg(7384, 7384, 7384, CUT_GEMM_TN, CUT_DT_BF16), mkg(1024, 2048, 3072, CUT_GEMM_TT, CUT_DT_FP16),
    };
    compile_random("wgmma", shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 20 : 60, 90, NULL, 1);
}

/* Issue 21's extras (batch: 3-D maps; alpha/beta: the epilogue reads Cin) over every layout and dtype, with the
 * issue's benchmark shapes (4096^3 TN fp16, a batch of 32 512^3 fp16). */
static void test_nvrtc_extras(void **state)
{
    (void)state;
    cut_gemm shapes[] = {
        mkg(4096, 4096, 4096, CUT_GEMM_TN, CUT_DT_FP16), mkg(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16),
        mkg(1000, 1000, 1000, CUT_GEMM_TT, CUT_DT_BF16), mkg(1000, 520, 264, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(1024, 1024, 2048, CUT_GEMM_NT, CUT_DT_TF32), mkg(512, 512, 512, CUT_GEMM_TN, CUT_DT_FP16),
    };
    cut_gemm_set_extras(&shapes[1], 32, 1.0, 0.0);
    cut_gemm_set_extras(&shapes[2], 1, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[3], 3, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[4], 2, 1.0, 0.0);
    cut_gemm_set_extras(&shapes[5], 32, 0.5, 0.25);
    compile_random("wgmma extras", shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 12 : 36, 92, NULL, 0);
}

/* Every valid combination of the knobs that shape a tf32 kernel with A's fragments from registers (bn, mi, nc,
 * waitd, cl; the most stages up to 4 that fit) on an odd number of k tiles, at least min of them. */
static void compile_every_shape(const char *name, cut_gemm_layout l, int min)
{
    {
        const cut_gemm g = mkg(1000, 520, 264, l, CUT_DT_TF32);
        cut_devlimits d;
        cut_devlimits_sm90(&d);
        cut_gemm gs[64];
        cut_sched ss[64];
        int n = 0;
        static const int bns[] = {64, 128, 192, 256};
        for (int b = 0; b < 4; b++)
            for (int mi = 1; mi <= 2; mi++)
                for (int nc = 1; nc <= 2; nc++)
                    for (int waitd = 0; waitd <= 1; waitd++)
                        for (int cl = 1; cl <= 2; cl++)
                            for (int st = 4; st >= 2; st--) {
                                cut_err e;
                                const cut_sched s = mks(bns[b], mi, nc, st, waitd, 8, cl);
                                if (cut_gemm_sched_check(&g, &s, &d, &e) != 0)
                                    continue;
                                gs[n] = g, ss[n++] = s;
                                break;
                            }
        assert_true(n >= min);
        compile_scheds(name, gs, ss, n, "}, {%", 0);
    }
}

/* tf32 NN (C^T = B^T A^T, A's fragments from registers): random schedules over an even and an odd number of k
 * tiles, one k tile, tails; and (not in the quick pass) every shape of the kernel. */
static void test_nvrtc_tf32_nn(void **state)
{
    (void)state;
    if (!tu_quick())
        compile_every_shape("tf32 NN wgmma (every shape of the kernel)", CUT_GEMM_NN, 30);
    const cut_gemm shapes[] = {
        mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_TF32), mkg(1000, 520, 264, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(7384, 7384, 7384, CUT_GEMM_NN, CUT_DT_TF32), mkg(512, 1024, 24, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(2048, 1000, 1000, CUT_GEMM_NN, CUT_DT_TF32),
    };
    compile_random("tf32 NN wgmma", shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 10 : 30, 91,
                   "}, {%", 0);
}

/* tf32 TT and TN (A's fragments from registers; TN's B copied K-major): random schedules over an even and an odd
 * number of k tiles, one k tile, tails, with extras too; every shape of each kernel (not in the quick pass). TN's
 * copies of B cost shared memory: fewer of its shapes fit. */
static void test_nvrtc_tf32_tn_tt(void **state)
{
    (void)state;
    if (!tu_quick()) {
        compile_every_shape("tf32 TT wgmma (every shape of the kernel)", CUT_GEMM_TT, 30);
        compile_every_shape("tf32 TN wgmma (every shape of the kernel)", CUT_GEMM_TN, 20);
    }
    cut_gemm shapes[] = {
        mkg(4096, 4096, 4096, CUT_GEMM_TT, CUT_DT_TF32), mkg(1000, 520, 264, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(7384, 7384, 7384, CUT_GEMM_TN, CUT_DT_TF32), mkg(512, 1024, 24, CUT_GEMM_TT, CUT_DT_TF32),
        mkg(2048, 1000, 1000, CUT_GEMM_TN, CUT_DT_TF32), mkg(1000, 1000, 1000, CUT_GEMM_TT, CUT_DT_TF32),
        mkg(512, 512, 512, CUT_GEMM_TN, CUT_DT_TF32),
    };
    cut_gemm_set_extras(&shapes[5], 3, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[6], 32, 1.0, 0.5);
    compile_random("tf32 TN/TT wgmma", shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 14 : 35, 93, "}, {%", 0);
}

static void test_mutation_stays_mostly_valid(void **state)
{
    (void)state;
    const cut_gemm g = mkg(4096, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP16);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 7);
    cut_err e;
    const cut_gemm_template *t = cut_gemm_template_get(CUT_GEMM_TPL_WGMMA);
    int valid = 0, changed = 0;
    for (int i = 0; i < 400; i++) {
        cut_sched s, m;
        assert_int_equal(cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        m = s;
        t->mutate(&g, &d, &r, &m);
        changed += memcmp(&m, &s, sizeof m) != 0;
        valid += t->check(&g, &m, &d, &e) == 0;
    }
    assert_true(changed > 300);
    assert_true(valid > 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applies),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_tma_maps),
        cmocka_unit_test(test_swap_fragments_conflict_free),
        cmocka_unit_test(test_mutation_stays_mostly_valid),
        cmocka_unit_test(test_nvrtc_random),
        cmocka_unit_test(test_nvrtc_extras),
        cmocka_unit_test(test_nvrtc_tf32_nn),
        cmocka_unit_test(test_tn_copy_conflict_free),
        cmocka_unit_test(test_nvrtc_tf32_tn_tt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
