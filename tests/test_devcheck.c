/* Tests of the protocol's device-side comparisons (src/measure/devcheck.c): the kernels compile with NVRTC for
 * sm_90 without spills, and under the host emulator they agree with the host's comparisons they stand in for:
 *   cut_dc_diff: the number of differing 32-bit words and the hash of the second buffer (cut_dc_hash_host), for
 *     lengths that are not a multiple of a word;
 *   cut_dc_cmp_*: for f32, f64, f16 and bf16, with the CLOSE rule exactly cut_work_compare's count of bad elements
 *     and its largest error (NaN and Inf in the output and the reference, matched and not), with the FROBENIUS rule
 *     its verdict and relative error; and the reference's hash.
 * Each half skips on its own (NVRTC missing; no host C++ compiler). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/half.h"
#include "cutune/util.h"
#include "cutune/work.h"
#include "measure/devcheck.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *work_dir;
static int have_emu;

static void test_nvrtc_compiles(void **state)
{
    (void)state;
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0)
        skip();
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.sm_major = 9;
    o.sm_minor = 0;
    o.nthreads = 1;
    o.extra_opts = "--fmad=false";
    cut_compiled bin;
    assert_int_equal(cut_compile_one(cut_dc_source, "devcheck.cu", &o, &bin, &e), 0);
    if (!bin.ok)
        fail_msg("NVRTC: %s", bin.log);
    assert_true(bin.cubin_size > 0);
    assert_true(bin.spill_stores <= 0 && bin.spill_loads <= 0);
    cut_compiled_free(&bin);
}

static cut_emu_kernel *emu_kernel(const char *entry)
{
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile_call(cut_dc_source, entry, work_dir, &k, &e) != 0)
        fail_msg("compile %s under the emulator: %s", entry, e.msg);
    return k;
}

/* A launch as cut_dc's (a grid-stride grid of at most blocks blocks). */
static void emu_launch(cut_emu_kernel *k, uint64_t units, unsigned max_blocks, void **argv)
{
    const uint64_t want = (units + CUT_DC_THREADS - 1) / CUT_DC_THREADS;
    const unsigned blocks = (unsigned)(want < 1 ? 1 : want > max_blocks ? max_blocks : want);
    const unsigned grid[3] = {blocks, 1, 1}, block[3] = {CUT_DC_THREADS, 1, 1};
    cut_err e = {{0}};
    if (cut_emu_launch_argv(k, grid, block, argv, &e) != 0)
        fail_msg("launch: %s", e.msg);
}

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void test_emu_diff(void **state)
{
    (void)state;
    if (!have_emu)
        skip();
    cut_emu_kernel *k = emu_kernel(CUT_DC_DIFF);
    static const size_t lens[] = {0, 1, 3, 4, 5, 1023, 4097, 70001};
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        const size_t n = lens[t];
        unsigned char *a = malloc(n + 1), *b = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = (unsigned char)next_u32();
        size_t changed = 0;
        for (size_t i = 0; i < n; i += 1 + next_u32() % 997) /* some bytes changed */
            b[i] ^= 0x5a;
        for (size_t j = 0; j < (n + 3) / 4; j++) {
            int d = 0;
            for (size_t q = j * 4; q < j * 4 + 4 && q < n; q++)
                d |= a[q] != b[q];
            changed += (size_t)d;
        }
        for (int unit = 0; unit < 2; unit++) { /* against itself, then against the changed copy */
            uint64_t out[CUT_DC_OUT_WORDS] = {0}, bytes = n;
            const unsigned char *pa = a, *pb = unit ? b : a;
            uint64_t *po = out;
            void *argv[] = {&pa, &pb, &bytes, &po};
            emu_launch(k, (n + 3) / 4, 3, argv);
            assert_int_equal(out[CUT_DC_BAD], unit ? changed : 0);
            assert_true(out[CUT_DC_HASH] == cut_dc_hash_host(pb, n));
        }
        if (n >= 8) /* the hash sees the position of a word, not only its value */
            assert_true(cut_dc_hash_host(a, 8) != cut_dc_hash_host((const unsigned char[]){a[4], a[5], a[6], a[7],
                                                                                           a[0], a[1], a[2], a[3]},
                                                                   8) ||
                        !memcmp(a, a + 4, 4));
        free(a);
        free(b);
    }
    cut_emu_kernel_free(k);
}

static void put(cut_elem dt, void *p, size_t i, double v)
{
    switch (dt) {
    case CUT_EL_F32: ((float *)p)[i] = (float)v; break;
    case CUT_EL_F64: ((double *)p)[i] = v; break;
    case CUT_EL_F16: ((uint16_t *)p)[i] = cut_f32_to_f16((float)v); break;
    default: ((uint16_t *)p)[i] = cut_f32_to_bf16((float)v); break;
    }
}

/* One dtype: a reference, an output near it, and with plant the output's cheats and the reference's non-finite
 * values; the device's answer against cut_work_compare's. */
static void compare_case(cut_emu_kernel *k, cut_elem dt, cut_check_rule rule, int plant, size_t n)
{
    const size_t es = cut_elem_size(dt);
    unsigned char *got = calloc(n, es), *ref = calloc(n, es);
    const double atol = 1e-3, rtol = 1e-2;
    for (size_t i = 0; i < n; i++) {
        const double r = ((double)(next_u32() % 20001) - 10000.0) / 1000.0;
        put(dt, ref, i, r);
        put(dt, got, i, cut_elem_get(dt, ref, i) + ((double)(next_u32() % 201) - 100.0) * 1e-6);
    }
    if (plant) {
        put(dt, got, 3, cut_elem_get(dt, ref, 3) + 5.0);   /* out of tolerance */
        put(dt, got, n / 2, NAN);                        /* NaN in the output */
        put(dt, ref, 7, INFINITY);                        /* Inf matched */
        put(dt, got, 7, INFINITY);
        put(dt, ref, 9, -INFINITY);                       /* Inf not matched */
        put(dt, got, 9, INFINITY);
        put(dt, ref, 11, NAN);                            /* NaN matched */
        put(dt, got, 11, NAN);
        put(dt, ref, 13, NAN);                            /* NaN not matched */
        put(dt, got, 13, 1.0);
        put(dt, got, n - 1, INFINITY);                    /* Inf in the output */
    }
    cut_work_buf b = {.name = "y", .is_output = 1, .dtype = dt, .elems = n};
    double host_err = 0;
    char msg[256];
    const size_t host_bad = cut_work_compare(&b, got, ref, rule, atol, rtol, &host_err, msg, sizeof msg);

    uint64_t o[CUT_DC_OUT_WORDS] = {0}, un = n;
    const void *pg = got, *pr = ref;
    double a = atol, rr = rtol;
    int frob = rule == CUT_CHECK_FROBENIUS;
    uint64_t *po = o;
    void *argv[] = {&pg, &pr, &un, &a, &rr, &frob, &po};
    emu_launch(k, n, 5, argv);
    assert_true(o[CUT_DC_HASH] == cut_dc_hash_host(ref, n * es));
    if (frob) {
        double num, den;
        memcpy(&num, &o[CUT_DC_NUM], 8);
        memcpy(&den, &o[CUT_DC_DEN], 8);
        const double rel = isfinite(num) ? (den > 0 ? sqrt(num / den) : sqrt(num)) : INFINITY;
        assert_int_equal(!(rel <= rtol), host_bad != 0);
        if (isfinite(host_err))
            assert_true(fabs(rel - host_err) <= 1e-9 * host_err + 1e-300);
        else
            assert_false(isfinite(rel));
    } else {
        double maxe;
        memcpy(&maxe, &o[CUT_DC_MAXE], 8);
        assert_int_equal(o[CUT_DC_BAD], host_bad);
        assert_true(maxe == host_err);
    }
    if (plant && !frob)
        assert_int_equal(host_bad, 5); /* the five planted mismatches, no more: the test means what it says */
    if (!plant)
        assert_int_equal(host_bad, 0);
    free(got);
    free(ref);
}

static void test_emu_compare(void **state)
{
    (void)state;
    if (!have_emu)
        skip();
    static const cut_elem dts[] = {CUT_EL_F32, CUT_EL_F64, CUT_EL_F16, CUT_EL_BF16};
    static const char *const entries[] = {CUT_DC_CMP_F32, CUT_DC_CMP_F64, CUT_DC_CMP_F16, CUT_DC_CMP_BF16};
    for (int d = 0; d < 4; d++) {
        cut_emu_kernel *k = emu_kernel(entries[d]);
        for (int rule = 0; rule < 2; rule++)
            for (int plant = 0; plant < 2; plant++)
                compare_case(k, dts[d], rule ? CUT_CHECK_FROBENIUS : CUT_CHECK_CLOSE, plant, 3001);
        cut_emu_kernel_free(k);
    }
}

int main(void)
{
    if (!(work_dir = tu_tmpdir("test_devcheck")))
        return 1;
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    have_emu = cut_emu_compile("extern \"C\" void probe() {}\n", "probe", work_dir, &k, &e) == 0;
    if (!have_emu)
        printf("the emulator half skips: the host C++ compiler does not work: %s\n", e.msg);
    cut_emu_kernel_free(k);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvrtc_compiles),
        cmocka_unit_test(test_emu_diff),
        cmocka_unit_test(test_emu_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
